"""The compute worker: a Celery app that runs submitted systems and holds nothing it could leak.

    celery -A workers.compute_app worker --pool=solo --concurrency=1 -Q cpu -n compute1@%h

It needs three settings from its environment and no others: ``READERBOARD_BROKER_URL`` (the
broker it takes runs from), ``READERBOARD_API_URL`` (the web app, whose ``/internal/v1/`` it
talks to) and ``READERBOARD_WORKER_TOKEN`` (made with ``manage.py worker_token_create``).
Optional: ``READERBOARD_WORK_DIR`` (its run folders), ``READERBOARD_CONTAINER_RUNTIME``
(``runc`` or ``runsc``; empty: the hidden runtime for every run), ``READERBOARD_RUN_IMAGE_REPOSITORY``
(also its platform instance: ``workers.runner.LABEL_INSTANCE``), and for runs on hidden data
``READERBOARD_HIDDEN_RUNTIME`` (default ``runsc``), ``READERBOARD_HIDDEN_ISOLATION`` (default on)
and ``READERBOARD_HOST_LOCK`` (default ``/run/readerboard-compute.lock``, one file for all the
host's compute workers: see ``workers.runner.sandbox_choose``).  No Django, no database URL, no
private storage, no gold: it fetches the answer-free inputs and the system of each run it is
given, and hands back outputs, log and figures; scoring happens on the platform's side.

A message names a run, but the claim is the platform's: it hands out the next run of the queue
in an order that interleaves teams and keeps each team under its running limit.
"""

from __future__ import annotations

import logging
import os
from functools import cache
from pathlib import Path
from typing import Any

import requests
from celery import Celery
from celery.signals import worker_ready

from leaderboard.sandbox.contract import HiddenRuns
from workers.celery_settings import SHARED
from workers.internal_api import HttpTransport
from workers.run_system import (
    ComputeConfig,
    leftovers_remove,
    leftovers_sweeper_start,
    run_ticket,
    worker_name,
)
from workers.runner import PlatformError

logger = logging.getLogger(__name__)

# The task's name, as the platform sends it (leaderboard.core.enqueue.RUN_SYSTEM; a test checks they agree).
RUN_SYSTEM = "readerboard.run_system"


def _env(name: str, default: str | None = None) -> str:
    value = os.environ.get(f"READERBOARD_{name}", default)
    if value is None:
        raise SystemExit(f"the compute worker needs READERBOARD_{name} (README, 'Compute workers')")
    return value


app = Celery("readerboard-compute")
app.conf.update(
    broker_url=_env("BROKER_URL", "redis://127.0.0.1:6379/0"),
    # As the control worker's: acknowledged after the run, one at a time, handed on if the worker dies.
    **SHARED,
)


_HIDDEN_DEFAULTS = HiddenRuns()


@cache
def config() -> ComputeConfig:
    return ComputeConfig(
        work_dir=Path(_env("WORK_DIR", "/var/lib/readerboard-compute")),
        run_image_repository=_env("RUN_IMAGE_REPOSITORY", "readerboard-run"),
        runtime=_env("CONTAINER_RUNTIME", ""),
        # Each default is HiddenRuns' own (the run contract's, which the web app's settings read too).
        hidden=HiddenRuns(runtime=_env("HIDDEN_RUNTIME", _HIDDEN_DEFAULTS.runtime),
                          isolate=_env("HIDDEN_ISOLATION", "1" if _HIDDEN_DEFAULTS.isolate else "0").lower()
                          not in ("0", "false", "no", "off"),
                          lock_path=Path(_env("HOST_LOCK", str(_HIDDEN_DEFAULTS.lock_path)))),
    )


def transport(queue: str) -> HttpTransport:
    return HttpTransport(_env("API_URL"), _env("WORKER_TOKEN"), queue=queue, instance=worker_name())


# The platform unreachable when the message arrives (a deploy, a restart): the message is tried
# again after a back-off rather than dropped (the reaper would find it lost, later).
@app.task(name=RUN_SYSTEM, bind=True, autoretry_for=(requests.RequestException, PlatformError),  # type: ignore[untyped-decorator]
          retry_backoff=True, retry_backoff_max=60, max_retries=8)
def run_system(self: Any, submission_id: int) -> None:
    queue = (self.request.delivery_info or {}).get("routing_key") or "cpu"
    leftovers_remove(config())
    channel = transport(queue)
    ticket = channel.claim(submission_id)
    if ticket is None:
        logger.info("queue %s: nothing to run for message %s", queue, submission_id)
        return
    logger.info("submission %s: attempt %s claimed", ticket.submission_id, ticket.attempt)
    run_ticket(channel, ticket, config())


@worker_ready.connect  # type: ignore[untyped-decorator]
def _on_start(**_: Any) -> None:
    try:
        config().work_dir.mkdir(parents=True, exist_ok=True)
        leftovers_remove(config(), starting=True)
        # And every minute while it lives: a dead sibling's leftovers (another pod's) go while this idles.
        leftovers_sweeper_start(config())
    except Exception:
        logger.exception("clean-up at start-up failed")
