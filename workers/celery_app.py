"""The Celery application of the evaluation workers.

Settings follow what long container jobs need: a message is acknowledged only
after its task finished (``task_acks_late``), a worker takes one message at a
time (``worker_prefetch_multiplier = 1``), and a message whose worker died is
handed to another worker (``task_reject_on_worker_lost``).  Tasks are safe to
run twice because every service claims its submission with a conditional
update first.
"""

from __future__ import annotations

import os

import django
from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.dev")
django.setup()

from django.conf import settings  # noqa: E402  (after django.setup())

REAP = "readerboard.reap"

app = Celery("readerboard")
app.conf.update(
    broker_url=settings.CELERY_BROKER_URL,
    broker_connection_retry_on_startup=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    # Redis redelivers an unacknowledged message after this long; longer than any run.
    broker_transport_options={"visibility_timeout": 6 * 3600},
    worker_hijack_root_logger=False,
    # The reaper runs on the "control" queue (task_routes below, which beat's messages
    # go through too), with the finishing of runs; stale reap messages expire unread.
    beat_schedule={
        "reap": {
            "task": REAP,
            "schedule": settings.REAP_EVERY_S,
            "options": {"expires": settings.REAP_EVERY_S},
        }
    },
    beat_schedule_filename=str(settings.VAR_DIR / "celerybeat-schedule"),
    task_routes={REAP: {"queue": "control"}},
)
app.autodiscover_tasks(["workers"], related_name="tasks", force=True)
