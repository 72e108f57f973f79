"""A challenge's board version: the one call every write a board shows makes, and its reading.

It lives with the challenge whose change it counts, low in the app order, so that the services of
every app raise it by importing downward; ``rankings`` (the snapshots) only reads it.  See
``models.BoardVersion``.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from leaderboard.challenges.models import BoardChange, BoardVersion
from leaderboard.core.enqueue import BOARD_SNAPSHOT, send_task

# A burst of changes (a deadline's scores) makes one rebuild, this long after the first of them.
REBUILD_DELAY_S = 2.0
# A rebuild sent this long ago and not started is taken as lost: the next change sends another.
REBUILD_LOST_AFTER = dt.timedelta(minutes=1)


def board_changed(*, challenge_id: int) -> None:
    """Call in the transaction of the change: once it commits, every reader counts one more change
    and builds the board again rather than serve a snapshot from before it."""
    BoardChange.objects.create(challenge_id=challenge_id)
    # Without a broker (unit tests, the demo's eager mode) the next reader rebuilds instead.
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        transaction.on_commit(lambda: _rebuild_soon(challenge_id))


def board_version_get(*, challenge_id: int) -> int:
    """How many changes of the challenge's boards have committed (0: none yet).

    One statement, so base and rows are read in one snapshot of the database: a fold that moves
    rows into the base between two queries would make the count look smaller than it is.
    """
    version_table, change_table = BoardVersion._meta.db_table, BoardChange._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE((SELECT base FROM {version_table} WHERE challenge_id = %s), 0)"  # noqa: S608
            f" + (SELECT COUNT(*) FROM {change_table} WHERE challenge_id = %s)",
            [challenge_id, challenge_id],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def board_changes_fold(*, challenge_id: int) -> None:
    """Move the committed change rows into the base (the version stays the same), so that counting
    them stays cheap.  Writers are not held up: they only insert rows."""
    with transaction.atomic():
        version, _ = BoardVersion.objects.select_for_update().get_or_create(challenge_id=challenge_id)
        ids = list(BoardChange.objects.filter(challenge_id=challenge_id).values_list("pk", flat=True))
        if not ids:
            return
        BoardChange.objects.filter(pk__in=ids).delete()
        BoardVersion.objects.filter(pk=challenge_id).update(base=version.base + len(ids))


def _rebuild_soon(challenge_id: int) -> None:
    now = timezone.now()
    BoardVersion.objects.get_or_create(challenge_id=challenge_id)
    due = BoardVersion.objects.filter(pk=challenge_id).exclude(rebuild_requested_at__gt=now - REBUILD_LOST_AFTER)
    if not due.update(rebuild_requested_at=now):
        return  # one is queued already; it will build the latest version
    try:
        send_task(BOARD_SNAPSHOT, challenge_id, countdown=REBUILD_DELAY_S)
    except Exception:  # noqa: BLE001  (a broker that is down: readers rebuild; let the next change retry)
        BoardVersion.objects.filter(pk=challenge_id).update(rebuild_requested_at=None)
