"""Starting background work by task name, after the database commit.

The web app never imports ``workers``: it sends a task by name to the broker,
and only once the transaction that created the row has committed, so a worker
never looks for a row that is not there yet.  With ``CELERY_TASK_ALWAYS_EAGER``
(unit tests, and the demo without a broker) the same service runs in-process
right after the commit instead.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from functools import cache
from typing import Any

from celery import Celery
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

# Task names; workers/tasks.py registers tasks under them.
EVALUATE_SUBMISSION = "readerboard.evaluate_submission"
# Scores what a compute worker handed back for a run (on the control worker, next to the gold).
FINISH_RUN = "readerboard.finish_run"
# Scores a finished submission again from what it stored, when the gold it was scored against changed.
RESCORE_SUBMISSION = "readerboard.rescore_submission"
# The paired bootstrap of a phase's boards (rank groups and intervals), after their rows changed.
BOARD_SIGNIFICANCE = "readerboard.board_significance"
# Builds a challenge's board snapshots again after a change (debounced: challenges/versions.py).
BOARD_SNAPSHOT = "readerboard.board_snapshot"
# The run queue of a challenge that names none.  A system run is no message: its Submission row in
# ``queued`` is the queue, which compute workers claim from over the internal API
# (``submissions.worker_api.submission_run_claim_next``), so they hold no broker credentials.
DEFAULT_RUN_QUEUE = "cpu"
# Services eager mode may run in-process.
TASK_SERVICES: dict[str, str] = {
    EVALUATE_SUBMISSION: "leaderboard.submissions.evaluation:submission_evaluate",
    RESCORE_SUBMISSION: "leaderboard.submissions.rescore:submission_rescore",
    FINISH_RUN: "leaderboard.submissions.worker_api:submission_run_result_score",
    BOARD_SIGNIFICANCE: "leaderboard.rankings.services:board_significance_refresh",
    BOARD_SNAPSHOT: "leaderboard.rankings.snapshots:board_snapshots_rebuild",
}
# Systems run for minutes and scoring a file takes seconds: separate queues, so a
# long run never holds up the scores of prediction files.  Runs wait in the run queue their challenge
# names (``system_settings.queue``: DEFAULT_RUN_QUEUE, "gpu", or an organizer's own), which compute
# workers claim from; the trusted side (prediction files, the reaper, finishing runs) never runs a system.
TASK_QUEUES: dict[str, str] = {EVALUATE_SUBMISSION: "celery", RESCORE_SUBMISSION: "celery",
                               FINISH_RUN: "control", BOARD_SIGNIFICANCE: "celery",
                               BOARD_SNAPSHOT: "celery"}


@cache
def celery_client() -> Celery:
    app = Celery("readerboard-web")
    app.conf.broker_url = settings.CELERY_BROKER_URL
    app.conf.broker_connection_retry_on_startup = True
    return app


def _service(task_name: str) -> Callable[..., Any]:
    module, _, attr = TASK_SERVICES[task_name].partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def send_task(task_name: str, object_id: int, *, countdown: float = 0, queue: str | None = None) -> None:
    """Send now; with ``countdown``, a worker takes the task no sooner than that many seconds."""
    celery_client().send_task(task_name, args=[object_id], queue=queue or TASK_QUEUES[task_name],
                              countdown=countdown or None)


def enqueue_on_commit(task_name: str, object_id: int, *, queue: str | None = None) -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        if task_name in TASK_SERVICES:
            transaction.on_commit(lambda: _service(task_name)(object_id))
        else:
            logger.warning("%s(%s) needs a worker; eager mode leaves it queued", task_name, object_id)
        return

    def send() -> None:
        # A broker that is down must not turn a committed submission into an error
        # page: the reaper sends queued submissions again once the broker is back.
        try:
            send_task(task_name, object_id, queue=queue)
        except Exception:
            logger.exception("could not send %s(%s); the reaper will send it again", task_name, object_id)

    transaction.on_commit(send)
