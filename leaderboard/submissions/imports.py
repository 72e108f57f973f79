"""Parsers for published result files, turned into ``ImportedEntry`` rows, and the mapping
file with which organizers say what those rows are (teams, baselines, exclusions)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from leaderboard.core.errors import ServiceError
from leaderboard.submissions.services import ImportedEntry


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
    unknown = set(document) - {"rows"}
    if unknown:
        raise ServiceError(f"{source}: unknown key {sorted(map(str, unknown))[0]!r} (the file has one key, 'rows')")
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
    return ImportMapping(source=source, rows=mapped)


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
