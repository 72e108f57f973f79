"""Sending prediction files' tasks to the broker again: after a reaped evaluation or a lost message.

System runs are never sent: their queued row is the queue, which compute workers claim from over the
internal API, so a re-queued run needs only its state change (``lifecycle``) and is due as that says.
"""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.utils import timezone

from leaderboard.core.enqueue import TASK_QUEUES, send_task
from leaderboard.submissions.intake import task_for
from leaderboard.submissions.lifecycle import submissions_lost_in_queue
from leaderboard.submissions.models import Submission

logger = logging.getLogger(__name__)


def dispatch_again(*submission_ids: int) -> None:
    """Send each that has a task again, to be taken no sooner than it is due (its ``dispatched_at``)."""
    now = timezone.now()
    for submission in Submission.objects.filter(pk__in=submission_ids).select_related("phase__challenge"):
        task = task_for(submission)
        if task is None:
            continue  # a system run: queued is all it needs
        due = submission.dispatched_at
        countdown = max(0.0, (due - now).total_seconds()) if due is not None else 0.0
        send_task(task, submission.pk, countdown=countdown)


def queues_in_use() -> set[str]:
    """The platform's own queues (the run queues are rows, not broker queues)."""
    return set(TASK_QUEUES.values())


def broker_queue_lengths() -> dict[str, int] | None:
    """Messages waiting per queue, or None when the broker cannot be asked (not Redis, or down)."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    try:
        client = redis.Redis.from_url(url, socket_timeout=5)
        return {queue: int(client.llen(queue)) for queue in queues_in_use()}
    except redis.RedisError as exc:
        logger.warning("cannot read the broker's queues: %s", exc)
        return None


def lost_messages_redispatch() -> list[int]:
    """Send again queued submissions whose message is nowhere: their queue is empty, yet they wait."""
    lengths = broker_queue_lengths()
    if lengths is None:
        return []
    empty = {queue for queue, n in lengths.items() if n == 0}
    if not empty:
        return []
    sent = []
    for pk, task, queue in submissions_lost_in_queue(queues=empty):
        send_task(task, pk, queue=queue)
        sent.append(pk)
    if sent:
        logger.warning("re-sent %s queued submission(s) whose messages were lost: %s", len(sent), sent)
    return sent
