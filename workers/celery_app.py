"""The control worker's Celery application (prediction files, finishing runs, the reaper).

Its broker settings are the compute workers' too (``workers.celery_settings``).
"""

from __future__ import annotations

import django
from celery import Celery

from leaderboard.settings.choice import settings_module_set

settings_module_set()
django.setup()

from django.conf import settings  # noqa: E402  (after django.setup())

from workers.celery_settings import SHARED  # noqa: E402

REAP = "readerboard.reap"

app = Celery("readerboard")
app.conf.update(
    broker_url=settings.CELERY_BROKER_URL,
    **SHARED,
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
