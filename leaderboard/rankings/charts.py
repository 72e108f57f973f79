"""A server-rendered SVG bar chart of per-dataset scores for the top systems (no JavaScript, no CDN)."""

from __future__ import annotations

import math
from html import escape

from leaderboard.rankings.selectors import Board, BoardRow

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
# Rough width of an 11 px sans-serif character (a little over the average, so that text sized
# with it is not cut), and the legend's swatch plus spacing.
_CHAR_PX = 6.5
_LABEL_CHAR_PX = 7.2
_LEGEND_GAP = 30
_LEGEND_LINE = 18
_LEGEND_NAME_CHARS = 28
# Dataset labels are rotated by this much below the plot: sin and cos give their depth and reach.
_LABEL_ANGLE = 35


CHART_TOP = 5  # systems the chart shows


def board_chart_rows(board: Board, *, top: int = CHART_TOP) -> list[BoardRow]:
    """The rows the chart shows: the ``top`` first ranked ones."""
    return [r for r in board.rows if r.rank is not None][:top]


def board_chart_svg(board: Board, *, top: int = CHART_TOP, metric_label: str | None = None) -> str:
    """Grouped bars: one group per dataset, one bar per top-ranked system (0-100 scale)."""
    columns = [c for c in board.columns if c.key.startswith("ds:") and not c.sealed]
    label = metric_label or (columns[0].label if columns else "")
    columns = [c for c in columns if c.label == label]
    rows = board_chart_rows(board, top=top)
    width_per_group = max(40, 14 * max(1, len(rows)) + 16)
    left, height = 40, 220
    plot_width = left + width_per_group * max(1, len(columns)) + 10
    # Room below the plot for the longest dataset label, rotated: its depth is sin(angle) of its
    # length (a long name such as "ComplexWebQuestions" ran into the legend under a fixed margin).
    angle = math.radians(_LABEL_ANGLE)
    longest = max((len(c.group) for c in columns), default=0)
    bottom = 16 + math.ceil(math.sin(angle) * _LABEL_CHAR_PX * longest) + 20
    # Room on the right for the last label, which reaches cos(angle) of its length across.
    last_label_x = plot_width - 10 - width_per_group / 2
    last_label = math.cos(angle) * _LABEL_CHAR_PX * len(columns[-1].group) if columns else 0
    width = max(plot_width, last_label_x + last_label + 10, 320)
    # The legend: one entry per system, as many to a line as fit the chart's width (a long name
    # is cut with an ellipsis; its <title> has all of it), so it never widens the chart.
    legend_lines: list[list[tuple[int, str, float]]] = [[]]
    x = float(left)
    for ri, row in enumerate(rows):
        name = row.team_name if len(row.team_name) <= _LEGEND_NAME_CHARS else row.team_name[:_LEGEND_NAME_CHARS - 1] + "…"
        entry = _LEGEND_GAP + _CHAR_PX * len(name)
        if legend_lines[-1] and x + entry > width:
            legend_lines.append([])
            x = float(left)
        legend_lines[-1].append((ri, name, x))
        x += entry
    total_height = 10 + height + bottom + _LEGEND_LINE * len(legend_lines) + 6
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{total_height:.0f}" '
        f'role="img" aria-label="{escape(label)} per dataset for the top systems" font-family="sans-serif" font-size="11">'
    ]
    for tick in range(0, 101, 20):
        y = 10 + height - tick * height / 100
        parts.append(f'<line x1="{left}" x2="{plot_width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    bar = (width_per_group - 16) / max(1, len(rows))
    for gi, column in enumerate(columns):
        x0 = left + gi * width_per_group + 8
        for ri, row in enumerate(rows):
            value = row.values.get(column.key)
            if value is None:
                continue
            h = max(0.0, min(100.0, value)) * height / 100
            parts.append(
                f'<rect x="{x0 + ri * bar:.1f}" y="{10 + height - h:.1f}" width="{bar - 1:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[ri % len(PALETTE)]}"><title>{escape(row.team_name)}: {value:.2f}</title></rect>'
            )
        cx = x0 + (width_per_group - 16) / 2
        parts.append(
            f'<text class="dataset" transform="translate({cx:.1f},{height + 16}) rotate({_LABEL_ANGLE})" text-anchor="start">'
            f"{escape(column.group)}</text>"
        )
    parts.append('<g class="legend">')
    for li, line in enumerate(legend_lines):
        ly = 10 + height + bottom + li * _LEGEND_LINE
        for ri, name, lx in line:
            parts.append(f'<rect x="{lx:.1f}" y="{ly}" width="10" height="10" fill="{PALETTE[ri % len(PALETTE)]}"/>')
            parts.append(f'<text x="{lx + 14:.1f}" y="{ly + 9}"><title>{escape(rows[ri].team_name)}</title>'
                         f"{escape(name)}</text>")
    parts.append("</g></svg>")
    return "".join(parts)
