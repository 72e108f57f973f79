"""Tables as text: LaTeX (booktabs), CSV and Markdown, for papers and for people.

Plain typed functions on plain data.  The board's paper tables (``leaderboard.rankings.paper``)
and ``python -m scoring metaeval --format`` build :class:`Table` values and this module only
writes them down, so each format holds exactly the cells that were built.  Every text cell
(team names, affiliations, dataset names and tags are other people's words) is escaped for its
format; a CSV cell goes through :func:`csv_cell_safe`, as in the board's own CSV export.

Numbers are written with the digits the site shows (:func:`fixed`: half up on the shortest
decimal form), the same in all three formats.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any


def fixed(value: float, decimals: int) -> str:
    """A score with ``decimals`` digits, as every page, export and paper table shows it.

    It rounds half up the shortest decimal form of the float (84.285 -> "84.29"), where
    ``f"{value:.2f}"`` rounds the binary value (84.28499... -> "84.28"): a team must see
    the same digits on its submission page, on the board and in the paper.  A whole-number
    metric (a count, milliseconds) has 0 decimals: its column says so (``Column.decimals``).
    """
    return f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"


# CSV cells a spreadsheet will not run as a formula (OWASP, "CSV Injection").  Excel, LibreOffice
# and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula, and
# some also after a leading tab or carriage return: a team named ``=HYPERLINK(...)`` would become a
# live link in the spreadsheet of whoever opens an export.  Such a cell gets a leading apostrophe,
# which spreadsheets show as text and do not display.  A plain number keeps its form (``-3.5`` must
# stay a number someone can sort and add), and values that are numbers in Python are never touched.
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


# A cell: text (escaped when written), a whole number, a score, or None for no value.
Cell = str | int | float | None

LATEX_EMPTY = "--"
MARKDOWN_EMPTY = "—"


@dataclass(frozen=True)
class Column:
    label: str
    numeric: bool = True
    decimals: int = 2
    # A header spanning the consecutive columns that share it (the phase: "Development", "Test").
    group: str = ""
    # A difference: written with its sign ("+10.70").
    signed: bool = False

    @property
    def flat_label(self) -> str:
        """The label where a format has one header row (CSV, Markdown)."""
        return f"{self.group} {self.label}" if self.group else self.label


@dataclass(frozen=True)
class Table:
    key: str  # the end of its LaTeX label: "main", "appendix", "tags", ...
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    # The caption's sentences after the title (what a mark means, what is withheld and why).
    notes: tuple[str, ...] = ()


def _number(value: int | float, column: Column) -> str:
    if isinstance(value, int):
        return str(value)
    text = fixed(value, column.decimals)
    if column.signed and not text.startswith("-") and Decimal(text) != 0:
        return "+" + text
    return text


def _plain(text: str) -> str:
    # One line: a newline in a cell ends a Markdown row and, doubled, a LaTeX paragraph inside a tabular.
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


# --------------------------------------------------------------------------- LaTeX

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    # In LaTeX's default (OT1) font encoding these print as other glyphs (< as an inverted !).
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    # The baselines' mark, as a command: not every LaTeX set-up reads it as UTF-8.
    "\u2020": r"\textdagger{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in _plain(text))


def _latex_cell(value: Cell, column: Column) -> str:
    if value is None:
        return LATEX_EMPTY
    if isinstance(value, str):
        return latex_escape(value)
    text = _number(value, column)
    # A hyphen is not a minus sign in text mode.
    return "$-$" + text[1:] if text.startswith("-") else text


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _runs(columns: Sequence[Column]) -> list[tuple[str, int, int]]:
    """(group, first column index, count) of each run of consecutive columns with one group."""
    runs: list[tuple[str, int, int]] = []
    for i, column in enumerate(columns):
        if runs and runs[-1][0] == column.group:
            group, start, count = runs[-1]
            runs[-1] = (group, start, count + 1)
        else:
            runs.append((column.group, i, 1))
    return runs


def table_latex(table: Table, *, label: str) -> str:
    """One ``table`` float: a booktabs tabular, its caption (title and notes) and ``label``."""
    caption = " ".join(latex_escape(_sentence(text)) for text in (table.title, *table.notes))
    if not table.columns:
        # Nothing to tabulate (no tags, no correlation): the reason, as a comment to read.
        return f"% {caption}"
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{" + "".join("r" if c.numeric else "l" for c in table.columns) + "}",
        r"\toprule",
    ]
    if any(column.group for column in table.columns):
        cells: list[str] = []
        rules: list[str] = []
        for group, start, count in _runs(table.columns):
            if group:
                cells.append(rf"\multicolumn{{{count}}}{{c}}{{{latex_escape(group)}}}")
                rules.append(rf"\cmidrule(lr){{{start + 1}-{start + count}}}")
            else:
                cells += [""] * count
        lines.append(" & ".join(cells) + r" \\")
        lines.append(" ".join(rules))
    lines.append(" & ".join(latex_escape(column.label) for column in table.columns) + r" \\")
    lines.append(r"\midrule")
    for row in table.rows:
        lines.append(" & ".join(_latex_cell(v, c) for v, c in zip(row, table.columns, strict=True)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}}}", rf"\label{{{label}}}", r"\end{table}"]
    return "\n".join(lines)


def tables_latex(tables: Sequence[Table], *, title: str, preamble: Sequence[str] = (), label_prefix: str) -> str:
    """The tables one after another, each labelled ``tab:<label_prefix>-<key>``, after comment lines."""
    head = [f"% {latex_escape(title)}", *(f"% {latex_escape(line)}" for line in preamble),
            r"% Requires \usepackage{booktabs} in the preamble."]
    body = [table_latex(table, label=f"tab:{label_prefix}-{table.key}") for table in tables]
    return "\n\n".join(["\n".join(head), *body]) + "\n"


# --------------------------------------------------------------------------- Markdown

# What would start emphasis, code, a link, HTML or an entity, or end a table cell.
_MARKDOWN_SPECIAL = set("\\`*_[]<>|&~")


def markdown_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in _plain(text))


def _markdown_cell(value: Cell, column: Column) -> str:
    if value is None:
        return MARKDOWN_EMPTY
    if isinstance(value, str):
        return markdown_escape(value)
    return _number(value, column)


def table_markdown(table: Table) -> str:
    lines = [f"## {markdown_escape(table.title)}", ""]
    if table.columns:
        lines.append("| " + " | ".join(markdown_escape(c.flat_label) for c in table.columns) + " |")
        lines.append("| " + " | ".join("---:" if c.numeric else ":---" for c in table.columns) + " |")
        for row in table.rows:
            lines.append("| " + " | ".join(_markdown_cell(v, c) for v, c in zip(row, table.columns, strict=True)) + " |")
        lines.append("")
    if table.notes:
        lines.append(" ".join(markdown_escape(_sentence(note)) for note in table.notes))
        lines.append("")
    return "\n".join(lines)


def tables_markdown(tables: Sequence[Table], *, title: str, preamble: Sequence[str] = ()) -> str:
    head = [f"# {markdown_escape(title)}", ""]
    for line in preamble:
        head += [markdown_escape(line), ""]
    return "\n".join(head) + "\n" + "\n".join(table_markdown(table) for table in tables)


# --------------------------------------------------------------------------- CSV


def _csv_cell(value: Cell, column: Column) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return str(csv_cell_safe(_plain(value)))
    return _number(value, column)


def tables_csv(tables: Sequence[Table], *, title: str, preamble: Sequence[str] = ()) -> str:
    """Each table as a block: its title, its header, its rows, its notes, and a blank line."""
    out = io.StringIO()
    writer = csv.writer(out)
    for line in (title, *preamble):
        writer.writerow([csv_cell_safe(_plain(line))])
    writer.writerow([])
    for table in tables:
        writer.writerow([csv_cell_safe(_plain(table.title))])
        if table.columns:
            writer.writerow([csv_cell_safe(_plain(c.flat_label)) for c in table.columns])
            for row in table.rows:
                writer.writerow([_csv_cell(v, c) for v, c in zip(row, table.columns, strict=True)])
        for note in table.notes:
            writer.writerow([csv_cell_safe(_plain(note))])
        writer.writerow([])
    return out.getvalue()
