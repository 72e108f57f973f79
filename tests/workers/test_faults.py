"""Faults while systems run: a worker killed with -9, a broker that restarts empty.

Whatever happens, every submission reaches a final state, none is scored twice,
and none stays "running" or leaves a container behind.
"""

from __future__ import annotations

import time

import docker
import pytest

from leaderboard.core.tasks import EVALUATE_SUBMISSION
from leaderboard.submissions.models import QuestionScores, Status, Submission
from tests.leaderboard.conftest import gold_predictions, upload
from tests.workers.systems_fixtures import SYSTEMS, Platform, bundle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.docker]


def slow_bundle() -> bytes:
    return bundle(("run.py", (SYSTEMS / "slow" / "run.py").read_text()),
                  ("trivial.py", (SYSTEMS / "trivial" / "run.py").read_text()))


def wait_for(predicate: object, timeout: float, what: str, platform: Platform) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}\n{platform.logs()}")


def containers_of(engine: docker.DockerClient, pk: int) -> list[object]:
    return engine.containers.list(all=True, filters={"label": f"readerboard.submission={pk}"})


def assert_scored_once(submission: Submission, datasets: int) -> None:
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}"
    assert QuestionScores.objects.filter(submission=submission).count() == datasets
    assert submission.scores.filter(dataset__isnull=True, metric="macro_f1").count() == 1


def test_kill_9_of_the_worker_during_a_run_requeues_it_and_it_finishes_once(
    platform: Platform, engine: docker.DockerClient
) -> None:
    runs_worker = platform.workers[0]
    pk = platform.submit(slow_bundle())
    wait_for(lambda: Submission.objects.get(pk=pk).status == Status.RUNNING and containers_of(engine, pk),
             60, "the run to start", platform)
    runs_worker.kill()
    # The container outlives its worker...
    assert containers_of(engine, pk)
    # ...until the reaper (in the other worker) sees the worker is gone: re-queued, container removed.
    wait_for(lambda: Submission.objects.get(pk=pk).status == Status.QUEUED, 30, "the run to be re-queued", platform)
    wait_for(lambda: not containers_of(engine, pk), 15, "the orphaned container to be removed", platform)
    runs_worker.start()
    submission = platform.wait_final(pk, timeout=120)
    assert_scored_once(submission, datasets=2)
    assert submission.attempts == 2
    assert not containers_of(engine, pk)


def test_a_redis_restart_loses_messages_yet_every_submission_finishes_once(
    platform: Platform, engine: docker.DockerClient
) -> None:
    first = platform.submit(slow_bundle())
    queued = [platform.submit(slow_bundle()) for _ in range(2)]
    wait_for(lambda: Submission.objects.get(pk=first).status == Status.RUNNING, 60, "the first run", platform)
    # The broker goes away and comes back empty (no persistence): queued messages are lost...
    platform.redis.stop()
    # ...and a submission made while it is down cannot be sent at all, yet is accepted.
    started = time.monotonic()
    response = platform.cast.client("bob").post(
        "/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": upload(gold_predictions())}
    )
    assert response.status_code == 201, response.content
    assert time.monotonic() - started < 15
    predictions = response.json()["id"]
    time.sleep(2)
    platform.redis.start()
    for pk in [first, *queued]:
        submission = platform.wait_final(pk, timeout=180)
        assert_scored_once(submission, datasets=2)
        assert submission.attempts == 1, "a lost message must be sent again, not the run repeated"
    submission = platform.wait_final(predictions, timeout=60)
    assert submission.status == Status.FINISHED
    assert not Submission.objects.filter(status__in=(Status.RUNNING, Status.SCORING, Status.QUEUED)).exists()
    logs = platform.logs()
    assert EVALUATE_SUBMISSION in logs
    assert "whose messages were lost" in logs
