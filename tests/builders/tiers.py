"""The test tiers: a directory is a speed tier, and its tests carry its marker.

- ``tests/e2e/``: a browser (Selenium, headless Chromium) against a live server; marker ``browser``;
- ``tests/sandbox/``: real containers on the Docker engine; marker ``docker``;
- ``tests/processes/``: real processes beside the test (Redis, Celery workers, gunicorn); marker ``processes``;
- everything else (``tests/scoring``, ``tests/leaderboard``, ``tests/workers``, ...) is the fast lane.

A test that uses a fixture which starts something slow must live in that fixture's tier (the
costliest one when it uses several: a browser test may also run systems, a platform test starts
processes and uses the engine), so nothing slow can sit in the fast lane unmarked.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

# Directory under tests/ -> the marker its tests carry.
TIER_MARKERS = {"e2e": "browser", "sandbox": "docker", "processes": "processes"}
# The costliest first: a test needing several lives in the first of them.
TIER_ORDER = ("e2e", "sandbox", "processes")
# Fixtures that start something slow -> the tier of a test that uses one.
FIXTURE_TIERS = {
    "browser": "e2e",
    "engine": "sandbox",
    "platform": "sandbox",
    "platform_on_hosts": "sandbox",
    "redis_server": "processes",
    "real_broker": "processes",
}
# Fixtures that start something slow -> what they need (a platform runs processes and systems).
FIXTURE_MARKERS = {
    "browser": {"browser"},
    "engine": {"docker"},
    "platform": {"docker", "processes"},
    "platform_on_hosts": {"docker", "processes"},
    "redis_server": {"processes"},
    "real_broker": {"processes"},
}
# Names that start a browser or a process without a fixture, and the tiers allowed to use them.
NAME_TIERS = {
    "chromium_driver": {"e2e"},
    "RedisServer": {"processes", "sandbox", "e2e"},
    "WebServer": {"processes", "sandbox", "e2e"},
    "Worker": {"processes", "sandbox", "e2e"},
    "ComputeWorker": {"processes", "sandbox", "e2e"},
    "compute_workers": {"processes", "sandbox", "e2e"},
}


def tier_of(path: str) -> str | None:
    """The tier of a test file, from its path relative to the repository (``tests/e2e/test_x.py``)."""
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in TIER_MARKERS else None


def tier_needed(fixtures: Iterable[str]) -> str | None:
    """The tier a test using ``fixtures`` must live in, or None (the fast lane will do)."""
    needed = {FIXTURE_TIERS[name] for name in fixtures if name in FIXTURE_TIERS}
    return next((tier for tier in TIER_ORDER if tier in needed), None)


def markers_of(path: str, fixtures: Iterable[str]) -> set[str]:
    """The tier markers of a test: its directory's, and those of the slow fixtures it uses."""
    tier = tier_of(path)
    marks = {TIER_MARKERS[tier]} if tier else set()
    return marks.union(*(FIXTURE_MARKERS.get(name, set()) for name in fixtures))


def misplaced(path: str, fixtures: Iterable[str]) -> str | None:
    """Why a test at ``path`` using ``fixtures`` is in the wrong directory, or None."""
    fixtures = list(fixtures)
    needed = tier_needed(fixtures)
    if needed is None or tier_of(path) == needed:
        return None
    slow = sorted(name for name in fixtures if name in FIXTURE_TIERS)
    return f"{path} uses {', '.join(slow)}: it belongs in tests/{needed}/ (marker {TIER_MARKERS[needed]})"
