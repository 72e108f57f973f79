"""Thin Celery tasks: take an id, call one service, retry only on infrastructure errors."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready
from django.db import OperationalError

from leaderboard.core.enqueue import (
    BOARD_SIGNIFICANCE,
    BOARD_SNAPSHOT,
    EVALUATE_SUBMISSION,
    FINISH_RUN,
    RESCORE_SUBMISSION,
)
from leaderboard.rankings.services import board_significance_refresh
from leaderboard.rankings.snapshots import board_snapshots_rebuild
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.rescore import submission_rescore
from leaderboard.submissions.worker_api import submission_run_result_score
from workers.celery_app import REAP, app
from workers.control_runs import runs_reap
from workers.dispatch import dispatch_again, lost_messages_redispatch

logger = logging.getLogger(__name__)


@app.task(
    name=EVALUATE_SUBMISSION,
    autoretry_for=(OperationalError,),  # a locked or unreachable database; never the submission's fault
    retry_backoff=True,
    max_retries=5,
)
def evaluate_submission(submission_id: int) -> None:
    submission_evaluate(submission_id)


@app.task(name=FINISH_RUN, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def finish_run(submission_id: int) -> None:
    # What a compute worker handed back, scored here next to the gold; safe twice.
    submission_run_result_score(submission_id)


@app.task(name=RESCORE_SUBMISSION, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def rescore_submission(submission_id: int) -> None:
    # Safe twice: a rescore claims the scores it read, and does nothing once they are up to date.
    submission_rescore(submission_id)


@app.task(name=BOARD_SIGNIFICANCE, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def board_significance(phase_id: int) -> None:
    # Safe twice: a result is stored under the digest of the rows it was computed on.
    board_significance_refresh(phase_id)


@app.task(name=BOARD_SNAPSHOT, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def board_snapshot(challenge_id: int) -> None:
    # Safe twice: a snapshot already at the current version is left alone.
    board_snapshots_rebuild(challenge_id)


@app.task(name=REAP)
def reap() -> None:
    """Periodic: re-queue runs whose worker died, then re-send messages the broker lost."""
    dispatch_again(*runs_reap().requeued)
    lost_messages_redispatch()


@worker_ready.connect
def _reap_on_start(**_: Any) -> None:
    try:
        reap()
    except Exception:
        logger.exception("reaping at start-up failed")
