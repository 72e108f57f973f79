"""``{{ n|size }}``: bytes in the one formatter of the platform (``core.display.size_text``).

Django's ``filesizeformat`` divides by 1024 but writes "KB", so a page using both said "256.0 KB"
next to "16.2 KiB" for the same units.
"""

from __future__ import annotations

from django import template

from leaderboard.core.display import size_text

register = template.Library()


@register.filter
def size(value: int | None) -> str:
    return "" if value is None else size_text(int(value))
