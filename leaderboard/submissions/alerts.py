"""Telling a challenge's organizers that a submission failed on their side of the line.

The scoring path (``evaluation.submission_score``) and the run's lifecycle (a run failed for
good by the platform) use it, so it lives below both.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import mail_admins, send_mail

from leaderboard.submissions.models import AttemptEnd, RunAttempt, Submission

logger = logging.getLogger(__name__)


def _attempts_text(submission: Submission) -> str:
    """Each attempt of the run from its record: which worker, when, how it ended (organizers' mail)."""
    lines = [
        f"  {a.number}. {AttemptEnd(a.end).label} on {a.worker or 'an unnamed worker'}, claimed "
        f"{a.claimed_at:%Y-%m-%d %H:%M:%S}" + (f", ended {a.ended_at:%H:%M:%S}" if a.ended_at else "")
        + (f": {a.reason[:300]}" if a.reason else "")
        for a in RunAttempt.objects.filter(submission=submission, history=None).order_by("number")
    ]
    return "Attempts (UTC):\n" + "\n".join(lines) + "\n\n" if lines else ""


def submission_staff_alert(submission_id: int, *, reason: str) -> int:
    """E-mail the challenge's organizers that the platform could not complete a submission: its id
    and the full reason (theirs to read, whatever data the run was on).  Returns the number of
    messages sent; a mail server that fails is logged, never allowed to undo the failure itself.
    """
    submission = (Submission.objects.filter(pk=submission_id)
                  .select_related("phase__challenge", "team").first())
    if submission is None:
        return 0
    challenge = submission.phase.challenge
    recipients = sorted({email for email in challenge.staff.values_list("email", flat=True) if email})
    subject = f"[Readerboard] {challenge.slug}: submission {submission.pk} failed on the platform's side"
    body = (
        f"Submission {submission.pk} ({submission.kind}) of team {submission.team.name}, phase "
        f"{submission.phase.slug} of challenge {challenge.slug}, failed after {submission.attempts} attempt(s), "
        f"through no fault of the team (it does not count against their quota).\n\n"
        f"Reason:\n{reason}\n\n"
        f"{_attempts_text(submission)}"
        f"Submission page: /c/{challenge.slug}/submissions/{submission.pk}/\n"
    )
    logger.error("submission %s: failed on the platform's side; alerting %s: %s", submission_id,
                 ", ".join(recipients) or "ADMINS", reason)
    try:
        if recipients:
            return send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
        # A challenge without organizers' addresses: the site's operators, if any are set.
        mail_admins(subject, body)
        return 1 if settings.ADMINS else 0
    except Exception:
        logger.exception("submission %s: the organizers could not be alerted by e-mail", submission_id)
        return 0
