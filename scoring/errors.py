"""Errors that the scoring library reports to people, never as tracebacks."""

from __future__ import annotations


class ScoringError(Exception):
    """A problem with the inputs (or an undefined metric) that a person can act on.

    The message always names where the problem is: the file, and the line,
    question id or field when they are known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        qid: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.qid = qid
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.qid is not None:
            where.append(f"id {self.qid!r}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class InputFormatError(ScoringError):
    """A file is not what the benchmark's format expects (bad JSON, wrong fields, duplicates)."""


class UndefinedMetricError(ScoringError):
    """The official script would crash here (e.g. a division by zero); we refuse to invent a number."""
