"""Compute workers on other hosts, for real: the ``platform`` fixture's two compute workers run as a
compute host would (no database URL, no Django settings, the private storage and databases hidden
from them in a mount namespace of their own).  The internal API they call, through Django's test
client, is in tests/workers/test_compute_hosts.py."""

from __future__ import annotations

import time
from pathlib import Path

import docker
import pytest
import redis
from django.conf import settings

from leaderboard.challenges.models import DatasetFile
from leaderboard.console.selectors import queue_report
from leaderboard.submissions.models import Status, Submission
from tests.builders.systems import SYSTEMS, Platform, script_bundle

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
        assert {"READERBOARD_BROKER_URL", "READERBOARD_API_URL", "READERBOARD_WORKER_TOKEN"} <= names
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
    assert redis.Redis.from_url(platform.redis.url).llen("gpu") == 1  # its message waits in the gpu queue
    systems = next(q for q in queue_report(challenge=challenge).queues if q.key == "systems")
    assert systems.name == "Systems (queue gpu, in the order workers start them)"
    assert [w.submission.pk for w in systems.waiting] == [pk]
    assert "whose messages were lost" not in platform.logs()
