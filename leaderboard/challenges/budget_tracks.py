"""Budget tracks: a phase's boards by measured cost (``phases[].budget_tracks`` in the spec).

A track is a name and limits on some of the axes below.  Which system is on a track: every system
of the phase is on every track, within its limits or marked over budget with the figure (the track
board ranks those within and lists the others below, unranked).  A team need not say anything to
be on a track: a budget is a property of the system as measured, and the same system often fits
several tracks (EfficientQA's 6 GiB and 500 MB ones).  An upload may name a track it is meant for
(``track``); then an image already over that track's size, known before it runs, is refused at once,
so the team spends no run or quota on a system the track would only mark over budget.

The limits are checked here (spec) and the figures an upload carries (image bytes); the figures of
runs, and who may see which, are the board's (``rankings.budget_boards``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderboard.challenges.models import Phase
from leaderboard.core.errors import ServiceError

MIB = 1024 * 1024


@dataclass(frozen=True)
class BudgetAxis:
    key: str  # the spec's key for the limit, and the figure's name in exports
    label: str  # a column's heading
    unit: str  # after a figure ("MiB", "s", "ms", "")
    meaning: str  # the spec reference's words
    decimals: int = 0


# The figures every system run records, in the boards' order.
AXES: tuple[BudgetAxis, ...] = (
    BudgetAxis("image_mib", "Image and model", "MiB",
               "the system as uploaded (the image archive with its model, or the code bundle), in MiB; "
               "known at upload, so an upload naming the track is refused over it", 1),
    BudgetAxis("peak_memory_mib", "Peak memory", "MiB", "the run's peak memory, in MiB"),
    BudgetAxis("seconds_per_1000_questions", "Run time per 1,000 questions", "s",
               "the run's time over the questions of the phase's datasets, in seconds per 1,000 questions", 1),
    BudgetAxis("latency_p95_ms", "p95 latency", "ms",
               "the 95th percentile of the time per question, in milliseconds (interactive protocol only: "
               "a batch run has no time per question)"),
    BudgetAxis("gpus", "GPUs", "", "GPUs the run was given (the phase's `systems.gpus`)"),
)
AXIS_KEYS = tuple(axis.key for axis in AXES)
TRACK_KEYS = ("name", *AXIS_KEYS)


@dataclass(frozen=True)
class BudgetTrack:
    name: str
    limits: Mapping[str, float]  # axis key -> the most a system may measure; absent: no limit

    def over(self, figures: Mapping[str, float | None]) -> dict[str, float]:
        """The axes whose figure is over this track's limit, with the figure (an unknown figure is not over)."""
        return {key: value for key, limit in self.limits.items()
                if (value := figures.get(key)) is not None and value > limit}


def budget_tracks_parse(raw: Any, *, where: str) -> list[dict[str, Any]]:
    """A phase's ``budget_tracks`` as stored: ``[{"name": ..., <axis>: limit, ...}]``, checked."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ServiceError(f"{where}: expected a list of tracks ({{name: ..., image_mib: 500, ...}}), found {raw!r}")
    tracks: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise ServiceError(f"{at}: expected a mapping with a name and limits, found {item!r}")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 40:
            raise ServiceError(f"{at}.name: expected a name of 1 to 40 characters, found {name!r}")
        if any(t["name"] == name.strip() for t in tracks):
            raise ServiceError(f"{at}.name: two tracks are named {name.strip()!r}")
        unknown = set(item) - set(TRACK_KEYS)
        if unknown:
            raise ServiceError(f"{at}: unknown key {sorted(unknown)[0]!r}; the keys of a track are {', '.join(TRACK_KEYS)}")
        limits: dict[str, float] = {}
        for key in AXIS_KEYS:
            if key not in item:
                continue
            value = item[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ServiceError(f"{at}.{key}: expected a number, 0 or more, found {value!r}")
            limits[key] = float(value)
        if not limits:
            raise ServiceError(f"{at}: a track needs at least one limit ({', '.join(AXIS_KEYS)})")
        tracks.append({"name": name.strip(), **limits})
    return tracks


def phase_budget_tracks(*, phase: Phase) -> list[BudgetTrack]:
    """The phase's tracks, in the spec's order."""
    return [BudgetTrack(name=t["name"], limits={k: float(t[k]) for k in AXIS_KEYS if k in t})
            for t in phase.budget_tracks or []]


def upload_figures(*, size_bytes: int) -> dict[str, float | None]:
    """The figures an upload has before it runs: its size (the same figure its track boards show)."""
    return {"image_mib": size_bytes / MIB}


def budget_track_upload_refusal(*, phase: Phase, track: str, size_bytes: int) -> str | None:
    """Why an upload naming ``track`` is refused (its image is over the track's size), or None.

    A name the phase does not have is refused as well: a misspelt track would otherwise take the
    upload without the check the team asked for.
    """
    tracks = {t.name: t for t in phase_budget_tracks(phase=phase)}
    if track not in tracks:
        known = ", ".join(tracks) or "none"
        return f"the {phase.name} phase has no budget track {track!r} (its tracks: {known})"
    over = tracks[track].over(upload_figures(size_bytes=size_bytes))
    if "image_mib" in over:
        return (f"this system is {over['image_mib']:,.1f} MiB ({size_bytes:,} bytes), over the {track!r} track's "
                f"limit of {tracks[track].limits['image_mib']:,.0f} MiB for the image and its model; "
                "upload it without naming the track to run it on the other tracks it fits")
    return None
