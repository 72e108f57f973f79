"""A server-rendered SVG bar chart of per-dataset scores for the top systems (no JavaScript, no CDN)."""

from __future__ import annotations

from html import escape

from leaderboard.rankings.selectors import Board

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")


def board_chart_svg(board: Board, *, top: int = 5, metric_label: str | None = None) -> str:
    """Grouped bars: one group per dataset, one bar per top-ranked system (0-100 scale)."""
    columns = [c for c in board.columns if c.key.startswith("ds:") and not c.sealed]
    label = metric_label or (columns[0].label if columns else "")
    columns = [c for c in columns if c.label == label]
    rows = [r for r in board.rows if r.rank is not None][:top]
    width_per_group = max(40, 14 * max(1, len(rows)) + 16)
    left, bottom, height = 40, 90, 220
    width = left + width_per_group * max(1, len(columns)) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + bottom + 40}" '
        f'role="img" aria-label="{escape(label)} per dataset for the top systems" font-family="sans-serif" font-size="11">'
    ]
    for tick in range(0, 101, 20):
        y = 10 + height - tick * height / 100
        parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
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
    for ri, row in enumerate(rows):
        x = left + ri * 160
        parts.append(f'<rect x="{x}" y="{ly}" width="10" height="10" fill="{PALETTE[ri % len(PALETTE)]}"/>')
        parts.append(f'<text x="{x + 14}" y="{ly + 9}">{escape(row.team_name[:24])}</text>')
    parts.append("</svg>")
    return "".join(parts)
