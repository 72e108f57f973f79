"""Leaderboard pages and exports, in two views at separate addresses.

The public addresses render the public view whoever asks, organizers included, so
what an organizer shares or downloads there is what everyone may see.  The organizer
view (``.../organizer/``) shows everything, says so on the page, and its exports are
named ``...-organizer-view``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from leaderboard.challenges.selectors import AGGREGATE_SEALED_NOTE
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.csv_safe import csv_rows_safe
from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.paper import PAPER_FORMATS, board_tag_averages, paper_tables_build
from leaderboard.rankings.selectors import (
    ORGANIZER,
    PUBLIC,
    Board,
    board_as_records,
    board_get,
    board_payload,
    board_phases,
    phase_best_reachable,
)
from leaderboard.rankings.significance import METHOD
from leaderboard.rankings.table import (
    SIGNIFICANCE_GROUP,
    SIGNIFICANCE_LABELS,
    board_body_html,
    board_page_get,
    significance_after,
)

BoardView = Callable[[HttpRequest, str, str], HttpResponse]


def _board(request: HttpRequest, slug: str, phase_slug: str, view: str) -> Board:
    return board_get(slug=slug, phase_slug=phase_slug, viewer=request.user, view=view)


def _filename(slug: str, phase_slug: str, view: str, extension: str) -> str:
    suffix = "-organizer-view" if view == ORGANIZER else ""
    return f"{slug}-{phase_slug}-leaderboard{suffix}.{extension}"


def _in_view(render_board: Callable[[HttpRequest, str, str, str], HttpResponse], view: str) -> BoardView:
    def respond(request: HttpRequest, slug: str, phase_slug: str) -> HttpResponse:
        # Every view depends on the caller: a team's own anonymous row is named to it.
        return viewer_dependent(render_board(request, slug, phase_slug, view), confidential=view == ORGANIZER)

    respond.__name__ = f"{render_board.__name__}_{view}"
    return respond


def _page(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    board = _board(request, slug, phase_slug, view)
    groups: list[tuple[str, int]] = []
    after = significance_after(board)
    for i, column in enumerate(board.columns):
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
        if after and i + 1 == after:
            groups.append((SIGNIFICANCE_GROUP, len(SIGNIFICANCE_LABELS)))
    page = board_page_get(board, request.GET.get("page"))
    tags = board_tag_averages(board=board)
    paper = "board-organizer-paper" if view == ORGANIZER else "board-paper"
    return render(
        request,
        "rankings/board.html",
        {
            "board": board,
            "challenge": board.phase.challenge,
            "phase": board.phase,
            "groups": groups,
            "significance_after": after,
            "significance_labels": SIGNIFICANCE_LABELS,
            "significance_method": METHOD,
            "body": board_body_html(board, page.rows),
            "pages": page,
            "phases": board_phases(phase=board.phase, view=view),
            "chart": mark_safe(board_chart_svg(board)),  # built from escaped parts only
            "organizer_view": view == ORGANIZER,
            # From the gold: for the organizers only (it reads every reference).
            "best_reachable": phase_best_reachable(phase=board.phase) if view == ORGANIZER else [],
            "sealed_note": AGGREGATE_SEALED_NOTE,
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


def _csv(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    board = _board(request, slug, phase_slug, view)
    records = board_as_records(board)
    out = io.StringIO()
    fields = list(records[0]) if records else ["rank", "team"]
    # Team names and affiliations are the participants' own text: none may become a formula.
    csv.writer(out).writerows(csv_rows_safe(fields, records))
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(slug, phase_slug, view, "csv")}"'
    return response


def _json(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    response = JsonResponse(board_payload(_board(request, slug, phase_slug, view)))
    if view == ORGANIZER:
        response["Content-Disposition"] = f'inline; filename="{_filename(slug, phase_slug, view, "json")}"'
    return response


def _paper(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    """The overview paper's tables (``?format=latex|csv|md``), built from the board this viewer gets."""
    board = _board(request, slug, phase_slug, view)  # first: a board one may not see is 404 whatever the format
    fmt = request.GET.get("format", "latex")
    if fmt not in PAPER_FORMATS:
        return HttpResponse(f"format must be one of {', '.join(PAPER_FORMATS)}, not {fmt!r}\n", status=400,
                            content_type="text/plain; charset=utf-8")
    extension, content_type = PAPER_FORMATS[fmt]
    response = HttpResponse(paper_tables_build(board=board, viewer=request.user).render(fmt), content_type=content_type)
    suffix = "-organizer-view" if view == ORGANIZER else ""
    response["Content-Disposition"] = f'attachment; filename="{slug}-{phase_slug}-paper-tables{suffix}.{extension}"'
    return response


def _chart(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    board = _board(request, slug, phase_slug, view)
    response = HttpResponse(board_chart_svg(board), content_type="image/svg+xml")
    if view == ORGANIZER:
        response["Content-Disposition"] = f'inline; filename="{_filename(slug, phase_slug, view, "svg")}"'
    return response


board_page = _in_view(_page, PUBLIC)
board_csv = _in_view(_csv, PUBLIC)
board_json = _in_view(_json, PUBLIC)
board_chart = _in_view(_chart, PUBLIC)
board_paper = _in_view(_paper, PUBLIC)
board_organizer_page = _in_view(_page, ORGANIZER)
board_organizer_csv = _in_view(_csv, ORGANIZER)
board_organizer_json = _in_view(_json, ORGANIZER)
board_organizer_chart = _in_view(_chart, ORGANIZER)
board_organizer_paper = _in_view(_paper, ORGANIZER)
