"""Fixtures for worker tests: a real Redis server per test; systems fixtures (engine, platform)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.leaderboard.conftest import cast  # noqa: F401  (the platform cast, reused here)
from tests.workers.processes import RedisServer
from tests.workers.systems_fixtures import engine, platform  # noqa: F401


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()
