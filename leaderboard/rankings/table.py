"""The rows of a board's HTML table, built in Python rather than in the template.

A board of a thousand teams and thirty columns has tens of thousands of cells; a template
tag or filter per cell (``floatformat``, ``if``, attribute lookups) made the page take
seconds, while building the same markup here takes milliseconds. The header, the layout and
the sorting script stay in ``rankings/board.html``.

Text that participants choose (team names, affiliations, failure reasons) goes through
``escape``; everything else is numbers or fixed markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from leaderboard.challenges.selectors import AGGREGATE_SEALED_NOTE
from leaderboard.core.display import fixed, interval_text  # one rounding for the site and the paper
from leaderboard.rankings.board_significance import RowSignificance, Significance
from leaderboard.rankings.selectors import (
    DATASET_SEALED_NOTE,
    HUMAN_KEY,
    HUMAN_NOTE,
    WITHHELD_SIGNIFICANCE,
    Board,
    BoardColumn,
    BoardRow,
)


def _sealed_cell(note: str) -> str:
    return f'<td class="num sealed" data-v="-1"><span class="muted" title="{note}">sealed</span></td>'


SEALED_CELL = _sealed_cell(DATASET_SEALED_NOTE)
WITHHELD_CELL = _sealed_cell(AGGREGATE_SEALED_NOTE)
# One sentence for a published result's date: the board header, its cell's title and the tests.
PUBLISHED_NOTE = "dates marked published are the publication dates of the results, not upload times"
PUBLISHED_TITLE = "the day these results were published (not an upload time)"
COVERAGE_NOTE = "answered only some of the ranked datasets; each one it did not answer counts 0 in its average"
UNRANKED_SORT_KEY = 99999  # the page's script sorts rows without a rank after every ranked one
# A board's page shows this many rows: a thousand rows of thirty columns is a page no phone (and
# few people) can use.  The exports and the API always hold the whole board.
BOARD_PAGE_ROWS = 100


@dataclass(frozen=True)
class BoardPage:
    """One page of a board's rows; the rows keep their ranks on the whole board."""

    rows: Sequence[BoardRow]
    number: int
    count: int  # how many pages
    first: int  # the position on the whole board of the first row shown (1-based)
    last: int
    total: int
    # The page numbers to link, with None where some are left out (1 2 3 4 5 ... 10).
    links: list[int | None]
    # Where the viewer's own team's row is, when that is on another page.
    own_rank: int | None = None
    own_page: int | None = None


def board_page_get(board: Board, number: str | int | None, *, per_page: int = BOARD_PAGE_ROWS) -> BoardPage:
    """The rows of page ``number`` (the first page for a missing or malformed number, the last
    for one past the end: a link to a board that has shrunk still shows rows)."""
    paginator = Paginator(board.rows, per_page)
    page = paginator.get_page(number)
    links = [n if isinstance(n, int) else None
             for n in paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)]
    own = next((i for i, row in enumerate(board.rows) if row.is_own), None)
    elsewhere = own is not None and own // per_page + 1 != page.number
    return BoardPage(
        rows=list(page.object_list), number=page.number, count=paginator.num_pages,
        first=page.start_index(), last=page.end_index(), total=paginator.count, links=links,
        own_rank=board.rows[own].rank if own is not None and elsewhere else None,
        own_page=own // per_page + 1 if own is not None and elsewhere else None,
    )


LEVEL_LABEL = "95% CI"
SIGNIFICANCE_GROUP = "Significance"
SIGNIFICANCE_LABELS = ("95% CI", "p vs leader", "Rank range")


def significance_after(board: Board) -> int:
    """How many score columns come before the significance columns (0: the board has none):
    they follow the group of the ranking column."""
    if board.significance.status == "none":
        return 0
    primary = next((c for c in board.columns if c.key == board.primary_key), None)
    if primary is None:
        return 0
    return max(i + 1 for i, c in enumerate(board.columns) if c.group == primary.group)


def board_body_html(board: Board, rows: Sequence[BoardRow] | None = None, *,
                    wrap: Callable[[BoardRow, str], str] | None = None) -> SafeString:
    """Every ``<tr>`` of the board's ``<tbody>`` (or of ``rows``, a page of it), in rank order;
    ``wrap`` is given each row and its ``<tr>`` and returns what goes in its place."""
    if not board.rows:
        return mark_safe('<tr><td colspan="99">No entry yet.</td></tr>')
    shown = board.rows if rows is None else rows
    if wrap is None:
        return mark_safe("\n".join(_row_html(row, board) for row in shown))
    return mark_safe("\n".join(wrap(row, _row_html(row, board)) for row in shown))


def board_row_html(board: Board, row: BoardRow) -> str:
    """One row's ``<tr>``, as ``board_body_html`` writes it (a row given alone, to splice in)."""
    return _row_html(row, board)


def _row_html(row: BoardRow, board: Board) -> str:
    css = " ".join(
        name for name, on in (("baseline", row.is_baseline), ("own", row.is_own), ("unranked", row.rank is None),
                              ("excluded", bool(row.excluded_reason))) if on
    )
    name = escape(row.team_name)
    # One line per row: a long name (and affiliation) is cut with an ellipsis, its whole text
    # in the title, so it no longer wraps into four lines; the tags after it stay visible.
    full = f"{row.team_name} ({row.affiliation})" if row.affiliation else row.team_name
    system: list[str] = [f'<div class="system-line"><span class="who" title="{escape(full)}">{name}']
    if row.affiliation:
        system.append(f' <span class="muted">({escape(row.affiliation)})</span>')
    system.append("</span>")
    if row.is_baseline:
        system.append(' <span class="tag">baseline</span>')
    if row.is_anonymous:
        system.append(' <span class="tag">anonymous</span>')
    if row.coverage:
        system.append(f' <span class="tag coverage" title="{COVERAGE_NOTE}">{escape(row.coverage)}</span>')
    if row.status == "failed":
        system.append(f' <span class="tag failed" title="{escape(row.failure_reason)}">failed</span>')
    if row.excluded_reason:
        system.append(' <span class="tag excluded">excluded</span>')
    system.append("</div>")
    if row.excluded_reason:
        # Shown in full (it wraps), not in a tooltip: why a row is not ranked is part of the board.
        system.append(f'<div class="excluded-reason">{escape(row.excluded_reason)}</div>')
    if row.published_on is not None:
        # A published result is dated as published (the header says so), not by its upload.
        when = (f'<td class="when published" data-v="{row.published_on.isoformat()}" title="{PUBLISHED_TITLE}">'
                f'{row.published_on:%Y-%m-%d} <span class="muted">published</span></td>')
    elif row.submitted_at is not None:
        submitted = timezone.localtime(row.submitted_at)
        when = f'<td class="when" data-v="{submitted.isoformat()}">{submitted:%Y-%m-%d %H:%M}</td>'
    else:
        when = '<td class="when" data-v=""></td>'
    # "rank" and "system" cells stay in view when a wide board scrolls sideways (site.css).
    sig = (board.significance.rows.get(row.submission_id)
           if board.significance.ready and not board.significance_withheld else None)
    tied = ""
    if sig is not None and row.rank is not None and sig.group is not None and sig.group != row.rank:
        # Short, to fit the narrow sticky rank column; the title says it in full.
        tied = (f'<div class="rank-group" title="tied with #{sig.group}: not significantly different from the '
                f'row above">tied #{sig.group}</div>')
    rank = (f'<td class="rank" data-v="{UNRANKED_SORT_KEY}">—</td>' if row.rank is None
            else f'<td class="rank" data-v="{row.rank}">{row.rank}{tied}</td>')
    return (
        f'<tr class="{css}">{rank}<td class="system" data-v="{name}">{"".join(system)}</td>'
        f"{_score_cells(row, board)}{when}</tr>"
    )


def _significance_cells(row: BoardRow, board: Board) -> str:
    significance: Significance = board.significance
    if board.significance_withheld:
        cell = f'<td class="num sealed" data-v="-1"><span class="muted" title="{WITHHELD_SIGNIFICANCE}">sealed</span></td>'
        return cell * 3
    if not significance.ready:
        return '<td class="num muted" data-v="-1" title="being computed">…</td>' * 3
    sig = significance.rows.get(row.submission_id)
    if sig is None:  # unranked rows are not compared
        return '<td class="num" data-v="-1">—</td>' * 3
    if sig.note:
        return f'<td class="num muted" data-v="-1" title="{escape(sig.note)}">n/a</td>' + \
            '<td class="num" data-v="-1">—</td>' * 2
    assert sig.ci is not None and sig.rank_range is not None
    low, high = sig.rank_range
    ranks = f"{low}" if low == high else f"{low}–{high}"
    range_cell = f'<td class="num" data-v="{low}">{ranks}</td>'
    decimals = next((c.decimals for c in board.columns if c.key == board.primary_key), 2)
    ci = f'<td class="num ci" data-v="{sig.ci[0]:.6f}">{interval_text(*sig.ci, decimals) or "—"}</td>'
    p = ('<td class="num" data-v="-1">leader</td>' if sig.p_value is None
         else f'<td class="num" data-v="{sig.p_value:.6f}">{_p_text(sig.p_value)}</td>')
    return ci + p + range_cell


def _p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _score_cells(row: BoardRow, board: Board) -> str:
    """``data-v`` is the sort key the page's script reads (-1 for no score)."""
    columns = board.columns
    after = significance_after(board)
    sig = (board.significance.rows.get(row.submission_id)
           if board.significance.ready and not board.significance_withheld else None)
    parts = []
    for i, c in enumerate(columns):
        if after and i == after:
            parts.append(_significance_cells(row, board))
        if c.sealed:
            parts.append(SEALED_CELL)
            continue
        if c.key in row.sealed_keys:
            parts.append(WITHHELD_CELL)
            continue
        if c.key == HUMAN_KEY:
            parts.append(_human_cell(row))
            continue
        v = row.values.get(c.key)
        css = "num primary" if c.is_primary else "num"
        if v is None:
            parts.append(f'<td class="{css}" data-v="-1">—</td>')
        else:
            parts.append(f'<td class="{css}"{_interval_title(c, sig, board)} data-v="{v:.6f}">'
                         f"{fixed(v, c.decimals)}</td>")
    if after == len(columns):
        parts.append(_significance_cells(row, board))
    return "".join(parts)


def _human_cell(row: BoardRow) -> str:
    """The row's human score, with its n and interval under it (the column's header says what it is)."""
    human = row.human
    if human is None:
        return '<td class="num human" data-v="-1">—</td>'
    interval = interval_text(human.low, human.high, 2)
    detail = f"n {human.n}" + (f" · {interval}" if interval else "")
    return (f'<td class="num human" data-v="{human.mean:.6f}" title="{escape(HUMAN_NOTE)}">{fixed(human.mean, 2)}'
            f'<div class="human-detail muted">{detail}</div></td>')


def _interval_title(column: BoardColumn, sig: RowSignificance | None, board: Board) -> str:
    """A dataset column of the ranking metric carries its interval on hover (not a column of its own)."""
    kind, _, rest = column.key.partition(":")
    if kind != "ds" or sig is None or not board.ranked_metric:
        return ""
    ds_pk, _, metric = rest.partition(":")
    interval = sig.datasets.get(int(ds_pk)) if metric == board.ranked_metric else None
    text = "" if interval is None else interval_text(*interval, column.decimals)
    return f' title="{LEVEL_LABEL} {text}"' if text else ""
