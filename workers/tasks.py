"""Thin Celery tasks: take an id, call one service, retry only on infrastructure errors."""

from __future__ import annotations

from django.db import OperationalError

from leaderboard.core.tasks import EVALUATE_SUBMISSION
from leaderboard.submissions.services import submission_evaluate
from workers.celery_app import app


@app.task(
    name=EVALUATE_SUBMISSION,
    autoretry_for=(OperationalError,),  # a locked or unreachable database; never the submission's fault
    retry_backoff=True,
    max_retries=5,
)
def evaluate_submission(submission_id: int) -> None:
    submission_evaluate(submission_id)
