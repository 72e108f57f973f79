"""A board page's content (what the page shows inside the site's frame), rendered from a board.

One function for both callers: the snapshots render every page when they build, and the page view
renders the page of a viewer whose own row is marked.
"""

from __future__ import annotations

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from leaderboard.challenges.selectors import AGGREGATE_SEALED_NOTE
from leaderboard.rankings.board_significance import METHOD
from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.paper import PAPER_FORMATS, board_tag_averages
from leaderboard.rankings.selectors import HUMAN_NOTE, ORGANIZER, Board, board_phases, phase_best_reachable
from leaderboard.rankings.table import (
    PUBLISHED_NOTE,
    SIGNIFICANCE_GROUP,
    SIGNIFICANCE_LABELS,
    board_body_html,
    board_page_get,
    significance_after,
)
from leaderboard.submissions.campaigns import campaign_summary


def board_content_html(board: Board, number: str | int | None) -> str:
    """Page ``number`` of the board's content (what the page shows inside the site's frame)."""
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
            "body": board_body_html(board, page.rows),
            "pages": page,
            "phases": board_phases(phase=phase, view=view),
            "campaign": campaign_summary(phase=phase),
            "chart": mark_safe(board_chart_svg(board)),  # built from escaped parts only
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
            "tag_rows": [(row, tags.texts(row)) for row in page.rows] if tags.groups else [],
            "paper_exports": {
                fmt: reverse(paper, kwargs={"slug": slug, "phase_slug": phase_slug}) + f"?format={fmt}"
                for fmt in PAPER_FORMATS
            },
        },
    )
