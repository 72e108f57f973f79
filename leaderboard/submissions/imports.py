"""Published results on a board: parsers for result files, turned into ``ImportedEntry`` rows; the
mapping file with which organizers say what those rows are (teams, baselines, exclusions); and
``results_import``, which writes them as imported submissions with their scores and board rows."""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.db import transaction
from django.utils import timezone

from leaderboard.accounts.models import Membership, Team, TeamKind
from leaderboard.accounts.services import team_shown_text_check
from leaderboard.challenges.models import Challenge, Dataset, Phase, SubmissionKind
from leaderboard.challenges.selectors import phase_ranking_scope
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import Suite
from leaderboard.challenges.versions import board_changed
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import FailureCause, Score, Status, Submission


@dataclass
class ImportedEntry:
    """A published result: per-dataset metric values (None where the run failed).

    ``name`` is the team the row belongs to: entries with the same name are one team's
    submissions, and its board row follows the challenge's ranking rule.
    """

    name: str
    scores: dict[str, dict[str, float | None]]
    affiliation: str = ""
    reference: str = ""
    failure: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The row as the results file names it (what a mapping file refers to); "" = ``name``.
    row: str = ""
    # Published results are baselines unless the import says otherwise: a CodaLab export
    # lists participants, and its mapping names the organizers' baselines.
    is_baseline: bool = True
    # Shown unranked on the board with this reason (Submission.excluded_reason).
    excluded_reason: str = ""
    # When the row was originally submitted and scored; None means the time of the import.
    submitted_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    # The day the results were published (the mapping's ``published``): the date the board shows.
    published_on: dt.date | None = None


def _split_affiliation(description: str) -> tuple[str, str]:
    # CodaLab descriptions read "System name (Affiliation)".
    text = " ".join(description.split())
    if text.endswith(")") and "(" in text:
        name, _, rest = text.rpartition("(")
        if name.strip():
            return name.strip(), rest[:-1].strip()
    return text, ""


def _utc(value: Any, where: str) -> dt.datetime:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ServiceError(f"{where}: expected a Unix time in seconds, found {value!r}")
    return dt.datetime.fromtimestamp(value, tz=dt.UTC)


def parse_mrqa_codalab(document: Any, *, source: str) -> list[ImportedEntry]:
    """The MRQA 2019 CodaLab Worksheets leaderboard export: scores as ``<Dataset>_em/_f1``."""
    if not isinstance(document, dict) or not isinstance(document.get("leaderboard"), list):
        raise ServiceError(f"{source}: expected an object with a 'leaderboard' list (CodaLab export)")
    entries = []
    for index, item in enumerate(document["leaderboard"]):
        where = f"{source}: leaderboard[{index}]"
        try:
            description = item["submission"]["description"]
            raw_scores = item["scores"]
        except (KeyError, TypeError):
            raise ServiceError(f"{where}: missing submission.description or scores") from None
        name, affiliation = _split_affiliation(str(description))
        # The submission's own time, not the evaluation run's (CodaLab re-ran every entry
        # on the final test data days later) nor the export's.
        submitted_at = _utc(item["submission"].get("created"), f"{where}: submission.created")
        scores: dict[str, dict[str, float | None]] = {}
        for key, value in raw_scores.items():
            dataset, _, metric = key.rpartition("_")
            if metric not in {"em", "f1"} or not dataset:
                raise ServiceError(f"{where}: unexpected score key {key!r} (expected <Dataset>_em or _f1)")
            if value is not None and not isinstance(value, (int, float)):
                raise ServiceError(f"{where}: score {key!r} is not a number")
            scores.setdefault(dataset, {})[metric] = None if value is None else float(value)
        bundle = item.get("bundle") or {}
        metadata = bundle.get("metadata") or {}
        failure = ""
        if bundle.get("state") == "failed":
            failure = metadata.get("failure_message", "").strip() or "the run failed"
        finished = metadata.get("last_updated")
        entries.append(
            ImportedEntry(
                name=name,
                affiliation=affiliation,
                row=" ".join(str(description).split()),
                scores=scores,
                failure=failure,
                reference="MRQA 2019 shared task, hidden test (CodaLab Worksheets export)",
                # A leaderboard export lists participants; baselines are named in a mapping.
                is_baseline=False,
                submitted_at=submitted_at,
                finished_at=None if finished is None else _utc(finished, f"{where}: bundle.metadata.last_updated"),
            )
        )
    return entries


def parse_simple(document: Any, *, source: str) -> list[ImportedEntry]:
    """``[{"name", "affiliation"?, "reference"?, "scores": {dataset: {metric: value}}}]``."""
    if not isinstance(document, list):
        raise ServiceError(f"{source}: expected a list of entries")
    entries = []
    for index, item in enumerate(document):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(
            item.get("scores"), dict
        ):
            raise ServiceError(f"{source}: entry {index} needs a 'name' string and a 'scores' object")
        entries.append(
            ImportedEntry(
                name=item["name"],
                affiliation=item.get("affiliation", ""),
                reference=item.get("reference", ""),
                scores=item["scores"],
            )
        )
    return entries


PARSERS = {"mrqa-codalab": parse_mrqa_codalab, "simple": parse_simple}


def load_results_file(path: Path, *, fmt: str, mapping: Path | None = None) -> list[ImportedEntry]:
    """The rows of a results file, with the mapping file's teams, baselines and exclusions applied."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ServiceError(f"{path}: cannot read results ({exc})") from None
    entries = PARSERS[fmt](document, source=str(path))
    return mapping_apply(entries=entries, mapping=None if mapping is None else mapping_load(mapping), results=path.name)


# --------------------------------------------------------------------------- the mapping file

MAPPING_ROW_KEYS = ("team", "affiliation", "baseline", "exclude")


@dataclass(frozen=True)
class RowMapping:
    """What a mapping file says about one row of a results file (None: nothing)."""

    line: int
    team: str | None = None
    affiliation: str | None = None
    baseline: bool | None = None
    exclude: str | None = None


@dataclass(frozen=True)
class ImportMapping:
    source: str
    rows: dict[str, RowMapping]
    # When the results were published (a paper, a results page): every row's date on the board.
    published: dt.date | None = None


def mapping_load(path: Path) -> ImportMapping:
    """Read and check a mapping file: ``rows: {<row name>: {team, affiliation, baseline, exclude}}``."""
    source = path.name
    try:
        text = path.read_text(encoding="utf-8")
        document = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError) as exc:
        raise ServiceError(f"{path}: cannot read the mapping ({exc})") from None
    except yaml.YAMLError as exc:
        raise ServiceError(f"{path}: not valid YAML ({exc})") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ServiceError(f"{source}: expected a mapping with a 'rows' key, found {type(document).__name__}")
    unknown = set(document) - {"rows", "published"}
    if unknown:
        raise ServiceError(f"{source}: unknown key {sorted(map(str, unknown))[0]!r} (the file's keys are 'rows' "
                           "and 'published')")
    published = document.get("published")
    if published is not None and (not isinstance(published, dt.date) or isinstance(published, dt.datetime)):
        raise ServiceError(f"{source}: 'published' must be a date like 2019-11-04 (when the results were "
                           f"published), found {published!r}")
    rows = document.get("rows") or {}
    if not isinstance(rows, dict):
        raise ServiceError(f"{source}: 'rows' must map row names to what they are, found {type(rows).__name__}")
    lines = _row_lines(root, source)
    mapped: dict[str, RowMapping] = {}
    for name, spec in rows.items():
        line = lines.get(str(name), 0)
        where = f"{source}, line {line}: row {name!r}"
        if not isinstance(name, str):
            raise ServiceError(f"{where}: a row name must be a string (quote it)")
        if not isinstance(spec, dict):
            raise ServiceError(f"{where}: expected {{team, affiliation, baseline, exclude}}, found {spec!r}")
        extra = [k for k in spec if k not in MAPPING_ROW_KEYS]
        if extra:
            raise ServiceError(f"{where}: unknown key {extra[0]!r} (allowed: {', '.join(MAPPING_ROW_KEYS)})")
        row = RowMapping(
            line=line,
            team=_text(spec, "team", where, limit=100),
            affiliation=_text(spec, "affiliation", where, limit=200, empty_ok=True),
            baseline=spec.get("baseline"),
            exclude=_text(spec, "exclude", where, limit=300),
        )
        if row.baseline is not None and not isinstance(row.baseline, bool):
            raise ServiceError(f"{where}: 'baseline' must be true or false, found {row.baseline!r}")
        mapped[" ".join(name.split())] = row
    return ImportMapping(source=source, rows=mapped, published=published)


def _row_lines(root: yaml.Node | None, source: str) -> dict[str, int]:
    """Line of each row name, so errors point at it; a row named twice is refused (YAML
    itself would keep the last one silently)."""
    lines: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return lines
    for key, value in root.value:
        if key.value != "rows" or not isinstance(value, yaml.MappingNode):
            continue
        for row, _ in value.value:
            line = row.start_mark.line + 1
            if row.value in lines:
                raise ServiceError(f"{source}, line {line}: row {row.value!r} is already mapped on line {lines[row.value]}")
            lines[row.value] = line
    return lines


def _text(spec: dict[str, Any], key: str, where: str, *, limit: int, empty_ok: bool = False) -> str | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not (value.strip() or empty_ok):
        raise ServiceError(f"{where}: {key!r} must be a non-empty string, found {value!r}")
    if len(value.strip()) > limit:
        raise ServiceError(f"{where}: {key!r} is longer than {limit} characters")
    return " ".join(value.split())


def mapping_apply(
    *, entries: Sequence[ImportedEntry], mapping: ImportMapping | None, results: str
) -> list[ImportedEntry]:
    """The entries as the mapping says: each row's team, affiliation, baseline mark and exclusion.

    Without a mapping the entries keep what their parser gave them; rows that would fall
    into one team by accident (same system name) are refused either way.
    """
    rows = mapping.rows if mapping is not None else {}
    source = mapping.source if mapping is not None else results
    by_row: dict[str, ImportedEntry] = {}
    for entry in entries:
        by_row.setdefault(entry.row or entry.name, entry)
    for name, row in rows.items():
        if name not in by_row:
            close = difflib.get_close_matches(name, by_row, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ServiceError(f"{source}, line {row.line}: row {name!r} is not in {results}{hint}")

    mapped = []
    for entry in entries:
        row = rows.get(entry.row or entry.name, RowMapping(line=0))
        mapped.append(dataclasses.replace(
            entry,
            name=row.team or entry.name,
            affiliation=entry.affiliation if row.affiliation is None else row.affiliation,
            excluded_reason=row.exclude or entry.excluded_reason,
            published_on=(mapping.published if mapping is not None and mapping.published else entry.published_on),
        ))
    teams: dict[str, list[int]] = {}
    for index, entry in enumerate(mapped):
        teams.setdefault(entry.name, []).append(index)
    for team, members in teams.items():
        keys = [entries[i].row or entries[i].name for i in members]
        specs = [rows.get(k, RowMapping(line=0)) for k in keys]
        where = f"{source}: team {team!r} (rows {', '.join(map(repr, keys))})"
        if len(members) > 1 and any(spec.team is None for spec in specs):
            raise ServiceError(f"{where}: these rows would fall into one team by their name; to group them, "
                               f"give each of them 'team: {team}' in the mapping, or name them apart")
        if len(members) > 1 and any(spec.exclude for spec in specs):
            raise ServiceError(f"{where}: an excluded row keeps a board row of its own (that is where its reason "
                               "shows); do not group it with other rows")
        # A team's affiliation and baseline mark may be said on any one of its rows.
        affiliations = {spec.affiliation for spec in specs if spec.affiliation is not None}
        baselines = {spec.baseline for spec in specs if spec.baseline is not None}
        if len(affiliations) > 1:
            raise ServiceError(f"{where}: the rows give different affiliations ({', '.join(map(repr, sorted(affiliations)))})")
        if len(baselines) > 1:
            raise ServiceError(f"{where}: some rows are marked baselines and some are not")
        for i in members:
            changes: dict[str, Any] = {}
            if affiliations:
                changes["affiliation"] = next(iter(affiliations))
            if mapping is not None:
                # With a mapping, only the rows it names are baselines.
                changes["is_baseline"] = baselines == {True}
            mapped[i] = dataclasses.replace(mapped[i], **changes)
    return mapped


def imported_team_get_or_create(
    *, challenge: Challenge, name: str, is_baseline: bool, affiliation: str, reference: str
) -> Team:
    """The team of imported rows: nobody belongs to it, and it is marked a baseline only if
    the import says so.  A team people belong to is never taken over."""
    team_shown_text_check(name, field="name", what=f"team {name!r}: its name")
    team_shown_text_check(affiliation, field="affiliation", what=f"team {name!r}: its affiliation")
    kind = TeamKind.BASELINE if is_baseline else TeamKind.PARTICIPANT
    team = Team.objects.filter(challenge=challenge, name=name).first()
    if team is None:
        return Team.objects.create(
            challenge=challenge, name=name, kind=kind, affiliation=affiliation, reference=reference,
            join_code=secrets.token_urlsafe(12),
        )
    if Membership.objects.filter(team=team).exists():
        raise ServiceError(f"{name}: a participant team already has that name")
    if team.kind != kind:
        # Baseline teams may carry a join code derived from their name; a participant-kind
        # team must not, or anyone could join an imported team and submit as it.
        team.join_code = secrets.token_urlsafe(12)
    team.kind, team.affiliation, team.reference = kind, affiliation, reference
    team.save(update_fields=["kind", "affiliation", "reference", "join_code"])
    return team


def _team_affiliation(name: str, group: list[ImportedEntry]) -> str:
    """The affiliation a team's rows agree on ("" if none gives one)."""
    values = {e.affiliation for e in group} - {""}
    if len(values) > 1:
        rows = ", ".join(repr(e.row or e.name) for e in group)
        raise ServiceError(f"team {name!r} (rows {rows}): its rows disagree on the affiliation "
                           f"({', '.join(map(repr, sorted(values)))})")
    return values.pop() if values else ""


def results_import(*, phase: Phase, entries: Iterable[ImportedEntry], replace: bool = False) -> list[Submission]:
    """Add published rows to a phase's board, one submission per entry, grouped into teams by name.

    Re-importing replaces those teams' imported rows in this phase, so running the same
    import twice changes nothing.  With ``replace`` the import is the phase's whole set of
    imported rows: teams it no longer names lose theirs (and are deleted if that leaves
    them with no submission and no member), as when a mapping file renames or groups rows.
    """
    datasets = {d.slug.lower(): d for d in phase.challenge.datasets.all()}
    datasets.update({d.name.lower(): d for d in phase.challenge.datasets.all()})
    suite = suite_for(phase.challenge)
    ranked = phase_ranking_scope(phase=phase).datasets
    teams: dict[str, list[ImportedEntry]] = {}
    for entry in entries:
        teams.setdefault(entry.name[:100], []).append(entry)
    created: list[Submission] = []
    with transaction.atomic():
        for name, group in teams.items():
            excluded = [e for e in group if e.excluded_reason]
            if excluded and len(group) > 1:
                # The team's one board row is its best (or latest) submission: an excluded row
                # in a group would either represent the team or vanish with its reason.
                raise ServiceError(f"{excluded[0].row or name!r}: an excluded row cannot share team {name!r} "
                                   "with other rows; give it a team of its own")
            if len({e.is_baseline for e in group}) > 1:
                raise ServiceError(f"team {name!r}: some of its rows are marked baselines and some are not")
            team = imported_team_get_or_create(
                challenge=phase.challenge, name=name, is_baseline=group[0].is_baseline,
                # Cut to their columns, as the name is above (PostgreSQL refuses longer text).
                affiliation=_team_affiliation(name, group)[:200],
                reference=next((e.reference for e in group if e.reference), "")[:300],
            )
            Submission.objects.filter(team=team, phase=phase, kind=SubmissionKind.IMPORTED).delete()
            for entry in group:
                created.append(_imported_submission_create(team=team, phase=phase, entry=entry,
                                                           datasets=datasets, suite=suite, ranked=ranked))
            board_entry_refresh(team=team, phase=phase)
        # Even an import of no rows may have replaced (deleted) rows the board showed.
        board_changed(challenge_id=phase.challenge_id)
        if replace:
            stale = Submission.objects.filter(phase=phase, kind=SubmissionKind.IMPORTED).exclude(team__name__in=teams)
            stale_teams = list(Team.objects.filter(pk__in=stale.values("team_id")))
            stale.delete()
            for team in stale_teams:
                if Submission.objects.filter(team=team).exists() or Membership.objects.filter(team=team).exists():
                    board_entry_refresh(team=team, phase=phase)
                else:
                    team.delete()
    return created


def _imported_submission_create(
    *, team: Team, phase: Phase, entry: ImportedEntry, datasets: Mapping[str, Dataset], suite: Suite,
    ranked: Sequence[Dataset],
) -> Submission:
    per_dataset: dict[Dataset, dict[str, float | None]] = {}
    for key, metrics in entry.scores.items():
        ds = datasets.get(key.lower())
        if ds is None:
            raise ServiceError(f"{entry.row or entry.name}: no dataset called {key!r} in {phase.challenge.slug}")
        per_dataset[ds] = metrics
    failed = bool(entry.failure) or any(v is None for m in per_dataset.values() for v in m.values())
    # A dataset column the results file lacks for this row is a dataset it did not answer: the
    # same rule as for submissions (it counts 0, or the board shows the row unranked).
    aggregates = suite.aggregate(per_dataset, ranked=ranked)
    now = timezone.now()
    submission = Submission.objects.create(
        team=team,
        phase=phase,
        kind=SubmissionKind.IMPORTED,
        status=Status.FAILED if failed else Status.FINISHED,
        failure_reason=entry.failure or ("no scores: the run failed" if failed else ""),
        failure_cause=FailureCause.PARTICIPANT if failed else FailureCause.NONE,
        excluded_reason=entry.excluded_reason[:300],
        # Which row of the results file this was: a team may group several.
        description=(entry.row or entry.reference)[:300],
        primary_score=None if failed else aggregates.get(suite.primary_metric),
        scoring_version="imported",
        finished_at=entry.finished_at or entry.submitted_at or now,
        published_on=entry.published_on,
    )
    if entry.submitted_at is not None:
        # created_at is auto_now_add; the board shows it as the submission time, and the
        # ranking rule breaks ties on it, so it must be the original one.
        Submission.objects.filter(pk=submission.pk).update(created_at=entry.submitted_at)
        submission.created_at = entry.submitted_at
    rows = [
        Score(submission=submission, dataset=ds, metric=m, value=v)
        for ds, metrics in per_dataset.items()
        for m, v in metrics.items()
    ]
    rows += [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
    Score.objects.bulk_create(rows)
    return submission
