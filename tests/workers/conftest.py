"""Fixtures for worker tests: a real Redis server per test; systems fixtures (engine, platform)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leaderboard.core import tasks
from tests.leaderboard.conftest import cast  # noqa: F401  (the platform cast, reused here)
from tests.workers.processes import RedisServer
from tests.workers.systems_fixtures import engine, platform  # noqa: F401


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def real_broker(redis_server: RedisServer, settings: Any) -> Iterator[RedisServer]:
    """Tasks are sent to a real Redis (not run in-process, the tests' default)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_server.url
    tasks.celery_client.cache_clear()
    yield redis_server
    tasks.celery_client.cache_clear()
