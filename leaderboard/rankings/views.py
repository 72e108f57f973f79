"""Leaderboard pages and exports."""

from __future__ import annotations

import csv
import io

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe

from leaderboard.challenges.models import Phase
from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.selectors import (
    Board,
    BoardColumn,
    BoardNotVisible,
    BoardRow,
    board_as_records,
    board_build,
)


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
    cells = [(row, mark_safe(_score_cells(row, board.columns))) for row in board.rows]
    return render(
        request,
        "rankings/board.html",
        {
            "board": board,
            "challenge": board.phase.challenge,
            "phase": board.phase,
            "groups": groups,
            "cells": cells,
            "chart": mark_safe(board_chart_svg(board)),  # built from escaped parts only
        },
    )


SEALED_CELL = (
    '<td class="num" data-v="-1"><span class="muted" title="sealed until the organizers reveal this dataset">'
    "sealed</span></td>"
)


def _score_cells(row: BoardRow, columns: list[BoardColumn]) -> str:
    """A row's score cells as HTML, built here rather than in the template.

    A board of a thousand teams and thirty columns has tens of thousands of cells, and
    template tags and filters per cell made the page take seconds. Only numbers and fixed
    text go in, so there is nothing to escape. ``data-v`` is the sort key the page's script
    reads (-1 for no score); ``f"{v:.2f}"`` rounds as the ranking's ties do.
    """
    parts = []
    for c in columns:
        if c.sealed:
            parts.append(SEALED_CELL)
            continue
        v = row.values.get(c.key)
        css = "num primary" if c.is_primary else "num"
        if v is None:
            parts.append(f'<td class="{css}" data-v="-1">—</td>')
        else:
            parts.append(f'<td class="{css}" data-v="{v:.6f}">{v:.{c.decimals}f}</td>')
    return "".join(parts)


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
