"""Fixtures for worker tests: a real Redis server per test; systems fixtures (engine, platform)."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest
from django.conf import settings


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


