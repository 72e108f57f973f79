"""Scoring runs in a real Celery worker fed by a real Redis, end to end."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import Client

from leaderboard.core import enqueue
from leaderboard.submissions.models import Status
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.processes import RedisServer, Worker
from tests.builders.systems import wait_final


@pytest.mark.django_db(transaction=True)
def test_an_upload_is_scored_by_a_real_worker_through_redis(
    cast: Cast, real_broker: RedisServer, tmp_path: Path
) -> None:
    worker = Worker(real_broker.url, tmp_path / "worker.log")
    worker.start()
    try:
        client = Client()
        client.force_login(cast.alice)
        response = client.post(
            "/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": upload(gold_predictions())}
        )
        assert response.status_code == 201, response.content
        pk = response.json()["id"]
        assert response.json()["status"] == Status.QUEUED
        submission = wait_final(pk, timeout=60)
    finally:
        worker.stop()
    log = (tmp_path / "worker.log").read_text()
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{log}"
    assert submission.primary_score == pytest.approx(100.0)
    assert "readerboard.evaluate_submission" in log


@pytest.mark.django_db(transaction=True)
def test_a_redelivered_message_scores_nothing_twice(cast: Cast, real_broker: RedisServer, tmp_path: Path) -> None:
    """The same task sent twice: the second claim finds the submission final and does nothing."""
    client = Client()
    client.force_login(cast.alice)
    response = client.post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": upload(gold_predictions())})
    pk = response.json()["id"]
    enqueue.celery_client().send_task(enqueue.EVALUATE_SUBMISSION, args=[pk])  # a duplicate message
    worker = Worker(real_broker.url, tmp_path / "worker.log")
    worker.start()
    try:
        submission = wait_final(pk, timeout=60)
        time.sleep(1.0)  # let the duplicate be consumed too
    finally:
        worker.stop()
    assert submission.status == Status.FINISHED
    log = (tmp_path / "worker.log").read_text()
    assert log.count("not queued any more") == 1, log
    assert submission.scores.filter(dataset__isnull=True, metric="macro_f1").count() == 1
