"""The rows of a board's HTML table, built in Python rather than in the template.

A board of a thousand teams and thirty columns has tens of thousands of cells; a template
tag or filter per cell (``floatformat``, ``if``, attribute lookups) made the page take
seconds, while building the same markup here takes milliseconds. The header, the layout and
the sorting script stay in ``rankings/board.html``.

Text that participants choose (team names, affiliations, failure reasons) goes through
``escape``; everything else is numbers or fixed markup.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from leaderboard.challenges.selectors import AGGREGATE_SEALED_NOTE
from leaderboard.rankings.selectors import DATASET_SEALED_NOTE, Board, BoardColumn, BoardRow


def _sealed_cell(note: str) -> str:
    return f'<td class="num sealed" data-v="-1"><span class="muted" title="{note}">sealed</span></td>'


SEALED_CELL = _sealed_cell(DATASET_SEALED_NOTE)
WITHHELD_CELL = _sealed_cell(AGGREGATE_SEALED_NOTE)
UNRANKED_SORT_KEY = 99999  # the page's script sorts rows without a rank after every ranked one


def board_body_html(board: Board) -> SafeString:
    """Every ``<tr>`` of the board's ``<tbody>``, in rank order."""
    if not board.rows:
        return mark_safe('<tr><td colspan="99">No entry yet.</td></tr>')
    return mark_safe("\n".join(_row_html(row, board.columns) for row in board.rows))


def _row_html(row: BoardRow, columns: list[BoardColumn]) -> str:
    css = " ".join(
        name for name, on in (("baseline", row.is_baseline), ("own", row.is_own), ("unranked", row.rank is None),
                              ("excluded", bool(row.excluded_reason))) if on
    )
    name = escape(row.team_name)
    system: list[str] = [name]
    if row.affiliation:
        system.append(f' <span class="muted">({escape(row.affiliation)})</span>')
    if row.is_baseline:
        system.append(' <span class="tag">baseline</span>')
    if row.is_anonymous:
        system.append(' <span class="tag">anonymous</span>')
    if row.status == "failed":
        system.append(f' <span class="tag failed" title="{escape(row.failure_reason)}">failed</span>')
    if row.excluded_reason:
        # Shown in full, not in a tooltip: why a row is not ranked is part of the board.
        system.append(' <span class="tag excluded">excluded</span>')
        system.append(f'<br><span class="excluded-reason">{escape(row.excluded_reason)}</span>')
    if row.submitted_at is not None:
        submitted = timezone.localtime(row.submitted_at)
        when = f'<td data-v="{submitted.isoformat()}">{submitted:%Y-%m-%d %H:%M}</td>'
    else:
        when = '<td data-v=""></td>'
    rank = f'<td data-v="{UNRANKED_SORT_KEY}">—</td>' if row.rank is None else f'<td data-v="{row.rank}">{row.rank}</td>'
    return (
        f'<tr class="{css}">{rank}<td data-v="{name}">{"".join(system)}</td>'
        f"{_score_cells(row, columns)}{when}</tr>"
    )


def _score_cells(row: BoardRow, columns: list[BoardColumn]) -> str:
    """``data-v`` is the sort key the page's script reads (-1 for no score)."""
    parts = []
    for c in columns:
        if c.sealed:
            parts.append(SEALED_CELL)
            continue
        if c.key in row.sealed_keys:
            parts.append(WITHHELD_CELL)
            continue
        v = row.values.get(c.key)
        css = "num primary" if c.is_primary else "num"
        if v is None:
            parts.append(f'<td class="{css}" data-v="-1">—</td>')
        else:
            parts.append(f'<td class="{css}" data-v="{v:.6f}">{fixed(v, c.decimals)}</td>')
    return "".join(parts)


def fixed(value: float, decimals: int) -> str:
    """The digits the ``floatformat`` filter shows elsewhere on the site (the submission page).

    It rounds half up the shortest decimal form of the float (84.285 -> "84.29"), where
    ``f"{value:.2f}"`` rounds the binary value (84.28499... -> "84.28"): a team must see
    the same digits on its submission page and on the board.
    """
    return f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"
