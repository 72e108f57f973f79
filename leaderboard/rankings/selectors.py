"""The leaderboard of a phase, as a given viewer may see it.

Two views of a board, at separate addresses (``view``):
- the *public* view, whatever the viewer (an organizer gets the same body as
  anyone): a sealed Split III dataset shows its alias and no per-dataset score,
  and an aggregate from which a still-sealed score follows is withheld too
  (``challenges.selectors.aggregates_published``); anonymous teams read
  "Anonymous" except to their own members; a board that is not public is 404;
- the *organizer* view, for the challenge's organizers only: every name and
  every number, with the aggregates the public does not see listed.

Under ``sealed_aggregates: all`` (the default) the public board ranks on the
average over the datasets it shows: ranked on the full average, two rows with the
same visible scores would rank apart, and the order would bound a sealed score.
Under ``isolating`` rows rank on the full ranking average even where the public
does not see it.  A row whose
submission has an ``excluded_reason`` (a disqualified submission among them), or whose team
an organizer disqualified, is shown unranked, with the reason; a team an organizer hid is on no
public board, and unranked in the organizer view (a hidden submission represents its team nowhere:
``board_entry_refresh`` passes it over).

The number of queries is constant whatever the number of teams: one row per
team comes from ``BoardEntry``, and all their scores from one query.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from leaderboard.accounts.models import TeamKind
from leaderboard.accounts.selectors import team_of_user
from leaderboard.challenges.models import (
    Dataset,
    IncompleteRows,
    Phase,
    SealedAggregates,
    SubmissionKind,
)
from leaderboard.challenges.selectors import (
    AGGREGATE_SEALED_NOTE,
    aggregate_applies,
    aggregates_published,
    averages_covered,
    dataset_label,
    datasets_public_order,
    phase_dataset_files,
    phase_has_dataset,
    ranking_scope_get,
    user_is_organizer,
)
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import Suite
from leaderboard.challenges.suites.columns import phase_aggregate_columns, turn_columns
from leaderboard.core.errors import NotFound
from leaderboard.judging.results import HumanScore, phase_human_scores
from leaderboard.rankings.board_significance import METHOD as SIGNIFICANCE_METHOD
from leaderboard.rankings.board_significance import (
    Significance,
    SignificanceInputs,
    board_significance_get,
    significance_inputs,
)
from leaderboard.submissions.models import BoardEntry, Score, Status
from leaderboard.submissions.selectors import verdict_sentence
from scoring.dialogs import DIALOG_FORMATS, Mode, best_reachable_of
from scoring.io import load_json
from scoring.ranking import rank_rows

Viewer = AbstractBaseUser | AnonymousUser

PUBLIC = "public"
ORGANIZER = "organizer"
DATASET_SEALED_NOTE = "sealed until the organizers reveal this dataset"
WITHHELD_SIGNIFICANCE = "withheld: the ranking average is sealed on some rows, and these would bound it"
ORGANIZER_VIEW_NOT_FOUND = "No such board, or not one you may see."
# What an unknown public board address says (the words of Django's get_object_or_404, as before).
PHASE_NOT_FOUND = "No Phase matches the given query."


@dataclass(frozen=True)
class BoardColumn:
    key: str
    label: str
    group: str
    decimals: int = 2
    is_primary: bool = False
    # The whole column is withheld (a sealed dataset's scores); ``note`` says why.
    sealed: bool = False
    note: str = ""


@dataclass
class BoardRow:
    rank: int | None
    tied: bool
    team_id: int
    team_name: str
    affiliation: str
    is_baseline: bool
    is_anonymous: bool
    is_own: bool
    submission_id: int
    status: str
    failure_reason: str
    submitted_at: Any
    values: dict[str, float | None] = field(default_factory=dict)
    # A published result's publication day (Submission.published_on): its date on the board.
    published_on: Any = None
    # Cells withheld in a shown column: aggregates from which a sealed score would follow.
    sealed_keys: set[str] = field(default_factory=set)
    # What the row ranks on; never shown, since it may be a withheld aggregate.
    rank_value: float | None = None
    # Shown unranked with this reason (Submission.excluded_reason, or under "incomplete:
    # unranked" the datasets the row did not answer).
    excluded_reason: str = ""
    # "2 of 3 datasets" when the row answered only some of the ranked datasets ("" when all).
    coverage: str = ""
    # The system's human score in the phase's latest published judging round (None: not judged, or
    # no round published).
    human: HumanScore | None = None


@dataclass
class Board:
    phase: Phase
    columns: list[BoardColumn]
    rows: list[BoardRow]
    primary_key: str
    view: str = PUBLIC
    # For the header: "Macro F1 over Splits II and III".
    ranked_by: str = ""
    # Labels of the aggregates withheld from the public on some row (listed in both views).
    withheld: list[str] = field(default_factory=list)
    # How rows that did not answer every ranked dataset rank (IncompleteRows).
    incomplete: str = IncompleteRows.ZERO
    # What the ranking's bootstrap depends on, and its result (rankings.board_significance).
    significance_inputs: SignificanceInputs | None = None
    significance: Significance = field(default_factory=lambda: Significance(status="none"))
    # The per-dataset metric the ranking averages: its dataset columns get intervals.
    ranked_metric: str = ""
    # What each average shown covers, one sentence per column ("Macro F1: the mean of F1 over ...").
    averages: list[str] = field(default_factory=list)
    # The published judging round the Human column comes from (None: no column).
    human_round_id: int | None = None

    @property
    def has_incomplete(self) -> bool:
        return bool(self.coverage_example)

    @property
    def coverage_example(self) -> str:
        """A coverage this board shows ("1 of 2 datasets"), for the header's explanation; "" if none."""
        return next((row.coverage for row in self.rows if row.coverage), "")

    @property
    def ranks_on_shown(self) -> bool:
        """Ranked on the average over the datasets shown (``sealed_aggregates: all``)."""
        return self.primary_key.startswith("shown:")

    @property
    def ranks_on_withheld(self) -> bool:
        """The rows are ordered by an average that is sealed on some of them."""
        return any(self.primary_key in row.sealed_keys for row in self.rows)

    @property
    def ranking_line(self) -> str:
        """What the rows rank on, in one sentence: the board page's header and the API's
        ``ranking_note`` say the same."""
        if self.ranks_on_shown:
            how = (": sealed datasets are left out of the average until the organizers reveal them "
                   "(their scores must not follow from it, nor from the order of the rows)")
        elif self.ranks_on_withheld:
            how = ", which orders the rows even where its value is sealed"
        else:
            how = ""
        return f"Ranked by {self.ranked_by}{how}; equal scores share a rank."

    @property
    def has_excluded(self) -> bool:
        return any(row.excluded_reason for row in self.rows)

    @property
    def has_published(self) -> bool:
        """Some row is a published result dated by its publication (the header says so)."""
        return any(row.published_on is not None for row in self.rows)

    @cached_property  # asked once per row while a page is rendered
    def significance_withheld(self) -> bool:
        """Outside the organizer view, no interval, p-value, rank group or rank range is shown when
        some ranked row's ranking average is withheld: every p-value compares with the leader, and
        groups and ranges set rows against each other, so together they would bound the withheld
        average (and the sealed score it would give away)."""
        return self.view != ORGANIZER and any(
            row.rank is not None and self.primary_key in row.sealed_keys for row in self.rows)


class BoardNotVisible(Exception):
    pass


def board_datasets(*, phase: Phase) -> list[Dataset]:
    """Datasets that have this phase's portion, in the organizer's order."""
    return [ds for ds in _challenge_datasets(phase) if phase_has_dataset(phase, ds)]


def board_phases(*, phase: Phase, view: str = PUBLIC) -> list[Phase]:
    """The phases whose boards a board page links to, by name: in the public view those whose
    board is public, in the organizer view every phase of the challenge.

    An evaluation campaign's board is separate: the task's boards link to the task's phases only (a
    campaign added later changes none of their pages), a campaign's to its source and the other
    campaigns; the challenge page lists both."""
    phases = Phase.objects.filter(challenge_id=phase.challenge_id).order_by("order", "opens_at", "pk")
    phases = phases if view == ORGANIZER else phases.filter(board_public=True)
    if not phase.is_campaign:
        return [p for p in phases if not p.is_campaign]
    return [p for p in phases if p.is_campaign or p.slug == phase.campaign.get("of")]


def _challenge_datasets(phase: Phase) -> list[Dataset]:
    return list(Dataset.objects.filter(challenge_id=phase.challenge_id).order_by("order", "slug"))


def board_get(*, slug: str, phase_slug: str, viewer: Viewer, view: str = PUBLIC) -> Board:
    """The board at its address; ``NotFound`` (a 404 page) for an unknown phase, for a non-public challenge or board
    in the public view, and for anyone but the organizers in the organizer view (the
    existence of what they may not see is not confirmed either)."""
    phases = Phase.objects.select_related("challenge").filter(challenge__slug=slug, slug=phase_slug)
    if view == PUBLIC:
        phase = phases.filter(challenge__is_public=True).first()
        if phase is None:
            raise NotFound(PHASE_NOT_FOUND)
    else:
        # One answer for "no such phase" and "not yours": a non-public challenge stays unconfirmed.
        phase = phases.first()
        if phase is None:
            raise NotFound(ORGANIZER_VIEW_NOT_FOUND)
    try:
        return board_build(phase=phase, viewer=viewer, view=view)
    except BoardNotVisible as exc:
        raise NotFound(ORGANIZER_VIEW_NOT_FOUND if view == ORGANIZER else str(exc)) from None


def board_payload(board: Board) -> dict[str, Any]:
    """The JSON export and the API's answer: the same body."""
    return {
        "challenge": board.phase.challenge.slug,
        "phase": board.phase.slug,
        "view": board.view,
        "ranked_by": board.primary_key.partition(":")[2],
        "ranking": board.ranked_by,
        "ranking_note": board.ranking_line,
        # Aggregates the public does not see (in the organizer view: shown there, withheld elsewhere).
        "withheld": {label: AGGREGATE_SEALED_NOTE for label in board.withheld},
        "significance": {"status": board.significance.status, "method": SIGNIFICANCE_METHOD,
                         "computed_at": board.significance.computed_at or None},
        "rows": board_as_records(board),
    }


def board_build(*, phase: Phase, viewer: Viewer, view: str = PUBLIC, trusted: bool = False,
                significance: bool = True) -> Board:
    """``trusted``: built by the platform itself (the background bootstrap), not for a viewer;
    ``significance``: attach the stored bootstrap (asking for it when missing)."""
    challenge = phase.challenge
    is_organizer = trusted or user_is_organizer(user=viewer, challenge=challenge)
    if view == ORGANIZER and not is_organizer:
        raise BoardNotVisible("the organizer view is for the challenge's organizers")
    if view == PUBLIC and not phase.board_public:
        raise BoardNotVisible(f"the {phase.name} board is not public")
    reveal = view == ORGANIZER
    own_team = team_of_user(user=viewer, challenge=challenge)
    suite = suite_for(challenge)
    every_dataset = _challenge_datasets(phase)
    by_pk = {ds.pk: ds for ds in every_dataset}
    datasets = [ds for ds in every_dataset if phase_has_dataset(phase, ds)]
    if not reveal:
        datasets = datasets_public_order(datasets)  # sealed columns last, by alias
    scope = ranking_scope_get(challenge=challenge, datasets=datasets, reveal_sealed=reveal)
    # Under "sealed_aggregates: all" the public board cannot rank on an average that covers a
    # sealed dataset, so it ranks on the same average over the datasets it shows.
    shown_only = (
        not reveal and challenge.sealed_aggregates == SealedAggregates.ALL
        and any(ds.is_sealed for ds in scope.datasets)
    )

    aggregate_columns = [c for c in phase_aggregate_columns(suite, phase) if aggregate_applies(c.metric, datasets)]
    primary_label = next((c.label for c in aggregate_columns if c.metric == suite.primary_metric), suite.primary_metric)
    columns = []
    if shown_only:
        columns.append(BoardColumn(key=f"shown:{suite.primary_metric}", label=f"{primary_label} (shown datasets)",
                                   group="Overall", is_primary=True))
    columns += [
        BoardColumn(key=f"agg:{c.metric}", label=c.label, group="Overall", decimals=c.decimals,
                    is_primary=c.metric == suite.primary_metric and not shown_only)
        for c in aggregate_columns
    ]
    if phase.protocol_modes and challenge.metric_suite in DIALOG_FORMATS:
        # Errors compound along a dialog: the ranking mode's F1 at each turn position, over all datasets.
        turns = turn_columns()
        aggregate_columns += turns
        group = f"F1 by turn ({Mode(phase.protocol_modes[0]).label})"
        columns += [BoardColumn(key=f"agg:{c.metric}", label=c.label, group=group, decimals=c.decimals) for c in turns]
    for ds in datasets:
        sealed = ds.is_sealed and not reveal
        for c in suite.dataset_columns:
            columns.append(
                BoardColumn(
                    key=f"ds:{ds.pk}:{c.metric}", label=c.label, group=dataset_label(ds, reveal_sealed=reveal),
                    decimals=c.decimals, sealed=sealed, note=DATASET_SEALED_NOTE if sealed else "",
                )
            )

    # Plain tuples, not model instances: a board may have a thousand rows.
    entries = (
        BoardEntry.objects.filter(phase=phase)
        .order_by("team_id")
        .values_list(
            "team_id", "team__name", "team__affiliation", "team__kind", "team__is_anonymous",
            "submission_id", "submission__status", "submission__failure_reason", "submission__created_at",
            "submission__published_on",
            "submission__excluded_reason", "submission__kind", "submission__verdict",
            "submission__verdict_dataset_id", "submission__failure_cause",
            "team__hidden", "team__disqualified_reason", "submission__hidden_reason", named=True,
        )
    )
    metrics = {c.metric for c in (*aggregate_columns, *suite.dataset_columns)}
    aggregates: dict[int, dict[str, float | None]] = defaultdict(dict)
    per_dataset: dict[int, dict[Dataset, dict[str, float | None]]] = defaultdict(dict)
    for submission_id, dataset_id, metric, value in Score.objects.filter(
        submission__board_entries__phase=phase, metric__in=metrics
    ).values_list("submission_id", "dataset_id", "metric", "value"):
        if dataset_id is None:
            aggregates[submission_id][metric] = value
        elif dataset_id in by_pk:
            per_dataset[submission_id].setdefault(by_pk[dataset_id], {})[metric] = value

    aggregate_metrics = [c.metric for c in aggregate_columns]
    published_for: dict[frozenset[int], set[str]] = {}
    withheld: set[str] = set()
    rows = []
    for entry in entries:
        if not reveal and (entry.team__hidden or entry.submission__hidden_reason):
            continue  # hidden by an organizer: on no public board; the organizer view lists it, unranked
        scored = per_dataset.get(entry.submission_id, {})
        # Each aggregate averages the datasets this submission was scored on (a dataset added
        # later is not in its averages); a row without them is judged on the board's datasets.
        covered = list(scored) or datasets
        key = frozenset(ds.pk for ds in covered)
        if key not in published_for:
            published_for[key] = aggregates_published(
                challenge=challenge, suite=suite, datasets=covered, metrics=aggregate_metrics, ranked=scope.datasets
            )
        published = published_for[key]
        withheld.update(m for m in aggregate_metrics if m not in published)
        own = aggregates.get(entry.submission_id, {})
        values: dict[str, float | None] = {}
        sealed_keys: set[str] = set()
        for column in columns:
            kind, _, rest = column.key.partition(":")
            if kind == "agg" and rest in own:
                if reveal or rest in published:
                    values[column.key] = own[rest]
                else:
                    sealed_keys.add(column.key)
            elif kind == "ds" and not column.sealed:
                ds_pk, _, metric = rest.partition(":")
                value = scored.get(by_pk[int(ds_pk)], {}).get(metric)
                if value is not None:
                    values[column.key] = value
        if shown_only:
            values[f"shown:{suite.primary_metric}"] = rank_value = _shown_average(
                suite=suite, scored=scored, ranked=scope.datasets
            )
        else:
            rank_value = own.get(suite.primary_metric)
        # Every row ranks on the same datasets; one that answered fewer says so (and, under
        # "incomplete: unranked", is shown unranked with the reason).
        answered = sum(ds in scored for ds in scope.datasets)
        coverage = ""
        excluded_reason = _moderated(entry) or entry.submission__excluded_reason
        if scored and entry.submission__status == Status.FINISHED and answered < len(scope.datasets):
            coverage = f"{answered} of {len(scope.datasets)} datasets"
            if scope.incomplete == IncompleteRows.UNRANKED and not excluded_reason:
                excluded_reason = (f"answered {answered} of the {len(scope.datasets)} ranked datasets; "
                                   "only complete rows are ranked")
        is_own = own_team is not None and own_team.pk == entry.team_id
        hide_name = entry.team__is_anonymous and not (reveal or is_own)
        rows.append(
            BoardRow(
                rank=None,
                tied=False,
                team_id=entry.team_id,
                team_name="Anonymous" if hide_name else entry.team__name,
                affiliation="" if hide_name else entry.team__affiliation,
                is_baseline=entry.team__kind == TeamKind.BASELINE,
                is_anonymous=entry.team__is_anonymous,
                is_own=is_own,
                submission_id=entry.submission_id,
                status=entry.submission__status,
                failure_reason=_public_failure(entry, by_pk) if entry.submission__status == Status.FAILED else "",
                submitted_at=entry.submission__created_at,
                published_on=entry.submission__published_on,
                values=values,
                sealed_keys=sealed_keys,
                rank_value=rank_value,
                excluded_reason=excluded_reason,
                coverage=coverage,
            )
        )
    human_round = _human_column(columns=columns, rows=rows, phase=phase)
    primary = f"shown:{suite.primary_metric}" if shown_only else f"agg:{suite.primary_metric}"
    ranked_by = f"{primary_label} over the datasets shown" if shown_only else primary_label
    if scope.description and not (shown_only and scope.description.startswith("over every dataset")):
        ranked_by += f" ({scope.description.removeprefix('over ')})" if shown_only else f" {scope.description}"
    board = Board(
        phase=phase, columns=columns, rows=_ranked(rows), primary_key=primary, view=view, ranked_by=ranked_by,
        withheld=[c.label for c in aggregate_columns if c.metric in withheld], incomplete=scope.incomplete,
        human_round_id=human_round,
    )
    board.averages = averages_covered(suite=suite, columns=aggregate_columns, datasets=datasets,
                                       ranked=scope.datasets, reveal=reveal)
    # The average the rows rank on, as a mean of one per-dataset metric over these datasets.
    averaged = suite.averaged_over(
        suite.primary_metric, datasets,
        ranked=[ds for ds in scope.datasets if not ds.is_sealed] if shown_only else scope.datasets,
    )
    if averaged is not None:
        board.ranked_metric = averaged[0]
        board.significance_inputs = significance_inputs(
            phase=phase, metric=averaged[0], datasets=averaged[1],
            rows=[(row.submission_id, row.rank, row.rank_value) for row in board.rows if not row.excluded_reason],
        )
    if significance:
        board.significance = board_significance_get(board.significance_inputs)
    return board


HUMAN_KEY = "human"
HUMAN_GROUP = "Human evaluation"
HUMAN_NOTE = ("mean human score (1-5, or 1-3 for wrong / partly / correct) of the system's answers to the questions "
              "judged in the organizers' published round, with its 95% bootstrap interval over those questions")


def _human_column(*, columns: list[BoardColumn], rows: list[BoardRow], phase: Phase) -> int | None:
    """Add the Human column when a round of the phase is published and judged some row's system
    (``judging.results.phase_human_scores``, which reads published rounds only): its value is the
    row's mean human score, and the row keeps the n and the interval.  Returns the round's id."""
    scores = phase_human_scores(phase_id=phase.pk)
    shown = [row for row in rows if row.submission_id in scores]
    if not shown:
        return None
    # Beside the ranking's group (after the significance columns that follow it), not after every
    # dataset: people's verdict is read next to the automatic one.
    primary_group = next((c.group for c in columns if c.is_primary), "Overall")
    at = max((i + 1 for i, c in enumerate(columns) if c.group == primary_group), default=len(columns))
    columns.insert(at, BoardColumn(key=HUMAN_KEY, label="Human", group=HUMAN_GROUP, note=HUMAN_NOTE))
    for row in shown:
        row.human = scores[row.submission_id]
        row.values[HUMAN_KEY] = row.human.mean
    return next(iter(scores.values())).round_id


def _ranked(rows: list[BoardRow]) -> list[BoardRow]:
    """Rank order: the ranked rows, then the excluded ones (best first), then rows without a score."""
    contenders = [row for row in rows if not row.excluded_reason]
    ranked = rank_rows(contenders, key=lambda r: r.rank_value, higher_is_better=True)
    for item in ranked:
        item.row.rank = item.rank
        item.row.tied = item.tied
    excluded = sorted(
        (row for row in rows if row.excluded_reason),
        key=lambda r: (r.rank_value is None, -(r.rank_value or 0.0)),
    )
    return (
        [item.row for item in ranked if item.rank is not None]
        + excluded
        + [item.row for item in ranked if item.rank is None]
    )


def _shown_average(
    *, suite: Suite, scored: dict[Dataset, dict[str, float | None]], ranked: list[Dataset]
) -> float | None:
    """The ranking average over the ranked datasets that are not sealed, as the suite computes it
    (one the row did not answer counts 0, as in the full average)."""
    shown = [ds for ds in ranked if not ds.is_sealed]
    if not shown or not scored:
        return None  # a row without scores (a failed run) has no average to rank on
    return suite.aggregate({ds: scored[ds] for ds in shown if ds in scored}, ranked=shown).get(suite.primary_metric)


def _moderated(entry: Any) -> str:
    """Why an organizer took the row out of the ranking ("" if none did): a disqualified team
    (the reason the organizer wrote for everyone to read), or, in the organizer view, a hidden row."""
    if entry.team__disqualified_reason:
        return f"disqualified: {entry.team__disqualified_reason}"
    if entry.team__hidden:
        return "hidden from the public board (the team)"
    if entry.submission__hidden_reason:
        return f"hidden from the public board: {entry.submission__hidden_reason}"
    return ""


def _public_failure(entry: Any, datasets: dict[int, Dataset]) -> str:
    """A failed row's reason as the public may read it: a published result's own words, else
    the verdict in the fixed vocabulary (a run's full reason can quote hidden data)."""
    if entry.submission__kind == SubmissionKind.IMPORTED:
        return str(entry.submission__failure_reason)
    return verdict_sentence(
        verdict=entry.submission__verdict, dataset=datasets.get(entry.submission__verdict_dataset_id),
        cause=entry.submission__failure_cause,
    )


def board_as_records(board: Board) -> list[dict[str, Any]]:
    """Rows for CSV/JSON export: what the viewer sees on the page, nothing more."""
    return [board_record(board, row) for row in board.rows]


def board_record(board: Board, row: BoardRow) -> dict[str, Any]:
    """One row's record in ``board_as_records`` (a row given alone, to splice in)."""
    record: dict[str, Any] = {
        "rank": row.rank,
        "team": row.team_name,
        "affiliation": row.affiliation,
        "baseline": row.is_baseline,
        "status": row.status,
        "excluded": row.excluded_reason,
        # Only where the row answered fewer than all of the ranked datasets: "2 of 3 datasets".
        "coverage": row.coverage or None,
        "submitted_at": row.submitted_at.isoformat() if row.submitted_at else None,
        # A published result: the day its results were published (the date its board shows).
        "published_on": row.published_on.isoformat() if row.published_on else None,
    }
    for column in board.columns:
        if column.key == HUMAN_KEY:
            human = row.human
            record.update({"human": None if human is None else human.mean,
                           "human_n": None if human is None else human.n,
                           "human_ci95_low": None if human is None else human.low,
                           "human_ci95_high": None if human is None else human.high})
            continue
        name = f"{column.group} {column.label}" if column.group != "Overall" else column.label
        hidden = column.sealed or column.key in row.sealed_keys
        record[name] = None if hidden else row.values.get(column.key)
    record.update(_significance_record(board, row))
    return record


def _significance_record(board: Board, row: BoardRow) -> dict[str, Any]:
    """The row's interval, p-value, rank group and rank range, as its page shows them: none where a
    ranking average is withheld (``Board.significance_withheld``), none before they are computed."""
    if board.significance.status == "none":
        return {}
    if board.significance_withheld:
        return {"ci95_low": None, "ci95_high": None, "p_vs_leader": None, "rank_group": None, "rank_low": None,
                "rank_high": None, "significance_note": WITHHELD_SIGNIFICANCE}
    sig = board.significance.rows.get(row.submission_id) if board.significance.ready else None
    ci = None if sig is None else sig.ci
    ranks = None if sig is None else sig.rank_range
    return {
        "ci95_low": None if ci is None else ci[0],
        "ci95_high": None if ci is None else ci[1],
        "p_vs_leader": None if sig is None else sig.p_value,
        "rank_group": None if sig is None else sig.group,
        "rank_low": None if ranks is None else ranks[0],
        "rank_high": None if ranks is None else ranks[1],
        "significance_note": sig.note if sig is not None else (
            "" if board.significance.ready or row.rank is None else "being computed"),
    }


@dataclass(frozen=True)
class BestReachable:
    """Siblini et al.'s BEST analysis of one dataset (Table 2), from its gold alone."""

    dataset: str
    best_f1: float
    best_filtered_f1: float


@lru_cache(maxsize=16)
def _best_reachable(fmt: str, path: str, mtime: float) -> tuple[float, float]:
    # Keyed by the file's mtime: a replaced gold is read again.
    figures = best_reachable_of(fmt, load_json(path))
    return figures["best_f1"], figures["best_filtered_f1"]


def phase_best_reachable(*, phase: Phase) -> list[BestReachable]:
    """For organizers, on a conversational (QuAC, CoQA) phase: the best F1 any system could reach
    (a gold answer as its prediction, BEST) and that with the tokens of the previous six answers
    filtered out (what a model that filters out what was already answered is held to), dataset by
    dataset.  Other suites: nothing."""
    fmt = phase.challenge.metric_suite
    if fmt not in DIALOG_FORMATS:
        return []
    files = (phase_dataset_files(phase=phase)
             .select_related("dataset").order_by("dataset__order", "dataset__slug"))
    return [BestReachable(dataset_label(f.dataset, reveal_sealed=True),
                          *_best_reachable(fmt, f.gold.path, os.path.getmtime(f.gold.path))) for f in files]
