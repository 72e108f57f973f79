"""Starting background work by task name, after the database commit.

The web app never imports ``workers``: it sends a task by name to the broker,
and only once the transaction that created the row has committed, so a worker
never looks for a row that is not there yet.  With ``CELERY_TASK_ALWAYS_EAGER``
(unit tests, and the demo without a broker) the same service runs in-process
right after the commit instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

from celery import Celery
from django.conf import settings
from django.db import transaction

# Task name -> the service it runs.  workers/tasks.py registers tasks under these names.
EVALUATE_SUBMISSION = "readerboard.evaluate_submission"
TASK_SERVICES: dict[str, str] = {
    EVALUATE_SUBMISSION: "leaderboard.submissions.services:submission_evaluate",
}


@cache
def celery_client() -> Celery:
    app = Celery("readerboard-web")
    app.conf.broker_url = settings.CELERY_BROKER_URL
    app.conf.broker_connection_retry_on_startup = True
    return app


def _service(task_name: str) -> Callable[..., Any]:
    module, _, attr = TASK_SERVICES[task_name].partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def enqueue_on_commit(task_name: str, object_id: int) -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        transaction.on_commit(lambda: _service(task_name)(object_id))
    else:
        transaction.on_commit(lambda: celery_client().send_task(task_name, args=[object_id]))
