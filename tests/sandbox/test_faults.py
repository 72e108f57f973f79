"""Faults while systems run: a worker killed with -9, a broker that restarts empty.

Whatever happens, every submission reaches a final state, none is scored twice,
and none stays "running" or leaves a container behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import docker
import pytest
from docker.models.containers import Container

from leaderboard.core.enqueue import EVALUATE_SUBMISSION
from leaderboard.submissions.models import QuestionScores, Status, Submission
from leaderboard.submissions.selectors import quota_usage
from tests.builders.cast import gold_predictions, upload
from tests.builders.systems import Platform, our_containers, slow_bundle, still_running, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def containers_of(engine: docker.DockerClient, pk: int) -> list[object]:
    return list(our_containers(engine, f"readerboard.submission={pk}"))


def kill_one_running(engine: docker.DockerClient, pk: int) -> bool:
    """Kill one running container of submission ``pk``; False when none was running to be killed."""
    for container in our_containers(engine, f"readerboard.submission={pk}", stopped=False):
        try:
            container.kill()
        except docker.errors.APIError as error:
            if error.status_code != 409:  # 409: it was no longer running
                raise
            continue
        return True
    return False


def assert_scored_once(submission: Submission, datasets: int) -> None:
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}"
    assert QuestionScores.objects.filter(submission=submission).count() == datasets
    assert submission.scores.filter(dataset__isnull=True, metric="macro_f1").count() == 1


def test_kill_9_of_a_compute_worker_during_a_run_the_other_finishes_it_once(
    foreign_runs: Callable[..., Container], platform: Platform, engine: docker.DockerClient
) -> None:
    pk = platform.submit(slow_bundle())
    # Beside it, another platform's run of the same submission id, left by a dead worker of this
    # host: the survivor's clean-up of dead workers' leftovers must not take it for its own.
    foreign = foreign_runs(pk, dead_worker=True)
    wait_for(lambda: Submission.objects.get(pk=pk).status == Status.RUNNING and containers_of(engine, pk),
             60, "the run to start", platform)
    owner = Submission.objects.get(pk=pk).worker  # "<token name>/<host:pid>"
    victim = next(w for w in platform.compute if owner.endswith(f":{w.pid}"))
    survivor = next(w for w in platform.compute if w is not victim)
    orphan = containers_of(engine, pk)[0].id  # type: ignore[attr-defined]
    victim.kill()
    # The container outlives its worker; the platform notices by the lease alone (no process check:
    # the worker could be on another host), queues the run again, and the other worker takes it,
    # removing first what the dead worker on its host left running.
    wait_for(lambda: Submission.objects.get(pk=pk).attempts == 2, 60, "the run to be taken again", platform)
    wait_for(lambda: orphan not in [c.id for c in containers_of(engine, pk)], 30,  # type: ignore[attr-defined]
             "the orphaned container to be removed", platform)
    submission = platform.wait_final(pk, timeout=120)
    assert_scored_once(submission, datasets=2)
    assert submission.attempts == 2
    assert submission.worker.endswith(f":{survivor.pid}"), (submission.worker, survivor.pid)
    assert not containers_of(engine, pk)
    assert "removed what a dead worker on this host left" in survivor.log.read_text()
    assert still_running(foreign)


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
    logs = platform.logs(tail=None)
    assert EVALUATE_SUBMISSION in logs
    assert "whose messages were lost" in logs


def test_a_docker_kill_from_outside_is_retried_not_charged(platform: Platform, engine: docker.DockerClient) -> None:
    pk = platform.submit(slow_bundle())
    # An operator's `docker kill` (SIGKILL, exit 137): neither the runner's limit nor the engine's OOM flag.
    # Only a running container can be killed; one listed a moment ago may be created but not yet
    # started, or have just ended (409 from the engine), so the kill is tried until one lands.
    wait_for(lambda: Submission.objects.get(pk=pk).status == Status.RUNNING and kill_one_running(engine, pk),
             60, "a running container of the run to kill", platform)
    submission = platform.wait_final(pk, timeout=120)
    assert_scored_once(submission, datasets=2)
    assert submission.attempts == 2 and submission.failure_reason == ""
    assert quota_usage(team=submission.team, phase=submission.phase).used_total == 1  # the one run, scored
    assert "ended killed_outside" in platform.logs(tail=None)
    assert not containers_of(engine, pk)
