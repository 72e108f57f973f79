"""Waking compute workers that wait for a run: a Redis publish on the broker when a run is queued.

Compute workers hold no broker (``workers.compute``); an idle one asks the internal API to wait for
a run (``runs/wait/``), and the web process holding that request listens here.  A run queued anywhere
(``intake.submission_task_enqueue``) is announced on its queue's channel after its commit, and every
web thread waiting on that queue wakes at once; its worker then claims as before.  Nothing here
carries work: a lost announcement costs a waiter its wait's bound, never a run, because a waiter
subscribes first and reads the queue after (``run_queue_wait``'s ``due_in``).

Without a Redis broker (eager mode, the demo without one, Redis down) nothing is announced and a
wait answers at once that it cannot wait: the worker polls as it did before waits existed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from functools import cache

import redis
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "readerboard:run-queued:"
# How long a subscription's confirmation may take before the wait gives up (the broker is slow or gone).
CONFIRM_S = 1.0


def _channel(queue: str) -> str:
    return f"{CHANNEL_PREFIX}{queue}"


def wakeups_available() -> bool:
    """Whether announcements are sent at all: a Redis broker, and not eager mode (no worker then)."""
    url = settings.CELERY_BROKER_URL or ""
    return not settings.CELERY_TASK_ALWAYS_EAGER and url.startswith(("redis://", "rediss://", "unix://"))


@cache
def _client(url: str) -> redis.Redis:
    # Short socket timeouts: a broker that stops answering must not hold an upload's commit or a web thread.
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)


def run_queue_notify_on_commit(queue: str) -> None:
    """Announce, once the transaction commits, that a run of ``queue`` is queued (no-op without a broker)."""
    if not wakeups_available():
        return
    transaction.on_commit(lambda: _publish(queue))


def _publish(queue: str) -> None:
    try:
        _client(settings.CELERY_BROKER_URL).publish(_channel(queue), b"1")
    except redis.RedisError as exc:
        # The waiting workers find the run at their wait's end (or their next poll): later, not lost.
        logger.info("run of queue %s queued without a wake-up (%s)", queue, exc)


def run_queue_wait(queues: Sequence[str], *, seconds: float, due_in: Callable[[], float | None]) -> bool | None:
    """Wait up to ``seconds`` for a run of ``queues`` to be due; True if one is (or may be) now.

    ``due_in``: read after subscribing, so that a run queued between the caller's last look and
    the subscription is not missed: seconds until a run of the queues may be claimed (0: now;
    None: none waits).  The wait ends at that time too (a run backing off, a team's limit).
    False: the wait ran out with nothing announced.  None: no wait was possible (no broker, or it
    failed): the caller answers as it did without waits."""
    if not wakeups_available():
        return None
    try:
        pubsub = _client(settings.CELERY_BROKER_URL).pubsub(ignore_subscribe_messages=False)  # type: ignore[no-untyped-call]
    except redis.RedisError:
        return None
    try:
        channels = [_channel(q) for q in queues]
        pubsub.subscribe(*channels)
        confirmed, until = 0, time.monotonic() + CONFIRM_S
        while confirmed < len(channels):
            message = pubsub.get_message(timeout=max(0.0, until - time.monotonic()))
            if message is None:
                if time.monotonic() >= until:
                    return None
                continue
            if message["type"] == "subscribe":
                confirmed += 1
            elif message["type"] == "message":
                return True
        due = due_in()
        if due is not None and due <= 0:
            return True
        deadline = time.monotonic() + (seconds if due is None else min(seconds, due))
        while (left := deadline - time.monotonic()) > 0:
            message = pubsub.get_message(ignore_subscribe_messages=True, timeout=min(left, 1.0))
            if message is not None and message["type"] == "message":
                return True
        return due is not None  # the time a held run was due came: it may be claimed now
    except redis.RedisError as exc:
        logger.info("a worker's wait for a run ended early: %s", exc)
        return None
    finally:
        try:
            pubsub.close()
        except redis.RedisError:
            pass
