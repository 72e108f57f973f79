"""The value every evaluator returns: official metrics plus per-question scores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Notices beyond this many are summarised in one line: the official scripts print one
# line per question, which buries everything else in a platform log when a submission
# is empty.
MAX_LISTED_WARNINGS = 20


def summarise(lines: Sequence[str], more: str) -> list[str]:
    """The first :data:`MAX_LISTED_WARNINGS` lines, then one line counting the rest."""
    if len(lines) <= MAX_LISTED_WARNINGS:
        return list(lines)
    rest = len(lines) - MAX_LISTED_WARNINGS
    return [*lines[:MAX_LISTED_WARNINGS], f"... and {rest} more {more}"]


@dataclass
class EvalResult:
    """What one evaluation produced.

    ``metrics`` has the official script's JSON keys and structure, unrounded.
    ``per_example`` has one record per scored question: its id, its scores
    (the metric's own per-question values) and the slice labels known for it
    (dataset, question type, source, has-answer, level...), so that significance
    tests and breakdowns never need a re-score.  ``warnings`` are the notices
    the official script prints (missing predictions, duplicate keys...).
    """

    metrics: dict[str, Any]
    per_example: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # What the command prints instead of the metrics as JSON (e.g. ``metaeval --format latex``).
    output: str | None = None
