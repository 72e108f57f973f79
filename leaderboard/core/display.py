"""Formatting helpers every app shows people: one wording for the same quantity everywhere."""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError

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


# Characters that text shown to other people (a team's name, its affiliation) may not hold.  Control
# characters (tab and newline included: these are one-line fields) and the line and paragraph separators
# break a row's layout, and the boards' stored pages use three of them to mark where a viewer's own row
# goes; the direction embeddings, overrides and isolates make a name read as another one ("Trojan
# Source").  Joiners and direction marks stay allowed: scripts and emoji sequences need them.
_DIRECTION_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_REFUSED_CATEGORIES = {"Cc": "the control character", "Cs": "the lone surrogate", "Zl": "the line separator",
                       "Zp": "the paragraph separator"}


def shown_text_problem(text: str) -> str | None:
    """What makes ``text`` unfit to show to others ("holds the control character U+0001 at character
    4"), or None.  Every path that stores such text asks this, so all of them refuse alike."""
    for i, char in enumerate(text, start=1):
        if char in _DIRECTION_CONTROLS:
            return f"holds the text-direction control U+{ord(char):04X} at character {i}"
        kind = _REFUSED_CATEGORIES.get(unicodedata.category(char))
        if kind is not None:
            return f"holds {kind} U+{ord(char):04X} at character {i}"
    return None


def shown_text_validate(text: str) -> None:
    """:func:`shown_text_problem` as a model field's validator, for the forms that save a model whole
    (the admin's)."""
    problem = shown_text_problem(text)
    if problem is not None:
        raise ValidationError(f"this text {problem}: use visible characters only", code="invisible")
