"""``{% interval low high as text %}``: an interval in the one formatter of the platform
(``core.display.interval_text``): "" where its two ends read the same, so a page says so in words
instead of printing "42.11–42.11"."""

from __future__ import annotations

from django import template

from leaderboard.core.display import interval_text

register = template.Library()


@register.simple_tag
def interval(low: float, high: float, decimals: int = 2) -> str:
    return interval_text(float(low), float(high), decimals)
