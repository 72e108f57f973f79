"""The control worker's Celery application (prediction files, finishing runs, the reaper).

Its broker settings are the compute workers' too (``workers.celery_settings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import django
from celery import Celery, bootsteps
from celery.beat import PersistentScheduler

from leaderboard.settings.choice import settings_module_set

settings_module_set()
django.setup()

from django.conf import settings  # noqa: E402  (after django.setup())

from workers.celery_settings import SHARED  # noqa: E402

REAP = "readerboard.reap"
# How often the loops touch settings.HEARTBEAT_FILE; a probe allows a few misses (deploy/k8s/workers.yaml).
HEARTBEAT_EVERY_S = 30.0


def heartbeat_touch() -> None:
    """Touch settings.HEARTBEAT_FILE (if set): called from the loop it vouches for, so a stuck loop
    lets the file age and its liveness probe fail."""
    if settings.HEARTBEAT_FILE:
        Path(settings.HEARTBEAT_FILE).touch()


class ConsumerHeartbeat(bootsteps.StartStopStep):  # type: ignore[misc]  # celery is untyped
    """The control worker's heartbeat, on its consumer's timer: it stops while the worker is not
    consuming (no broker connection, a blocked event loop), which a restart may cure."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.timer_entry: Any = None

    def start(self, parent: Any) -> None:
        heartbeat_touch()
        self.timer_entry = parent.timer.call_repeatedly(HEARTBEAT_EVERY_S, heartbeat_touch)

    def stop(self, parent: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None


class HeartbeatScheduler(PersistentScheduler):  # type: ignore[misc]  # celery is untyped
    """Beat's scheduler, touching the heartbeat on every tick (at most beat_max_loop_interval apart)."""

    def tick(self, *args: Any, **kwargs: Any) -> float:
        heartbeat_touch()
        return float(super().tick(*args, **kwargs))


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
    beat_scheduler=HeartbeatScheduler,
    # Beat wakes at least this often, so its heartbeat is never older than a probe allows.
    beat_max_loop_interval=HEARTBEAT_EVERY_S,
    task_routes={REAP: {"queue": "control"}},
)
app.steps["consumer"].add(ConsumerHeartbeat)
app.autodiscover_tasks(["workers"], related_name="tasks", force=True)
