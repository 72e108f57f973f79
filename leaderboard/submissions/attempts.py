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

from leaderboard.submissions.models import FAILURE_DETAIL_CHARS, AttemptEnd, RunAttempt, ScoreHistory, Status

# What an ended attempt keeps of its live log: nothing (the finishing attempt's log is the submission's).
_LIVE_LOG_GONE: dict[str, Any] = {"live_log": "", "live_log_notes": [], "live_log_at": None}


def worker_host(worker: str) -> str:
    """The host of a worker label: ``token/host:pid`` (``worker_api.worker_label``) or ``local/host:pid``."""
    instance = worker.split("/", 1)[-1]
    return instance.rsplit(":", 1)[0] if ":" in instance else instance


def run_attempt_open(*, submission_id: int, number: int, worker: str, now: dt.datetime,
                     hardware_class: str = "") -> None:
    """Attempt ``number`` claimed by ``worker``.  A record left open by a lost earlier claim of the
    same number (none should exist: claims are conditional) is taken over."""
    RunAttempt.objects.update_or_create(
        submission_id=submission_id, number=number, history=None,
        defaults={"worker": worker[:200], "host": worker_host(worker)[:200], "claimed_at": now,
                  "ended_at": None, "end": AttemptEnd.RUNNING, "hardware_class": hardware_class[:60]},
    )


def run_attempt_record(*, submission_id: int, number: int, exit_code: int | None, run_seconds: float | None,
                       peak_memory_mb: int | None) -> None:
    """The figures the worker handed back for the attempt (its log went onto the submission)."""
    RunAttempt.objects.filter(submission_id=submission_id, number=number, history=None).update(
        exit_code=exit_code, run_seconds=run_seconds, peak_memory_mb=peak_memory_mb, log_recorded=True,
        **_LIVE_LOG_GONE)


def run_attempt_live_log_store(*, submission_id: int, number: int, log: str, notes: list[dict[str, Any]],
                               now: dt.datetime | None = None) -> bool:
    """What the system of attempt ``number`` printed so far (its worker's capture, whole each time:
    the capture drops the middle of a long log, so a later one is no continuation of an earlier one).

    Kept only while the run is running at that attempt and the attempt is open, checked in the
    UPDATE itself: a worker's post that crosses the attempt's end (a finish, a cancel, the reaper)
    writes nothing after it.  False when nothing was kept."""
    return RunAttempt.objects.filter(
        submission_id=submission_id, number=number, history=None, ended_at__isnull=True,
        submission__status=Status.RUNNING, submission__attempts=number,
    ).update(live_log=log, live_log_notes=notes, live_log_at=now or timezone.now()) == 1


def run_attempt_end(*, submission_id: int, number: int, end: AttemptEnd, now: dt.datetime | None = None,
                    verdict: str = "", cause: str = "", reason: str = "", detail: str = "") -> None:
    """Close attempt ``number``: how it ended, in the submission's own codes."""
    fields: dict[str, Any] = {"ended_at": now or timezone.now(), "end": end, "verdict": verdict,
                              "failure_cause": cause, "reason": reason[:5000], **_LIVE_LOG_GONE}
    if detail:
        fields["detail"] = detail[-FAILURE_DETAIL_CHARS:]
    RunAttempt.objects.filter(submission_id=submission_id, number=number, history=None,
                              ended_at__isnull=True).update(**fields)


def run_attempts_archive(*, submission_id: int, history: ScoreHistory) -> None:
    """A run about to go again from attempt 1 (an organizer's re-run): its attempts go with the
    history entry that keeps its result and log."""
    RunAttempt.objects.filter(submission_id=submission_id, history=None).update(history=history)
