"""Compute workers on other hosts, for real: the ``platform`` fixture's two compute workers run as a
compute host would (no database URL, no Django settings, the private storage and databases hidden
from them in a mount namespace of their own).  The internal API they call, through Django's test
client, is in tests/workers/test_compute_hosts.py."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import docker
import pytest
import redis
from django.conf import settings

from leaderboard.challenges.models import DatasetFile
from leaderboard.console.selectors import queue_report
from leaderboard.submissions.models import Status, Submission
from tests.builders.systems import SYSTEMS, Platform, our_containers, script_bundle, slow_bundle, wait_for


def tcp_peers(pid: int) -> set[int]:
    """The remote ports of the process's established TCP connections (its sockets' inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes and fields[3] == "01":  # ESTABLISHED
                ports.add(int(fields[2].rsplit(":", 1)[1], 16))
    return ports


def run_bundle() -> bytes:
    return script_bundle(SYSTEMS / "trivial" / "run.py")


FORBIDDEN_ENV = ("READERBOARD_DATABASE_URL", "DJANGO_SETTINGS_MODULE", "READERBOARD_PRIVATE_ROOT",
                 "READERBOARD_SECRET_KEY", "READERBOARD_DB_PATH")


def wait_ready(platform: Platform) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(w.log.exists() and " ready." in w.log.read_text(errors="replace") for w in platform.compute):
            return
        time.sleep(0.2)
    raise AssertionError(platform.logs())


@pytest.mark.django_db(transaction=True)
def test_compute_workers_hold_no_database_url_and_cannot_read_the_private_storage(platform: Platform) -> None:
    wait_ready(platform)
    gold = [Path(f.gold.path) for f in DatasetFile.objects.filter(dataset__challenge=platform.cast.challenge)]

    database = Path(settings.DATABASES["default"]["NAME"])
    assert gold and all(p.exists() for p in gold)
    for worker in platform.compute:
        environ = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
        names = {entry.split(b"=", 1)[0].decode() for entry in environ if entry}
        assert not names & set(FORBIDDEN_ENV), names
        assert {"READERBOARD_COMPUTE_QUEUES", "READERBOARD_API_URL", "READERBOARD_WORKER_TOKEN"} <= names
        assert "READERBOARD_BROKER_URL" not in names  # it claims over the internal API
        # The worker's own view of the file system (its mount namespace): the gold files, the
        # private storage and a file database are not there, though they are on this host.
        root = Path(f"/proc/{worker.pid}/root")
        for path in gold:
            assert not (root / path.relative_to("/")).exists(), path
        assert list((root / Path(settings.PRIVATE_STORAGE_ROOT).relative_to("/")).glob("*")) == []
        if database.is_absolute():
            assert not (root / database.relative_to("/")).exists()
        # ...while its own work folder is shared with the engine's view.
        assert (root / worker.work_dir.relative_to("/")).is_dir()


@pytest.mark.django_db(transaction=True)
def test_a_run_in_a_queue_no_worker_consumes_stays_visibly_queued_not_failed(
    platform: Platform, engine: docker.DockerClient
) -> None:
    challenge = platform.cast.challenge
    challenge.system_settings = {**challenge.system_settings, "queue": "gpu", "gpus": 1}
    challenge.save()
    pk = platform.submit(script_bundle(SYSTEMS / "trivial" / "run.py"))
    time.sleep(10)  # longer than a lease (6 s) and several reaper rounds (2 s): nothing moves it
    submission = Submission.objects.get(pk=pk)
    assert (submission.status, submission.attempts, submission.failure_reason) == (Status.QUEUED, 0, "")
    # No message anywhere: the queued row is the queue.
    assert [k for k in redis.Redis.from_url(platform.redis.url).keys() if b"gpu" in k] == []
    systems = next(q for q in queue_report(challenge=challenge).queues if q.key == "systems")
    assert systems.name == "Systems (queue gpu, in the order workers start them)"
    assert [w.submission.pk for w in systems.waiting] == [pk]
    assert "whose messages were lost" not in platform.logs(tail=None)


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_is_claimed_over_the_internal_api_with_no_message_in_redis(platform: Platform) -> None:
    """Both compute workers stopped by SIGTERM (they exit at once, idle); a run submitted meanwhile is a
    row and nothing in Redis; a compute worker started again claims and runs it, and its one peer on the
    network while it runs is the internal API."""
    wait_ready(platform)
    for worker in platform.compute:
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.proc.wait(timeout=15) == 0, worker.log.read_text(errors="replace")[-2000:]
        worker.proc = None
    pk = platform.submit(run_bundle())
    time.sleep(1)
    broker = redis.Redis.from_url(platform.redis.url)
    assert broker.llen("cpu") == 0 and not [k for k in broker.keys() if b"cpu" in k]
    assert not any(b"run_system" in message for queue in (b"celery", b"control")
                   for message in broker.lrange(queue, 0, -1))
    assert Submission.objects.get(pk=pk).status == Status.QUEUED
    worker = platform.compute[0]
    worker.start()
    peers: set[int] = set()
    deadline = time.monotonic() + 120
    while not Submission.objects.get(pk=pk).is_final and time.monotonic() < deadline:
        if worker.proc is not None and worker.proc.poll() is None:
            with contextlib.suppress(OSError):
                peers |= tcp_peers(worker.pid)
        time.sleep(0.05)
    submission = platform.wait_final(pk, timeout=5)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{platform.logs()}"
    assert submission.worker.startswith("test-compute-1/")
    assert platform.web is not None
    assert peers == {platform.web.port}, peers  # never the broker (nor anything else)


@pytest.mark.django_db(transaction=True)
def test_the_compute_loop_survives_the_platform_down_and_claims_once_it_is_back(platform: Platform) -> None:
    wait_ready(platform)
    assert platform.web is not None
    platform.web.stop()
    pk = platform.submit(run_bundle())  # the test's own client: the web process is not needed for this
    time.sleep(6)
    for worker in platform.compute:
        assert worker.proc is not None and worker.proc.poll() is None, worker.log.read_text(errors="replace")
    assert "claim failed" in platform.compute[0].log.read_text(errors="replace")
    assert Submission.objects.get(pk=pk).status == Status.QUEUED
    platform.web.start()
    submission = platform.wait_final(pk, timeout=120)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{platform.logs()}"
    assert submission.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_sigterm_during_a_run_finishes_it_then_exits_and_a_second_signal_exits_at_once(
    platform: Platform, engine: docker.DockerClient
) -> None:
    wait_ready(platform)
    platform.compute[1].stop()  # one worker, so that it is the one running
    worker = platform.compute[0]
    first = platform.submit(slow_bundle(sleep_s=6))
    wait_for(lambda: Submission.objects.get(pk=first).status == Status.RUNNING, 60, "the first run", platform)
    second = platform.submit(run_bundle())
    assert worker.proc is not None
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.proc.wait(timeout=60) == 0, worker.log.read_text(errors="replace")[-3000:]
    worker.proc = None
    done = platform.wait_final(first, timeout=30)
    assert (done.status, done.attempts) == (Status.FINISHED, 1), f"{done.failure_reason}\n{platform.logs()}"
    assert Submission.objects.get(pk=second).status == Status.QUEUED  # not claimed once told to stop
    # Started again, it takes the next run, and two signals in a row stop it mid-run at once, its
    # container removed on the way out (the run is queued again when its lease lapses).
    third = platform.submit(slow_bundle(sleep_s=30))
    worker.start()
    platform.wait_final(second, timeout=60)
    wait_for(lambda: Submission.objects.get(pk=third).status == Status.RUNNING
             and our_containers(engine, f"readerboard.submission={third}"), 60, "the third run", platform)
    proc = worker.proc
    assert proc is not None
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    stopping = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert time.monotonic() - stopping < 20
    worker.proc = None
    assert not list(our_containers(engine, f"readerboard.submission={third}"))
