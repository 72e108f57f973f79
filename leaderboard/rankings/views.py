"""Leaderboard pages and exports."""

from __future__ import annotations

import csv
import io

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe

from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.selectors import Board, board_as_records, board_get, board_payload
from leaderboard.rankings.table import board_body_html


def _board(request: HttpRequest, slug: str, phase_slug: str) -> Board:
    return board_get(slug=slug, phase_slug=phase_slug, viewer=request.user)


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
    return JsonResponse(board_payload(_board(request, slug, phase_slug)))


def board_chart(request: HttpRequest, slug: str, phase_slug: str) -> HttpResponse:
    board = _board(request, slug, phase_slug)
    return HttpResponse(board_chart_svg(board), content_type="image/svg+xml")
