"""The control worker's and beat's heartbeat file (settings.HEARTBEAT_FILE), which their liveness probes
read (deploy/k8s/workers.yaml, deploy/compose.yaml): touched from the loops themselves."""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery.utils.timer2 import Timer
from django.test import override_settings

from workers.celery_app import HEARTBEAT_EVERY_S, ConsumerHeartbeat, HeartbeatScheduler, app, heartbeat_touch


def test_touch_is_off_without_a_file_and_refreshes_it_with_one(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    with override_settings(HEARTBEAT_FILE=""):
        heartbeat_touch()
    assert not beat.exists()
    with override_settings(HEARTBEAT_FILE=str(beat)):
        heartbeat_touch()
        os.utime(beat, (0, 0))
        heartbeat_touch()
    assert time.time() - beat.stat().st_mtime < 60


def test_the_worker_and_beat_are_wired_to_it() -> None:
    assert ConsumerHeartbeat in app.steps["consumer"]
    assert app.conf.beat_scheduler is HeartbeatScheduler
    # Beat wakes at least this often, so a probe allowing 180 s never sees a live beat as dead.
    assert app.conf.beat_max_loop_interval == HEARTBEAT_EVERY_S < 180 / 3


class _Consumer:
    def __init__(self) -> None:
        self.timer = Timer()


def test_the_consumer_step_touches_on_start_and_stops_on_stop(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    consumer = _Consumer()
    step = ConsumerHeartbeat(consumer)
    with override_settings(HEARTBEAT_FILE=str(beat)):
        step.start(consumer)
        assert beat.exists()
        assert step.timer_entry is not None and not step.timer_entry.canceled
        entry = step.timer_entry
        step.stop(consumer)
        assert entry.canceled and step.timer_entry is None
    consumer.timer.stop()
