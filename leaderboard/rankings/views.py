"""Leaderboard pages and exports, in two views at separate addresses.

The public addresses render the public view whoever asks, organizers included, so
what an organizer shares or downloads there is what everyone may see.  The organizer
view (``.../organizer/``) shows everything, says so on the page, and its exports are
named ``...-organizer-view``.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.messages import get_messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.safestring import mark_safe

from leaderboard.challenges.models import SYSTEM_KINDS
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import NotFound
from leaderboard.rankings.budget_boards import AXIS_OF, budget_boards_build, figure_text
from leaderboard.rankings.paper import PAPER_FORMATS, paper_tables_build
from leaderboard.rankings.selectors import ORGANIZER, PUBLIC, Board, board_get
from leaderboard.rankings.snapshots import (
    BoardAccess,
    board_access_get,
    board_chart_for,
    board_csv_for,
    board_json_for,
    board_page_for,
)

BoardView = Callable[[HttpRequest, str, str], HttpResponse]


def _board(request: HttpRequest, slug: str, phase_slug: str, view: str) -> Board:
    try:
        return board_get(slug=slug, phase_slug=phase_slug, viewer=request.user, view=view)
    except NotFound as exc:
        raise Http404(exc.message) from None


def _filename(slug: str, phase_slug: str, view: str, extension: str) -> str:
    suffix = "-organizer-view" if view == ORGANIZER else ""
    return f"{slug}-{phase_slug}-leaderboard{suffix}.{extension}"


def _in_view(render_board: Callable[[HttpRequest, str, str, str], HttpResponse], view: str) -> BoardView:
    def respond(request: HttpRequest, slug: str, phase_slug: str) -> HttpResponse:
        # Every view depends on the caller: a team's own anonymous row is named to it.
        return viewer_dependent(render_board(request, slug, phase_slug, view), confidential=view == ORGANIZER)

    respond.__name__ = f"{render_board.__name__}_{view}"
    return respond


def _access(request: HttpRequest, slug: str, phase_slug: str, view: str) -> BoardAccess:
    try:
        return board_access_get(slug=slug, phase_slug=phase_slug, viewer=request.user, view=view)
    except NotFound as exc:
        raise Http404(exc.message) from None


def _unchanged(request: HttpRequest, etag: str) -> HttpResponse | None:
    """A 304 when the client holds this version of this answer (its ETag).  No Last-Modified: a
    date cannot tell two changes within one second apart, nor one viewer's answer from another's."""
    return get_conditional_response(request, etag=etag)


def _validators(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    # Asked again every time (a 304 costs a few ms): a browser must not show a board from its
    # cache, by its own heuristics, after a change.
    patch_cache_control(response, no_cache=True)
    return response


def _page(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    access = _access(request, slug, phase_slug, view)
    # The page's frame names the user (and carries their CSRF token): their ETag is their own.
    etag = access.etag("page", extra=f"{request.GET.get('page', '')}:{request.user.pk or 0}")
    # A message waiting for the user is shown once, on the next page: not a page for a 304.
    if not get_messages(request) and (unchanged := _unchanged(request, etag)) is not None:
        return unchanged
    content = board_page_for(access, request.GET.get("page"))
    response = render(request, "rankings/board.html", {
        "content": mark_safe(content),  # rendered from the template, with autoescaping, when the snapshot was built
        "challenge": access.phase.challenge, "phase": access.phase,
        # Systems run here have measured costs: their budget page (none for a board of prediction files).
        "budgets_url": reverse("board-organizer-budgets" if view == ORGANIZER else "board-budgets",
                               args=[slug, phase_slug])
        if access.phase.budget_tracks or any(k in SYSTEM_KINDS for k in access.phase.allowed_kinds) else "",
    })
    return _validators(response, etag)


def _served(request: HttpRequest, access: BoardAccess, part: str, body: Callable[[BoardAccess], bytes],
            content_type: str) -> HttpResponse:
    etag = access.etag(part)
    if (unchanged := _unchanged(request, etag)) is not None:
        return unchanged
    return _validators(HttpResponse(body(access), content_type=content_type), etag)


def _csv(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    response = _served(request, _access(request, slug, phase_slug, view), "csv", board_csv_for,
                       "text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(slug, phase_slug, view, "csv")}"'
    return response


def board_json_served(request: HttpRequest, access: BoardAccess) -> HttpResponse:
    """The board's JSON (the export and the API's answer), or a 304; marked as the caller's own."""
    return viewer_dependent(_served(request, access, "json", board_json_for, "application/json"),
                            confidential=access.view == ORGANIZER)


def _json(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    response = board_json_served(request, _access(request, slug, phase_slug, view))
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
    response = _served(request, _access(request, slug, phase_slug, view), "svg", board_chart_for, "image/svg+xml")
    if view == ORGANIZER:
        response["Content-Disposition"] = f'inline; filename="{_filename(slug, phase_slug, view, "svg")}"'
    return response


def _budgets(request: HttpRequest, slug: str, phase_slug: str, view: str) -> HttpResponse:
    """The phase's budget tracks and cost-versus-score charts, from the board this viewer gets."""
    budgets = budget_boards_build(board=_board(request, slug, phase_slug, view))
    entries = [(e, [(axis, figure_text(axis, e.figures.get(axis.key)), e.withheld.get(axis.key, ""))
                    for axis in AXIS_OF.values()]) for e in budgets.entries]
    tracks = [(t, [(r, [(AXIS_OF[k], figure_text(AXIS_OF[k], v)) for k, v in r.over.items()],
                    [AXIS_OF[k].label.lower() for k in r.unknown]) for r in t.rows],
               [(AXIS_OF[k], figure_text(AXIS_OF[k], v)) for k, v in t.track.limits.items()])
              for t in budgets.tracks]
    return render(request, "rankings/budgets.html", {
        "challenge": budgets.board.phase.challenge, "phase": budgets.board.phase, "budgets": budgets,
        "axes": list(AXIS_OF.values()), "entries": entries, "tracks": tracks,
        "charts": [(axis, mark_safe(svg)) for axis, svg in budgets.charts],  # built from escaped parts only
        "organizer_view": view == ORGANIZER,
    })


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
board_budgets = _in_view(_budgets, PUBLIC)
board_organizer_budgets = _in_view(_budgets, ORGANIZER)
