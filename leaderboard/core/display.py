"""Formatting helpers every app shows people: one wording for the same quantity everywhere."""

from __future__ import annotations

from scoring.tables import fixed as fixed


def size_text(n: int) -> str:
    """Bytes as a person reads them (binary units, as the limits are stated)."""
    if n < 1024:
        return f"{n} bytes"
    for unit, scale in (("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30)):
        if n < scale * 1024 or unit == "GiB":
            return f"{n / scale:.1f} {unit}"
    raise AssertionError("unreachable")


# The digits of a score live in the scoring library: its tables (metaeval --format) write them too.


def interval_text(low: float, high: float, decimals: int = 2) -> str:
    """An interval as "17.63–24.63"; "" where its ends read the same ("42.11–42.11" says nothing a
    single number does not: a slice of one question, or questions that all scored alike)."""
    low_text, high_text = fixed(low, decimals), fixed(high, decimals)
    return "" if low_text == high_text else f"{low_text}–{high_text}"
