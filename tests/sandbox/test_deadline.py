"""No system outlives its limit or its worker: a run container ends at its limit plus a grace with
its worker killed (-9), and any worker of the engine, whatever its host name, removes what a dead
worker left (found by its owner lock), never a live worker's or another platform's.

The "workers" here are ``run_container`` in a child process (the real runner, the real engine), so
that each can be given a host name of its own and be killed at a chosen moment.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
from docker.models.containers import Container

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE, HiddenRuns
from tests.builders.systems import instance
from workers import runner
from workers.run_system import LABEL_OWNER, ComputeConfig, leftovers_remove

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = 4
TEST_RUN = "readerboard.test-deadline"  # value: this test's own id, so that it removes only its own

# One "compute worker": the real runner, under a host name of its own (os.uname is what
# socket.gethostname reads, so it is set through the UTS name only in this process's view).
WORKER = r"""
import json, socket, sys
from pathlib import Path
socket.gethostname = lambda: sys.argv[1]
from leaderboard.sandbox.contract import HiddenRuns, Limits
from workers import runner
from workers.run_system import LABEL_OWNER, LABEL_WORKER, ComputeConfig, worker_name, worker_owner
args = json.loads(sys.argv[2])
work = Path(args["work_dir"])
config = ComputeConfig(work_dir=work, run_image_repository=args["instance"],
                       hidden=HiddenRuns(lock_path=Path(args["lock"])))
(work / "in").mkdir(parents=True, exist_ok=True)
(work / "out").mkdir(parents=True, exist_ok=True)
# A folder and an image list under its owner id, as a run leaves them mid-run.
(work / "runs" / worker_owner(config) / "7-1").mkdir(parents=True, exist_ok=True)
spec = runner.RunSpec(
    image=args["image"], input_dir=work / "in", output_dir=work / "out",
    limits=Limits(memory_mb=128, pids=32, time_limit_s=args["limit"]),
    command=["python3", "-c", "import time\nwhile True: time.sleep(0.2)"],
    labels={runner.LABEL_SUBMISSION: "7", runner.LABEL_ATTEMPT: "1", LABEL_WORKER: worker_name(),
            LABEL_OWNER: worker_owner(config), runner.LABEL_INSTANCE: args["instance"], args["label"]: args["test"]},
    deadline_helper=runner.deadline_helper_install(work),
)
print("owner", worker_owner(config), flush=True)
outcome, _ = runner.run_container(runner.engine(), spec, output_capped=False, heartbeat=lambda: True,
                                  heartbeat_every=1.0)
print("end", outcome.end, flush=True)
"""


class Worker:
    def __init__(self, tmp: Path, name: str, *, lock: Path, instance_of: str, test: str, limit: float) -> None:
        self.work_dir = tmp / name
        self.work_dir.mkdir(parents=True)
        args = {"work_dir": str(self.work_dir), "instance": instance_of, "lock": str(lock), "label": TEST_RUN,
                "test": test, "limit": limit, "image": DEFAULT_BASE_IMAGE}
        # What it says on stderr goes to a file, for a failure message: a worker whose run ended
        # early (the engine refused a start under load) is told apart from a container removed.
        self.errors = tmp / f"{name}.stderr"
        with self.errors.open("w") as errors:
            self.process = subprocess.Popen([sys.executable, "-c", WORKER, name, json.dumps(args)], cwd=REPO,
                                            stdout=subprocess.PIPE, stderr=errors, text=True,
                                            env={**os.environ, "PYTHONPATH": str(REPO)})
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        assert line[:1] == ["owner"], line
        self.owner = line[1]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def said(self) -> str:
        """Whether the worker still runs, and what it wrote (for a failure message)."""
        state = "running" if self.process.poll() is None else f"ended with {self.process.returncode}"
        return f"worker {state}; its stderr: {self.errors.read_text()[-3000:]!r}"


@pytest.fixture
def test_id(engine: docker.DockerClient) -> Iterator[str]:
    ident = f"t{os.getpid()}-{time.monotonic_ns()}"
    yield ident
    for container in engine.containers.list(all=True, filters={"label": f"{TEST_RUN}={ident}"}):
        container.remove(force=True)


def container_of(engine: docker.DockerClient, test: str, worker: Worker, timeout: float = 30) -> Container:
    """``worker``'s run container once it runs.  Listed by the low-level call, which inspects
    nothing: docker-py's ``containers.list`` inspects each one listed and fails on one removed
    in between."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = engine.api.containers(all=True, filters={"label": [f"{TEST_RUN}={test}", f"{LABEL_OWNER}={worker.owner}"]})
        running = [c["Id"] for c in listed if c.get("State") == "running"]
        if running:
            try:
                return engine.containers.get(running[0])
            except docker.errors.NotFound:
                pass
        if worker.process.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"no running container of {worker.owner}: {worker.said()}")


def gone_or_stopped(container: Container) -> bool:
    try:
        container.reload()
    except docker.errors.NotFound:
        return True
    status: str = container.status
    return status != "running"


def test_a_system_that_never_stops_ends_at_its_limit_with_its_worker_killed(
    engine: docker.DockerClient, tmp_path: Path, test_id: str
) -> None:
    worker = Worker(tmp_path, "host-a", lock=tmp_path / "host.lock", instance_of=instance(), test=test_id,
                    limit=LIMIT_S)
    container = container_of(engine, test_id, worker)
    assert int(container.labels[runner.LABEL_DEADLINE]) <= time.time() + LIMIT_S + 1
    worker.kill()  # nobody watches the limit any more
    deadline = time.monotonic() + LIMIT_S + runner.DEADLINE_GRACE_S + 30
    while not gone_or_stopped(container) and time.monotonic() < deadline:
        time.sleep(0.2)
    container.reload()
    state = container.attrs["State"]
    assert state["Status"] == "exited" and state["ExitCode"] == 137, state

    def stamp(value: str) -> float:  # the engine's RFC 3339 with nanoseconds, to microseconds
        return dt.datetime.fromisoformat(value[:26].rstrip("Z") + "+00:00").timestamp()

    ran = stamp(state["FinishedAt"]) - stamp(state["StartedAt"])
    past = ran - LIMIT_S
    print(f"\nran {ran:.2f} s: {past:.2f} s past the {LIMIT_S} s limit with its worker dead")
    assert past <= runner.DEADLINE_GRACE_S + 2, ran


def test_another_worker_under_another_host_name_removes_a_dead_workers_leftovers_only(
    engine: docker.DockerClient, tmp_path: Path, test_id: str
) -> None:
    lock = tmp_path / "host.lock"
    dead = Worker(tmp_path, "pod-old", lock=lock, instance_of=instance(), test=test_id, limit=600)
    alive = Worker(tmp_path, "pod-live", lock=lock, instance_of=instance(), test=test_id, limit=600)
    other = Worker(tmp_path, "pod-other", lock=lock, instance_of=f"{instance()}-other", test=test_id, limit=600)
    try:
        dead_c = container_of(engine, test_id, dead)
        alive_c, other_c = container_of(engine, test_id, alive), container_of(engine, test_id, other)
        other.kill()  # another platform's dead worker: its own platform's to clean
        dead.kill()
        run_folder = dead.work_dir / "runs" / dead.owner
        assert run_folder.is_dir()
        # The sweeper: a worker of this instance under yet another host name (a replacement pod).
        config = ComputeConfig(work_dir=tmp_path / "pod-new", run_image_repository=instance(),
                               hidden=HiddenRuns(lock_path=lock))
        removed = leftovers_remove(config)
        assert any(dead.owner in r for r in removed), removed
        with pytest.raises(docker.errors.NotFound):
            dead_c.reload()
        assert not run_folder.exists() and not (lock.parent / "readerboard-owners" / f"{dead.owner}.lock").exists()
        for kept, of in ((alive_c, alive), (other_c, other)):
            try:
                kept.reload()
            except docker.errors.NotFound:
                raise AssertionError(f"a live worker's container was removed: {of.said()}") from None
            assert kept.status == "running", (kept.labels, of.said())
        assert (lock.parent / "readerboard-owners" / f"{other.owner}.lock").exists()
        assert leftovers_remove(config) == []  # nothing more: a second sweep does nothing
    finally:
        alive.kill()


def test_a_container_past_its_deadline_is_removed_whoever_owns_it(
    engine: docker.DockerClient, tmp_path: Path, test_id: str
) -> None:
    lock = tmp_path / "host.lock"
    worker = Worker(tmp_path, "pod-late", lock=lock, instance_of=instance(), test=test_id, limit=600)
    try:
        container = container_of(engine, test_id, worker)
        config = ComputeConfig(work_dir=tmp_path / "pod-new", run_image_repository=instance(),
                               hidden=HiddenRuns(lock_path=lock))
        assert leftovers_remove(config) == []  # alive, within its deadline
        later = int(container.labels[runner.LABEL_DEADLINE]) + 61
        removed = leftovers_remove(config, now=later)
        assert any("past its deadline" in r for r in removed), removed
        with pytest.raises(docker.errors.NotFound):
            container.reload()
    finally:
        worker.kill()
