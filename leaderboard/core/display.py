"""Formatting helpers every app shows people: one wording for the same quantity everywhere."""

from __future__ import annotations


def size_text(n: int) -> str:
    """Bytes as a person reads them (binary units, as the limits are stated)."""
    if n < 1024:
        return f"{n} bytes"
    for unit, scale in (("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30)):
        if n < scale * 1024 or unit == "GiB":
            return f"{n / scale:.1f} {unit}"
    raise AssertionError("unreachable")
