"""Fixtures for tests that run submitted systems: a real Docker engine, Redis and Celery workers."""

from __future__ import annotations

import io
import os
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.challenges.models import SubmissionKind
from leaderboard.submissions.models import Submission
from leaderboard.submissions.systems import DEFAULT_BASE_IMAGE
from tests.builders.cast import Cast
from tests.workers.processes import (
    ComputeWorker,
    RedisServer,
    WebServer,
    Worker,
    compute_workers,
    shared_mount_release,
)

HERE = Path(__file__).resolve().parent
SYSTEMS = HERE / "systems"

# Small limits so hostile systems are stopped quickly; heartbeats and leases short so
# the fault tests see a dead worker's run re-queued within seconds.
TEST_LIMITS = {"cpus": 1, "memory_mb": 256, "pids": 64, "nofile": 256, "tmp_mb": 32, "output_mb": 16,
               "time_limit_s": 20, "log_bytes": 64 * 1024}
FAST_LEASES = {
    "READERBOARD_RUN_HEARTBEAT_S": "1",
    "READERBOARD_RUN_LEASE_S": "6",
    "READERBOARD_REAP_EVERY_S": "2",
    "READERBOARD_REDISPATCH_AFTER_S": "4",
    "READERBOARD_RUN_RETRY_BACKOFF_S": "1",
}


def _in_ci() -> bool:
    return os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def engine() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine here"
        message = f"no Docker engine ({exc}); deploy/setup.sh installs and starts it"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    try:
        client.images.get(DEFAULT_BASE_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"the base image {DEFAULT_BASE_IMAGE} is missing; deploy/images/build.sh builds it")
    return client


def wait_final(pk: int, timeout: float = 90, context: Callable[[], str] = lambda: "") -> Submission:
    """The submission once final; fails after ``timeout`` seconds, adding ``context()`` (e.g. worker logs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        submission = Submission.objects.get(pk=pk)
        if submission.is_final:
            return submission
        time.sleep(0.2)
    raise AssertionError(f"submission {pk} still {Submission.objects.get(pk=pk).status} after {timeout}s\n"
                         + context())


def bundle(*files: tuple[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files:
            archive.writestr(name, content)
    return buffer.getvalue()


def script_bundle(path: Path) -> bytes:
    return bundle(("run.py", path.read_text()))


@dataclass
class Platform:
    cast: Cast
    redis: RedisServer
    workers: list[Any]  # every process, for their logs
    tmp: Path
    web: WebServer | None = None
    control: Worker | None = None
    compute: list[ComputeWorker] = field(default_factory=list)

    def submit(self, content: bytes, *, kind: str = SubmissionKind.CODE_BUNDLE, phase: str = "test",
               name: str = "system.zip", who: str = "alice") -> int:
        client = self.cast.client(who)
        response = client.post(
            f"/api/v1/challenges/{self.cast.challenge.slug}/systems/",
            {"phase": phase, "kind": kind, "file": SimpleUploadedFile(name, content)},
        )
        assert response.status_code == 201, response.content
        return int(response.json()["id"])

    def wait_final(self, pk: int, timeout: float = 90) -> Submission:
        return wait_final(pk, timeout, self.logs)

    def logs(self) -> str:
        return "\n".join(w.log.read_text(errors="replace")[-4000:] for w in self.workers if w.log.exists())

    def mails(self) -> list[str]:
        """Every message the platform's processes sent (their file e-mail backend), whole."""
        folder = self.tmp / "mail"
        return [path.read_text(errors="replace") for path in sorted(folder.glob("*"))] if folder.exists() else []


def system_phases(cast: Cast, limits: dict[str, object] | None = None) -> None:
    for phase in (cast.dev, cast.test):
        phase.allowed_kinds = ["predictions", "docker_image", "code_bundle"]
        phase.quota_per_day = None
        phase.save()
    cast.challenge.system_settings = {"limits": limits or TEST_LIMITS}
    cast.challenge.save()


@pytest.fixture
def platform(cast: Cast, engine: docker.DockerClient, real_broker: RedisServer, tmp_path: Path) -> Iterator[Platform]:
    """The platform as it runs across hosts: Redis; the web app under gunicorn; the control worker
    (prediction files, finishing runs, the reaper with beat); and two compute workers on queue "cpu",
    each with its own token and work folder, no database URL, and the private storage and databases
    hidden from it (its own mount namespace).  Every run of a test goes through the internal API."""
    system_phases(cast)
    web = WebServer(real_broker.url, tmp_path / "web.log", extra_env=FAST_LEASES)
    control = Worker(real_broker.url, tmp_path / "control.log", queues="celery,control", beat=True,
                     extra_env=FAST_LEASES)
    compute_root = tmp_path / "compute"
    computes = compute_workers(real_broker.url, web.url, compute_root, tmp_path, prefix="test-compute")
    processes: list[Any] = [web, control, *computes]
    try:
        web.start()
        control.start()
        for worker in computes:
            worker.start()
        yield Platform(cast, real_broker, processes, tmp_path, web=web, control=control, compute=computes)
    finally:
        for process in reversed(processes):
            process.stop()
        for container in engine.containers.list(all=True, filters={"label": "readerboard.submission"}):
            container.remove(force=True)
        shared_mount_release(compute_root)
