"""The record of each attempt of a system run (``models.RunAttempt``), written by the transitions.

Each transition that starts or ends an attempt calls one of these in its own transaction, right
after its conditional UPDATE matched: the claim opens the record, and the first end to arrive
closes it (a later one, say a reaper racing a finish that lost, changes nothing).  A submission
without records (a prediction file) is simply not touched.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from leaderboard.submissions.models import FAILURE_DETAIL_CHARS, AttemptEnd, RunAttempt, ScoreHistory


def worker_host(worker: str) -> str:
    """The host of a worker label: ``token/host:pid`` (``worker_api.worker_label``) or ``local/host:pid``."""
    instance = worker.split("/", 1)[-1]
    return instance.rsplit(":", 1)[0] if ":" in instance else instance


def run_attempt_open(*, submission_id: int, number: int, worker: str, now: dt.datetime) -> None:
    """Attempt ``number`` claimed by ``worker``.  A record left open by a lost earlier claim of the
    same number (none should exist: claims are conditional) is taken over."""
    RunAttempt.objects.update_or_create(
        submission_id=submission_id, number=number, history=None,
        defaults={"worker": worker[:200], "host": worker_host(worker)[:200], "claimed_at": now,
                  "ended_at": None, "end": AttemptEnd.RUNNING},
    )


def run_attempt_record(*, submission_id: int, number: int, exit_code: int | None, run_seconds: float | None,
                       peak_memory_mb: int | None) -> None:
    """The figures the worker handed back for the attempt (its log went onto the submission)."""
    RunAttempt.objects.filter(submission_id=submission_id, number=number, history=None).update(
        exit_code=exit_code, run_seconds=run_seconds, peak_memory_mb=peak_memory_mb, log_recorded=True)


def run_attempt_end(*, submission_id: int, number: int, end: AttemptEnd, now: dt.datetime | None = None,
                    verdict: str = "", cause: str = "", reason: str = "", detail: str = "") -> None:
    """Close attempt ``number``: how it ended, in the submission's own codes."""
    fields: dict[str, Any] = {"ended_at": now or timezone.now(), "end": end, "verdict": verdict,
                              "failure_cause": cause, "reason": reason[:5000]}
    if detail:
        fields["detail"] = detail[-FAILURE_DETAIL_CHARS:]
    RunAttempt.objects.filter(submission_id=submission_id, number=number, history=None,
                              ended_at__isnull=True).update(**fields)


def run_attempts_archive(*, submission_id: int, history: ScoreHistory) -> None:
    """A run about to go again from attempt 1 (an organizer's re-run): its attempts go with the
    history entry that keeps its result and log."""
    RunAttempt.objects.filter(submission_id=submission_id, history=None).update(history=history)
