"""A board page's content (what the page shows inside the site's frame), rendered from a board.

One renderer for both callers: the snapshots render every page when they build, with the places
that change for a viewer whose own row is on the board (``board_content_slots``), and the page of
such a viewer is the stored page with their own parts put in those places.  ``board_content_html``
renders a viewer's page whole: it is what that splice must equal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from leaderboard.challenges.selectors import AGGREGATE_SEALED_NOTE
from leaderboard.rankings.board_significance import METHOD
from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.paper import PAPER_FORMATS, board_tag_averages
from leaderboard.rankings.selectors import (
    HUMAN_NOTE,
    ORGANIZER,
    Board,
    BoardRow,
    board_phases,
    phase_best_reachable,
)
from leaderboard.rankings.table import (
    PUBLISHED_NOTE,
    SIGNIFICANCE_GROUP,
    SIGNIFICANCE_LABELS,
    board_body_html,
    board_page_get,
    significance_after,
)
from leaderboard.submissions.campaigns import campaign_summary

OWN_LINK_TEMPLATE = "rankings/board_own_link.html"
# Marks around a slot while a page is rendered for its snapshot: "\0kind:team\1...\2".  Control
# characters no template writes, and no team's name or affiliation may hold (core.display's
# shown_text_problem); a row stored before that rule which holds one makes the page unslotted.
_OPEN, _MID, _CLOSE = "\x00", "\x01", "\x02"
ROW, NAME, CHART, OWN_LINK = "row", "name", "chart", "own_link"


@dataclass(frozen=True)
class Slot:
    """A part of a stored page that changes for a viewer whose own row is on the board."""

    kind: str  # ROW (their row), NAME (their name in the tag table), CHART, OWN_LINK (empty: where it goes)
    team_id: int  # 0 for CHART and OWN_LINK
    start: int
    end: int


def board_content_html(board: Board, number: str | int | None) -> str:
    """Page ``number`` of the board's content (what the page shows inside the site's frame)."""
    return _content(board, number, marked=False)


def board_content_slots(board: Board, number: int) -> tuple[str, list[Slot] | None]:
    """Page ``number`` as ``board_content_html`` renders it, and its slots (None when the page's
    text holds a character of the marks: such a page is rendered whole for a viewer with a row)."""
    marked = _content(board, number, marked=True)
    slots: list[Slot] = []
    out: list[str] = []
    at = 0  # in ``marked``
    length = 0  # of ``out``
    while (open_at := marked.find(_OPEN, at)) != -1:
        mid = marked.find(_MID, open_at)
        close = marked.find(_CLOSE, mid)
        kind, _, team = marked[open_at + 1:mid].partition(":")
        if mid == -1 or close == -1 or not team.isdigit():
            return board_content_html(board, number), None
        out.append(marked[at:open_at])
        length += open_at - at
        slots.append(Slot(kind=kind, team_id=int(team), start=length, end=length + close - mid - 1))
        out.append(marked[mid + 1:close])
        length += close - mid - 1
        at = close + 1
    out.append(marked[at:])
    html = "".join(out)
    if any(c in html for c in (_OPEN, _MID, _CLOSE)):
        return board_content_html(board, number), None
    return html, slots


def board_own_link_html(*, own_page: int, own_rank: int | None) -> str:
    """The link to a viewer's own row on another page, as the page's template includes it."""
    return render_to_string(OWN_LINK_TEMPLATE, {"pages": {"own_page": own_page, "own_rank": own_rank}})


def _mark(kind: str, team_id: int, text: str) -> str:
    return f"{_OPEN}{kind}:{team_id}{_MID}{text}{_CLOSE}"


def _named(row: BoardRow) -> BoardRow:
    # Escaped as the template escapes the name, inside the marks (which escaping leaves alone).
    return replace(row, team_name=_mark(NAME, row.team_id, row.team_name))


def _content(board: Board, number: str | int | None, *, marked: bool) -> str:
    phase = board.phase
    slug, phase_slug, view = phase.challenge.slug, phase.slug, board.view
    groups: list[tuple[str, int]] = []
    after = significance_after(board)
    for i, column in enumerate(board.columns):
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
        if after and i + 1 == after:
            groups.append((SIGNIFICANCE_GROUP, len(SIGNIFICANCE_LABELS)))
    page = board_page_get(board, number)
    tags = board_tag_averages(board=board)
    paper = "board-organizer-paper" if view == ORGANIZER else "board-paper"
    chart = board_chart_svg(board)
    slotted: dict[str, Any] = {
        "body": board_body_html(board, page.rows, wrap=lambda row, html: _mark(ROW, row.team_id, html)),
        "chart": mark_safe(_mark(CHART, 0, chart)),  # built from escaped parts only
        "own_link_slot": _mark(OWN_LINK, 0, ""),
        "tag_rows": [(_named(row), tags.texts(row)) for row in page.rows] if tags.groups else [],
    } if marked else {
        "body": board_body_html(board, page.rows),
        "chart": mark_safe(chart),  # built from escaped parts only
        "own_link_slot": "",
        "tag_rows": [(row, tags.texts(row)) for row in page.rows] if tags.groups else [],
    }
    return render_to_string(
        "rankings/board_content.html",
        {
            "board": board,
            "challenge": phase.challenge,
            "phase": phase,
            "groups": groups,
            "significance_after": after,
            "significance_labels": SIGNIFICANCE_LABELS,
            "significance_method": METHOD,
            "pages": page,
            "phases": board_phases(phase=phase, view=view),
            "campaign": campaign_summary(phase=phase),
            "organizer_view": view == ORGANIZER,
            # From the gold: for the organizers only (it reads every reference).
            "best_reachable": phase_best_reachable(phase=phase) if view == ORGANIZER else [],
            "sealed_note": AGGREGATE_SEALED_NOTE,
            "published_note": PUBLISHED_NOTE,
            "human_note": HUMAN_NOTE,
            "exports": {
                kind: reverse(f"{name}-{kind}", kwargs={"slug": slug, "phase_slug": phase_slug})
                for name in ["board-organizer" if view == ORGANIZER else "board"]
                for kind in ("csv", "json")
            },
            "public_url": reverse("board", kwargs={"slug": slug, "phase_slug": phase_slug}),
            # Only when some dataset of the board has tags this viewer may read.
            "tag_averages": tags if tags.groups else None,
            "paper_exports": {
                fmt: reverse(paper, kwargs={"slug": slug, "phase_slug": phase_slug}) + f"?format={fmt}"
                for fmt in PAPER_FORMATS
            },
            **slotted,
        },
    )
