"""How the client prints: plain-text tables, UTC moments, sizes and scores, the same way every time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

KIND_WORDS = {"predictions": "prediction files", "docker_image": "Docker image", "code_bundle": "code bundle",
              "imported": "imported result"}


def moment(value: str | None, *, seconds: bool = False) -> str:
    """An API moment (ISO 8601) as ``YYYY-MM-DD HH:MM`` in UTC; "-" when there is none."""
    if not value:
        return "-"
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC)
    return parsed.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def parse_moment(value: str | None) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def size_text(size: int | None) -> str:
    """Bytes in binary units (KiB, MiB, GiB), as the platform's pages write them."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def score_text(value: Any, decimals: int = 2) -> str:
    """A score as the boards round it; "-" for none (not scored, or withheld)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:.{decimals}f}"
    return str(value)


def kinds_text(kinds: Sequence[str]) -> str:
    return ", ".join(KIND_WORDS.get(k, k) for k in kinds) or "nothing"


def phase_state(phase: dict[str, Any], now: dt.datetime) -> str:
    """open / closed / opens on ...: from the phase's dates (and the team's own deadline when extended)."""
    opens = parse_moment(phase.get("opens_at"))
    quota = phase.get("your_quota") or {}
    closes = parse_moment(quota.get("closes_at") or phase.get("closes_at"))
    if opens and now < opens:
        return "not open yet"
    if closes and now >= closes:
        return "closed"
    return "open"


def quota_text(quota: dict[str, Any] | None) -> str:
    """What the caller's team may still submit: "19 of 20 today, 499 of 500 in all"."""
    if quota is None:
        return "-"
    parts = []
    if quota.get("per_day") is not None:
        parts.append(f"{quota['left_today']} of {quota['per_day']} today")
    if quota.get("total") is not None:
        parts.append(f"{quota['left_total']} of {quota['total']} in all")
    text = ", ".join(parts) or "no limit"
    if quota.get("active"):
        limit = f" of {quota['concurrent']}" if quota.get("concurrent") is not None else ""
        text += f" ({quota['active']}{limit} being evaluated)"
    return text


def limits_text(quota: dict[str, Any]) -> str:
    """A phase's own limits, for a caller in no team: "20 a day, 500 in all"."""
    parts = [f"{quota['per_day']} a day" if quota.get("per_day") is not None else "",
             f"{quota['total']} in all" if quota.get("total") is not None else ""]
    return ", ".join(p for p in parts if p) or "no limit"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, indent: str = "",
          right: Sequence[int] = ()) -> str:
    """Columns padded to their widest cell; the columns in ``right`` (indices) aligned right."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        padded = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(cells, widths))]
        return (indent + "  ".join(padded)).rstrip()

    return "\n".join([line(headers), *(line(row) for row in rows)])


def fit_columns(headers: Sequence[str], rows: Sequence[Sequence[str]], *, keep: int, width: int) -> int:
    """How many columns fit in ``width`` characters (at least ``keep``, the ones always shown)."""
    total = 0
    for count, header in enumerate(headers, 1):
        total += max([len(header), *(len(row[count - 1]) for row in rows)]) + (2 if count > 1 else 0)
        if total > width and count > keep:
            return count - 1
    return len(headers)
