"""Builders for tests that run submitted systems: the test limits, bundles, the platform's handle, waits."""

from __future__ import annotations

import io
import os
import secrets
import socket
import subprocess
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from docker.models.containers import Container

from leaderboard.challenges.models import SubmissionKind
from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE
from leaderboard.submissions.models import Submission
from tests.builders.cast import Cast
from tests.builders.processes import (
    ComputeWorker,
    RedisServer,
    WebServer,
    Worker,
)
from workers import runner
from workers.run_system import LABEL_WORKER

HERE = Path(__file__).resolve().parents[1] / "sandbox"  # the systems the sandbox tests submit
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

    def logs(self, tail: int | None = 4000) -> str:
        """Each worker's log, its last ``tail`` characters (enough to read in a failure message) or,
        None, whole: a test that asserts a line was logged must read it all, as later lines (a broker's
        reconnection tracebacks) can push it out of any tail."""
        start = -tail if tail is not None else 0
        return "\n".join(w.log.read_text(errors="replace")[start:] for w in self.workers if w.log.exists())

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


BASELINE_IMAGE = "readerboard/baseline:latest"


def saved_image(engine: docker.DockerClient, tag: str, path: Path) -> Path:
    try:
        image = engine.images.get(tag)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{tag} is missing; deploy/images/build.sh builds it")
    with open(path, "wb") as fh:
        for chunk in image.save(named=True):
            fh.write(chunk)
    return path


def slow_bundle(sleep_s: float = 8) -> bytes:
    run = (SYSTEMS / "slow" / "run.py").read_text()
    run = run.replace('"READERBOARD_TEST_SLEEP_S", "8"', f'"READERBOARD_TEST_SLEEP_S", "{sleep_s}"')
    assert f'"{sleep_s}"' in run, "slow/run.py no longer reads its default sleep where this expects"
    return bundle(("run.py", run),
                  ("trivial.py", (SYSTEMS / "trivial" / "run.py").read_text()))


def printing_bundle(line: str, sleep_s: float = 8) -> bytes:
    """``slow_bundle``'s system that prints ``line`` first: what a running system's page shows."""
    run = f"import time\nprint({line!r}, flush=True)\ntime.sleep({sleep_s})\nimport trivial  # noqa: E402,F401\n"
    return bundle(("run.py", run), ("trivial.py", (SYSTEMS / "trivial" / "run.py").read_text()))


def wait_for(predicate: object, timeout: float, what: str, platform: Platform) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}\n{platform.logs()}")


def instance() -> str:
    """This test run's platform instance (``runner.LABEL_INSTANCE``): its run image repository, one
    per test process (leaderboard/settings/test.py), which its workers label everything with."""
    return str(settings.RUN_IMAGE_REPOSITORY)


def our_containers(engine: docker.DockerClient, *labels: str, stopped: bool = True) -> list[Container]:
    """The containers of this test run's platform that carry ``labels`` too (``name`` or
    ``name=value``); ``stopped``: stopped ones as well.  Another platform's on the same engine (the
    demo, a compute host, another test run) are never asserted about or removed."""
    return list(engine.containers.list(all=stopped, filters=runner.instance_filter(instance(), *labels)))


def dead_worker_name() -> str:
    """A worker name (``host:pid``) of this host whose process is gone, as a killed worker leaves it."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}"


FOREIGN_LABEL = "readerboard.test-foreign"  # value: the test run's instance, so that it removes its own


def foreign_run(engine: docker.DockerClient, submission_pk: int, *, dead_worker: bool = False) -> Container:
    """A running container labelled as another platform's run on the same engine: the same
    submission id (test databases and the demo count from 1 alike), a different instance, a worker
    of this host that is alive (this process) or, ``dead_worker``, gone (its leftover, which the old
    clean-up of any test run or compute worker on this engine removes); ``sleep 300`` on the base
    image.  Removed by ``foreign_runs_remove``."""
    other = f"readerboard-run-other{secrets.token_hex(4)}"
    worker = dead_worker_name() if dead_worker else f"{socket.gethostname()}:{os.getpid()}"
    return engine.containers.run(
        DEFAULT_BASE_IMAGE, ["sleep", "300"], detach=True, network_mode="none", user=runner.SANDBOX_USER,
        labels={runner.LABEL_SUBMISSION: str(submission_pk), runner.LABEL_ATTEMPT: "1",
                LABEL_WORKER: worker, runner.LABEL_INSTANCE: other, FOREIGN_LABEL: instance()})


def foreign_runs_remove(engine: docker.DockerClient) -> None:
    for container in engine.containers.list(all=True, filters={"label": f"{FOREIGN_LABEL}={instance()}"}):
        container.remove(force=True)


def still_running(container: Container) -> bool:
    try:
        container.reload()
    except docker.errors.NotFound:
        return False
    return bool(container.status == "running")
