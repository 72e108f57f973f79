"""The leaderboard of a phase, as a given viewer may see it.

Visibility rules, in one place:
- a board that is not public is shown to the challenge's organizers only;
- anonymous teams read "Anonymous" except to their own members and organizers;
- a sealed Split III dataset shows its alias, and its per-dataset scores are
  hidden from everyone but organizers (even from the team that earned them):
  only the macro averages that include it are shown.

The number of queries is constant whatever the number of teams: one row per
team comes from ``BoardEntry``, and all their scores from one query.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404
from django.shortcuts import get_object_or_404

from leaderboard.accounts.models import TeamKind
from leaderboard.accounts.selectors import team_of_user, user_is_organizer
from leaderboard.challenges.models import Dataset, Phase
from leaderboard.challenges.selectors import aggregate_is_one_sealed_dataset, dataset_label, metric_split
from leaderboard.challenges.suites import suite_for
from leaderboard.submissions.models import BoardEntry, Score, Status
from scoring.ranking import rank_rows

Viewer = AbstractBaseUser | AnonymousUser


@dataclass(frozen=True)
class BoardColumn:
    key: str
    label: str
    group: str
    decimals: int = 2
    is_primary: bool = False
    sealed: bool = False


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


@dataclass
class Board:
    phase: Phase
    columns: list[BoardColumn]
    rows: list[BoardRow]
    primary_key: str


class BoardNotVisible(Exception):
    pass


def board_datasets(*, phase: Phase) -> list[Dataset]:
    """Datasets that have this phase's portion, in the organizer's order."""
    datasets = Dataset.objects.filter(challenge_id=phase.challenge_id).order_by("order", "slug")
    return [ds for ds in datasets if phase.portion in ds.portions]


def board_get(*, slug: str, phase_slug: str, viewer: Viewer) -> Board:
    """The board at a public address: 404 for an unknown or non-public challenge or phase,
    and for a board the viewer may not see (its existence is not confirmed either)."""
    phase = get_object_or_404(
        Phase.objects.select_related("challenge"), challenge__slug=slug, challenge__is_public=True, slug=phase_slug
    )
    try:
        return board_build(phase=phase, viewer=viewer)
    except BoardNotVisible as exc:
        raise Http404(str(exc)) from None


def board_payload(board: Board) -> dict[str, Any]:
    """The JSON export and the API's answer: the same body."""
    return {
        "challenge": board.phase.challenge.slug,
        "phase": board.phase.slug,
        "ranked_by": board.primary_key.removeprefix("agg:"),
        "rows": board_as_records(board),
    }


def board_build(*, phase: Phase, viewer: Viewer) -> Board:
    challenge = phase.challenge
    is_organizer = user_is_organizer(user=viewer, challenge=challenge)
    if not (phase.board_public or is_organizer):
        raise BoardNotVisible(f"the {phase.name} board is not public")
    own_team = team_of_user(user=viewer, challenge=challenge)
    suite = suite_for(challenge)
    datasets = board_datasets(phase=phase)

    columns = [
        BoardColumn(
            key=f"agg:{c.metric}", label=c.label, group="Overall", decimals=c.decimals,
            is_primary=c.metric == suite.primary_metric,
            sealed=not is_organizer and aggregate_is_one_sealed_dataset(c.metric, datasets),
        )
        for c in suite.aggregate_columns
        if _aggregate_applies(c.metric, datasets)
    ]
    for ds in datasets:
        sealed = ds.is_sealed and not is_organizer
        for c in suite.dataset_columns:
            columns.append(
                BoardColumn(
                    key=f"ds:{ds.pk}:{c.metric}", label=c.label, group=dataset_label(ds, reveal_sealed=is_organizer),
                    decimals=c.decimals, sealed=sealed,
                )
            )
    wanted = {c.key for c in columns}
    hidden = {c.key for c in columns if c.sealed}

    # Plain tuples, not model instances: a board may have a thousand rows.
    entries = (
        BoardEntry.objects.filter(phase=phase)
        .order_by("team_id")
        .values_list(
            "team_id", "team__name", "team__affiliation", "team__kind", "team__is_anonymous",
            "submission_id", "submission__status", "submission__failure_reason", "submission__created_at",
            named=True,
        )
    )
    metrics = {c.metric for c in (*suite.aggregate_columns, *suite.dataset_columns)}
    values: dict[int, dict[str, float | None]] = defaultdict(dict)
    for submission_id, dataset_id, metric, value in Score.objects.filter(
        submission__board_entries__phase=phase, metric__in=metrics
    ).values_list("submission_id", "dataset_id", "metric", "value"):
        key = f"agg:{metric}" if dataset_id is None else f"ds:{dataset_id}:{metric}"
        if key in wanted and key not in hidden:
            values[submission_id][key] = value

    rows = []
    for entry in entries:
        is_own = own_team is not None and own_team.pk == entry.team_id
        hide_name = entry.team__is_anonymous and not (is_organizer or is_own)
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
                failure_reason=entry.submission__failure_reason if entry.submission__status == Status.FAILED else "",
                submitted_at=entry.submission__created_at,
                values=values.get(entry.submission_id, {}),
            )
        )
    primary = f"agg:{suite.primary_metric}"
    ranked = rank_rows(rows, key=lambda r: r.values.get(primary), higher_is_better=True)
    ordered = []
    for item in ranked:
        item.row.rank = item.rank
        item.row.tied = item.tied
        ordered.append(item.row)
    return Board(phase=phase, columns=columns, rows=ordered, primary_key=primary)


def _aggregate_applies(metric: str, datasets: list[Dataset]) -> bool:
    # Per-split macro columns appear only when the phase has datasets of that split.
    split = metric_split(metric)
    return split is None or any(ds.split == split for ds in datasets)


def board_as_records(board: Board) -> list[dict[str, Any]]:
    """Rows for CSV/JSON export: what the viewer sees on the page, nothing more."""
    records = []
    for row in board.rows:
        record: dict[str, Any] = {
            "rank": row.rank,
            "team": row.team_name,
            "affiliation": row.affiliation,
            "baseline": row.is_baseline,
            "status": row.status,
            "submitted_at": row.submitted_at.isoformat() if row.submitted_at else None,
        }
        for column in board.columns:
            name = f"{column.group} {column.label}" if column.group != "Overall" else column.label
            record[name] = None if column.sealed else row.values.get(column.key)
        records.append(record)
    return records
