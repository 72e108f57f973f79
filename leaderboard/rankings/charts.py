"""A server-rendered SVG bar chart of per-dataset scores for the top systems (no JavaScript, no CDN)."""

from __future__ import annotations

from html import escape

from leaderboard.rankings.selectors import Board

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
# Rough width of an 11 px sans-serif character, and the legend's swatch plus spacing.
_CHAR_PX = 6.5
_LEGEND_GAP = 30


def board_chart_svg(board: Board, *, top: int = 5, metric_label: str | None = None) -> str:
    """Grouped bars: one group per dataset, one bar per top-ranked system (0-100 scale)."""
    columns = [c for c in board.columns if c.key.startswith("ds:") and not c.sealed]
    label = metric_label or (columns[0].label if columns else "")
    columns = [c for c in columns if c.label == label]
    rows = [r for r in board.rows if r.rank is not None][:top]
    width_per_group = max(40, 14 * max(1, len(rows)) + 16)
    left, bottom, height = 40, 90, 220
    plot_width = left + width_per_group * max(1, len(columns)) + 10
    # Room for what sticks out of the plot: the last dataset label (rotated 35 degrees,
    # so cos 35 = 0.82 of its length across) and the legend (one entry per system, in a row).
    last_label_x = plot_width - 10 - width_per_group / 2
    last_label = 0.82 * _CHAR_PX * len(columns[-1].group) if columns else 0
    legend = [row.team_name[:24] for row in rows]
    legend_width = left + sum(_LEGEND_GAP + _CHAR_PX * len(name) for name in legend)
    width = max(plot_width, last_label_x + last_label + 10, legend_width)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height + bottom + 40}" '
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
            f'<text transform="translate({cx:.1f},{height + 16}) rotate(35)" text-anchor="start">'
            f"{escape(column.group)}</text>"
        )
    ly = height + bottom + 10
    x = float(left)
    for ri, name in enumerate(legend):
        parts.append(f'<rect x="{x:.1f}" y="{ly}" width="10" height="10" fill="{PALETTE[ri % len(PALETTE)]}"/>')
        parts.append(f'<text x="{x + 14:.1f}" y="{ly + 9}">{escape(name)}</text>')
        x += _LEGEND_GAP + _CHAR_PX * len(name)
    parts.append("</svg>")
    return "".join(parts)
