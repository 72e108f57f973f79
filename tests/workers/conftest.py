"""Fixtures for worker tests: a real Redis server per test; systems fixtures (engine, platform)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from django.conf import settings

from leaderboard.core import tasks
from tests.workers.processes import RedisServer
from tests.workers.systems_fixtures import engine, platform  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def no_run_image_left_after_the_suite() -> Iterator[None]:
    """After the worker tests, the engine holds no per-submission image of this test run: each run
    removed its own (``workers.systems.run_image``), and the reaper those of runs it stopped."""
    yield
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:  # noqa: BLE001 - no engine: nothing can be left in it
        return
    left = [tag for image in client.images.list(filters={"reference": f"{settings.RUN_IMAGE_REPOSITORY}/*"})
            for tag in image.tags]
    for tag in left:
        client.images.remove(tag)
    assert not left, f"run images left in the engine after the suite: {left}"


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
