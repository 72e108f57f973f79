"""The overview paper's figures; its tables are written by :mod:`scoring.tables`.

``rankings.paper`` builds the tables from a board as its viewer gets it; the formats (LaTeX,
CSV, Markdown) are pure and shared with ``python -m scoring metaeval --format``, so they live in
the scoring library and are re-exported here for the board's code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# One Pearson for the paper tables, metaeval and the judging rounds.
from scoring.agreement import pearson as pearson
from scoring.tables import LATEX_EMPTY as LATEX_EMPTY
from scoring.tables import MARKDOWN_EMPTY as MARKDOWN_EMPTY
from scoring.tables import Cell as Cell
from scoring.tables import Column as Column
from scoring.tables import Table as Table
from scoring.tables import latex_escape as latex_escape
from scoring.tables import markdown_escape as markdown_escape
from scoring.tables import table_latex as table_latex
from scoring.tables import table_markdown as table_markdown
from scoring.tables import tables_csv as tables_csv
from scoring.tables import tables_latex as tables_latex
from scoring.tables import tables_markdown as tables_markdown

# --------------------------------------------------------------------------- figures


@dataclass(frozen=True)
class Improvement:
    system: str
    system_value: float
    baseline: str
    baseline_value: float

    @property
    def delta(self) -> float:
        return self.system_value - self.baseline_value


def improvement_over_baseline(entries: Sequence[tuple[str, bool, float | None]]) -> Improvement | None:
    """The best system's score against the best baseline's, from (name, is a baseline, score) in
    rank order; None without a scored system or a scored baseline.  A tie goes to the entry listed
    first (the better-ranked row), so the answer does not depend on how equal scores are sorted."""
    best: dict[bool, tuple[str, float]] = {}
    for name, is_baseline, value in entries:
        if value is None or not math.isfinite(value):
            continue
        if is_baseline not in best or value > best[is_baseline][1]:
            best[is_baseline] = (name, value)
    if True not in best or False not in best:
        return None
    return Improvement(system=best[False][0], system_value=best[False][1],
                       baseline=best[True][0], baseline_value=best[True][1])
