"""Leaderboard pages and exports."""

from __future__ import annotations

import csv
import io

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe

from leaderboard.challenges.models import Phase
from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.selectors import Board, BoardNotVisible, board_as_records, board_build
from leaderboard.rankings.table import board_body_html


def _board(request: HttpRequest, slug: str, phase_slug: str) -> Board:
    phase = get_object_or_404(
        Phase.objects.select_related("challenge"), challenge__slug=slug, challenge__is_public=True, slug=phase_slug
    )
    try:
        return board_build(phase=phase, viewer=request.user)
    except BoardNotVisible as exc:
        raise Http404(str(exc)) from None


def board_page(request: HttpRequest, slug: str, phase_slug: str) -> HttpResponse:
    board = _board(request, slug, phase_slug)
    groups: list[tuple[str, int]] = []
    for column in board.columns:
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
    return render(
        request,
        "rankings/board.html",
        {
            "board": board,
            "challenge": board.phase.challenge,
            "phase": board.phase,
            "groups": groups,
            "body": board_body_html(board),
            "chart": mark_safe(board_chart_svg(board)),  # built from escaped parts only
        },
    )


def board_csv(request: HttpRequest, slug: str, phase_slug: str) -> HttpResponse:
    board = _board(request, slug, phase_slug)
    records = board_as_records(board)
    out = io.StringIO()
    fields = list(records[0]) if records else ["rank", "team"]
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    writer.writerows(records)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slug}-{phase_slug}-leaderboard.csv"'
    return response


def board_json(request: HttpRequest, slug: str, phase_slug: str) -> JsonResponse:
    board = _board(request, slug, phase_slug)
    return JsonResponse(
        {
            "challenge": slug,
            "phase": phase_slug,
            "ranked_by": board.primary_key.removeprefix("agg:"),
            "rows": board_as_records(board),
        }
    )


def board_chart(request: HttpRequest, slug: str, phase_slug: str) -> HttpResponse:
    board = _board(request, slug, phase_slug)
    return HttpResponse(board_chart_svg(board), content_type="image/svg+xml")
