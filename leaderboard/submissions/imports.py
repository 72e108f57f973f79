"""Parsers for published result files, turned into ``ImportedEntry`` rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from leaderboard.core.errors import ServiceError
from leaderboard.submissions.services import ImportedEntry


def _split_affiliation(description: str) -> tuple[str, str]:
    # CodaLab descriptions read "System name (Affiliation)".
    text = " ".join(description.split())
    if text.endswith(")") and "(" in text:
        name, _, rest = text.rpartition("(")
        return name.strip(), rest[:-1].strip()
    return text, ""


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
        scores: dict[str, dict[str, float | None]] = {}
        for key, value in raw_scores.items():
            dataset, _, metric = key.rpartition("_")
            if metric not in {"em", "f1"} or not dataset:
                raise ServiceError(f"{where}: unexpected score key {key!r} (expected <Dataset>_em or _f1)")
            if value is not None and not isinstance(value, (int, float)):
                raise ServiceError(f"{where}: score {key!r} is not a number")
            scores.setdefault(dataset, {})[metric] = None if value is None else float(value)
        bundle = item.get("bundle") or {}
        failure = ""
        if bundle.get("state") == "failed":
            failure = (bundle.get("metadata") or {}).get("failure_message", "").strip() or "the run failed"
        entries.append(
            ImportedEntry(
                name=f"{name} ({affiliation})" if affiliation else name,
                affiliation="",
                scores=scores,
                failure=failure,
                reference="MRQA 2019 shared task, hidden test (CodaLab Worksheets export)",
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


def load_results_file(path: Path, *, fmt: str) -> list[ImportedEntry]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ServiceError(f"{path}: cannot read results ({exc})") from None
    return PARSERS[fmt](document, source=str(path))
