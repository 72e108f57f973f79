"""The value every evaluator returns: official metrics plus per-question scores."""

from __future__ import annotations

from collections.abc import Sequence
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


class EvalResult:
    """What one evaluation produced.

    ``metrics`` has the official script's JSON keys and structure, unrounded.
    ``per_example`` has one record per scored question: its id, its scores
    (the metric's own per-question values) and the slice labels known for it
    (dataset, question type, source, has-answer, level...), so that significance
    tests and breakdowns never need a re-score.  ``warnings`` are the notices
    the official script prints (missing predictions, duplicate keys...).
    ``output`` is what the command prints instead of the metrics as JSON (e.g.
    ``metaeval --format latex``).

    A plain class with a dataclass's constructor, equality and repr: every
    ``python -m scoring`` run imports this module, and ``dataclasses`` (with
    ``inspect``) would cost a SQuAD run about a tenth of its own reading time.
    """

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a dataclass

    def __init__(
        self,
        metrics: dict[str, Any],
        per_example: list[dict[str, Any]] | None = None,
        warnings: list[str] | None = None,
        output: str | None = None,
    ) -> None:
        self.metrics = metrics
        self.per_example: list[dict[str, Any]] = [] if per_example is None else per_example
        self.warnings: list[str] = [] if warnings is None else warnings
        self.output = output

    def _fields(self) -> tuple[Any, ...]:
        return (self.metrics, self.per_example, self.warnings, self.output)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvalResult) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return (f"EvalResult(metrics={self.metrics!r}, per_example={self.per_example!r}, "
                f"warnings={self.warnings!r}, output={self.output!r})")
