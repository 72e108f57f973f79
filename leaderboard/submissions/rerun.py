"""Organizers evaluate a submission again: a system run again in its container, a prediction file
scored again from its upload.

A rescore (``rescore.py``) follows a gold change from stored answers, and only when the scores
are out of date; a re-run repeats the whole evaluation whatever the scores say: a run that failed
on a flaky engine, a system suspected of nondeterminism, a scoring fix to confirm.  The current
result goes to the submission's history first (``ScoreHistory``: the scores with the scoring
version, the gold files' hashes and the image id; a failure's verdict and reason in its
``reason``), and the run's own record (verdict, reason, exit code, log tail) to the audit entry.
Then the scores are removed, so no board shows a result the submission no longer stands behind,
and it is queued again with no attempts used: the board takes the newest result when the new
evaluation finishes.  The task is sent after the commit, by name, like any submission's.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from leaderboard.challenges.audit import audit_reason_clean, audit_record
from leaderboard.challenges.models import SYSTEM_KINDS, SubmissionKind
from leaderboard.challenges.selectors import user_is_organizer
from leaderboard.core.errors import Conflict, NotFound, ServiceError
from leaderboard.submissions.attempts import run_attempts_archive
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.intake import submission_task_enqueue
from leaderboard.submissions.models import QuestionScores, Score, ScoreHistory, Status, Submission, Verdict
from leaderboard.submissions.rescore import score_history_record
from leaderboard.submissions.storage import run_answers_keep

RERUNNABLE = (Status.FINISHED, Status.FAILED)
# Enough of an old run's log, in the audit entry, to tell what it did; the full log is replaced.
LOG_TAIL_CHARS = 4000


def submission_rerun_problem(submission: Submission) -> str:
    """Why the submission cannot be evaluated again now ("" if it can)."""
    if submission.kind == SubmissionKind.IMPORTED:
        return "an imported published result has no upload to evaluate again"
    if submission.status not in RERUNNABLE:
        return f"it is {submission.status}: only a finished or failed submission can be evaluated again"
    if not submission.file:
        return "its upload was deleted by storage retention, so there is nothing to evaluate again"
    if not default_storage.exists(str(submission.file.name)):
        return f"its upload {submission.file.name} is missing from storage"
    return ""


def _previous(submission: Submission) -> dict[str, Any]:
    """The result being replaced, for the audit entry (organizers only: the full reason and log)."""
    return {
        "status": submission.status,
        "verdict": submission.verdict,
        "failure_reason": submission.failure_reason[:2000],
        "failure_cause": submission.failure_cause,
        "primary_score": submission.primary_score,
        "scoring_version": submission.scoring_version,
        "image_digest": submission.image_digest,
        "attempts": submission.attempts,
        "worker": submission.worker,
        "exit_code": submission.exit_code,
        "run_seconds": submission.run_seconds,
        "finished_at": submission.finished_at.isoformat() if submission.finished_at else None,
        "log_tail": submission.log[-LOG_TAIL_CHARS:],
    }


def _history_reason(submission: Submission, *, by: AbstractBaseUser, reason: str) -> str:
    what = "run again" if submission.kind in SYSTEM_KINDS else "scored again"
    text = f"{what} by {by.get_username()}: {reason}"
    if submission.status == Status.FAILED:
        verdict = Verdict(submission.verdict).label if submission.verdict else "failed"
        text += f"; it had failed ({verdict}): {submission.failure_reason}"
    return text


def submission_rerun(*, submission: Submission, by: AbstractBaseUser, reason: str) -> ScoreHistory:
    """Queue ``submission`` to be evaluated again; returns the history entry that keeps its result.

    Organizers only (NotFound for anyone else, as the console answers).  One transaction: the
    result goes to the history and the audit log, the scores are removed, the team's board row
    points at its next submission until this one finishes again, and the task is sent after the
    commit.  Refused (409) while the submission is being evaluated; safe against a double click,
    since the second request finds it queued.
    """
    challenge = submission.phase.challenge
    if not user_is_organizer(user=by, challenge=challenge):
        raise NotFound("No such submission, or not one you may see.")
    reason = audit_reason_clean(reason)
    with transaction.atomic():
        current = Submission.objects.select_related("phase__challenge", "team").filter(pk=submission.pk).first()
        if current is None:
            raise NotFound("No such submission, or not one you may see.")
        problem = submission_rerun_problem(current)
        if problem:
            raise (Conflict if current.status not in RERUNNABLE else ServiceError)(problem)
        history = _requeued(current, reason=_history_reason(current, by=by, reason=reason))
        if history is None:
            raise Conflict("the submission changed meanwhile; reload and try again")
        audit_record(
            challenge=challenge, actor=by, action="submission.rerun",
            target=f"submission {current.pk} ({current.team.name}, {current.phase.name})", reason=reason,
            details={"submission_id": current.pk, "team_id": current.team_id, "history_id": history.pk,
                     "previous": _previous(current)},
        )
    return history


def _requeued(current: Submission, *, reason: str) -> ScoreHistory | None:
    """Inside a transaction: keep ``current``'s result in its history, remove its scores and queue it
    again from scratch (the task after the commit); None if it moved meanwhile (nothing changed)."""
    scores = list(Score.objects.filter(submission=current).select_related("dataset"))
    history = score_history_record(submission=current, scores=scores, reason=reason)
    now = timezone.now()
    # Conditional on the status read: a worker or another organizer that moved it meanwhile wins.
    moved = Submission.objects.filter(pk=current.pk, status=current.status, attempts=current.attempts).update(
        status=Status.QUEUED, attempts=0, queued_at=now, dispatched_at=now, started_at=None, finished_at=None,
        failure_reason="", failure_detail="", failure_cause="", verdict=Verdict.NONE, verdict_dataset=None,
        primary_score=None,
        scoring_version="", worker="", lease_expires_at=None, exit_code=None, run_seconds=None,
        peak_memory_mb=None, runtime="", log="", log_notes=[], log_released_at=None, log_released_by=None,
    )
    if moved != 1:
        transaction.set_rollback(True)
        return None
    run_attempts_archive(submission_id=current.pk, history=history)
    if current.kind in SYSTEM_KINDS:
        # The answers of the run being replaced, beside its history entry: a determinism check
        # compares the new run's with them (the run's own file is overwritten when it is scored).
        run_answers_keep(submission_id=current.pk, history_id=history.pk)
    Score.objects.filter(submission=current).delete()
    QuestionScores.objects.filter(submission=current).delete()
    board_entry_refresh(team=current.team, phase=current.phase)
    submission_task_enqueue(current)
    return history


def gold_failures_requeue(*, challenge_id: int, portion: str, dataset_id: int) -> list[int]:
    """Evaluate again the submissions that failed because of the organizers' gold (``Verdict.GOLD``) of
    the dataset ``dataset_id`` in phases scoring ``portion``, now that that gold file was replaced: the failure was
    never the team's, and it goes to their history.  Returns their ids.  Safe twice: a second call
    finds them queued, not failed."""
    requeued = []
    failed = (Submission.objects.filter(phase__challenge_id=challenge_id, phase__portion=portion,
                                        status=Status.FAILED, verdict=Verdict.GOLD, verdict_dataset_id=dataset_id)
              .exclude(kind=SubmissionKind.IMPORTED).select_related("phase__challenge", "team"))
    for submission in failed:
        if submission_rerun_problem(submission):
            continue  # its upload is gone: nothing to evaluate again (the console says so)
        with transaction.atomic():
            reason = f"evaluated again: the gold it failed on was replaced; it had failed: {submission.failure_reason}"
            if _requeued(submission, reason=reason) is not None:
                requeued.append(submission.pk)
    return requeued
