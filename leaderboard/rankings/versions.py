"""Raising a challenge's board version: the one call every write a board shows makes.

It lives apart from the snapshots (which read boards through the selectors) so that the services of
every app can call it without importing the board code.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.core.tasks import BOARD_SNAPSHOT, send_task
from leaderboard.rankings.models import BoardVersion

# A burst of changes (a deadline's scores) makes one rebuild, this long after the first of them.
REBUILD_DELAY_S = 2.0


def board_changed(*, challenge_id: int) -> None:
    """Call in the transaction of the change, as its last write where possible (the counter's row
    is locked until the commit): readers after the commit see the new version, never the old one."""
    now = timezone.now()
    if not BoardVersion.objects.filter(pk=challenge_id).update(version=F("version") + 1, changed_at=now):
        try:
            with transaction.atomic():
                BoardVersion.objects.create(challenge_id=challenge_id, version=1, changed_at=now)
        except IntegrityError:  # made meanwhile by another writer
            BoardVersion.objects.filter(pk=challenge_id).update(version=F("version") + 1, changed_at=now)
    # Without a broker (unit tests, the demo's eager mode) the next reader rebuilds instead.
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        transaction.on_commit(lambda: _rebuild_soon(challenge_id))


def board_version_get(*, challenge_id: int) -> int:
    return board_version_read(challenge_id=challenge_id)[0]


def board_version_read(*, challenge_id: int) -> tuple[int, dt.datetime | None]:
    """The challenge's board version and when it was last raised (0 and None: never)."""
    row = BoardVersion.objects.filter(pk=challenge_id).values_list("version", "changed_at").first()
    return row if row is not None else (0, None)


def _rebuild_soon(challenge_id: int) -> None:
    if not BoardVersion.objects.filter(pk=challenge_id, rebuild_pending=False).update(rebuild_pending=True):
        return  # one is queued already; it will build the latest version
    try:
        send_task(BOARD_SNAPSHOT, challenge_id, countdown=REBUILD_DELAY_S)
    except Exception:  # noqa: BLE001  (a broker that is down: readers rebuild; let the next change retry)
        BoardVersion.objects.filter(pk=challenge_id).update(rebuild_pending=False)
