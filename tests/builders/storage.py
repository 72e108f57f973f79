"""System uploads for the storage tests: posted, finished, their weights."""

from __future__ import annotations

import datetime as dt
import os

from django.utils import timezone

from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast, upload
from tests.builders.system_uploads import bundle_of


def weights(size: int) -> bytes:
    # Random, so that nothing on the way (a zip's deflate, a gzip) makes it smaller.
    return bundle_of({"run.py": b"print('hi')\n", "weights.bin": os.urandom(size)})


def finish(pk: int, *, score: float | None = 50.0, status: str = Status.FINISHED, days_ago: float = 0) -> None:
    """End a run as the worker's services would (scored, on the board by the ranking rule), at an age."""
    created = timezone.now() - dt.timedelta(days=days_ago)
    Submission.objects.filter(pk=pk).update(status=status, primary_score=score if status == Status.FINISHED else None,
                                            created_at=created, finished_at=created)
    submission = Submission.objects.get(pk=pk)
    board_entry_refresh(team=submission.team, phase=submission.phase)


def post_id(cast: Cast, content: bytes, who: str, phase: str = "dev") -> int:
    response = cast.client(who).post(
        "/api/v1/challenges/demo/systems/",
        {"phase": phase, "kind": "code_bundle", "file": upload(content, "system.zip")})
    assert response.status_code == 201, response.content[:300]
    return int(response.json()["id"])
