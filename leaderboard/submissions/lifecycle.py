"""Every transition of a submission, under one state diagram.

    submitted --> queued --claim (submission_run_take; by id or worker_api's fair pick)--> running
    queued --evaluation.submission_evaluate--> scoring                       (prediction files)
    running --heartbeat--> running            (submission_run_heartbeat renews the lease; False: stop)
    running --worker_api.submission_run_result_store--> running, its result kept until it is final
    running --evaluation.submission_run_finish--> scoring | failed (a verdict: the team's fault)
    scoring (a kept result's, its short lease passed: the scoring was lost) --the reaper sends the
        finish again (worker_api.run_results_waiting)--> scoring, scored from the kept result
    running --submission_run_fail--> failed   (the system cannot run: the team's, counted, never retried)
    running | scoring --submission_run_platform_failure / submissions_reap (no result kept)--> _requeue_or_fail:
        queued again, due after a back-off (its ``dispatched_at``, which the claim honours), or failed
        for good (the platform's, not counted, the organizers alerted)
    scoring --scores.scores_write--> finished;  scoring --submission_fail--> failed
    queued (a prediction file's lost message) --submissions_lost_in_queue--> sent again
    queued (held for review) --submission_hold_release--> claimable again (a run has no message)
    submitted | queued | running (a system) --submission_cancel--> cancelled
    finished --submission_select--> finished, the team's selected row
    (a log on hidden data is released by the console's audited action: no status changes)

The run is claimed with the gold it reads stamped on it (``Submission.run_gold``), and the plan
built from that gold kept on it (``Submission.run_plan``): the attempt's later stages read that
plan (``selectors.submission_run_plan``), never derive it again.  Every transition is a conditional
UPDATE on the current status (and, for a run, its attempt), so two workers, a redelivered message
or the reaper can never both move the same submission forward, nor move a run that someone else
now owns.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from leaderboard.accounts.models import Membership
from leaderboard.challenges.audit import audit_reason_clean, audit_record
from leaderboard.challenges.models import SYSTEM_KINDS, Dataset, RankingRule
from leaderboard.challenges.selectors import user_is_organizer
from leaderboard.core.enqueue import TASK_QUEUES
from leaderboard.core.errors import PermissionDenied, ServiceError
from leaderboard.sandbox.contract import RunPlan
from leaderboard.submissions.alerts import submission_staff_alert
from leaderboard.submissions.attempts import run_attempt_end, run_attempt_open
from leaderboard.submissions.board import board_changed_if_shown, board_entry_refresh
from leaderboard.submissions.intake import task_for
from leaderboard.submissions.models import (
    FAILURE_DETAIL_CHARS,
    AttemptEnd,
    FailureCause,
    Status,
    Submission,
    Verdict,
)
from leaderboard.submissions.selectors import phase_gold_files, submissions_held_for_review, system_run_plan

logger = logging.getLogger(__name__)


def failure_traceback(exc: BaseException) -> str:
    """An exception's traceback as the organizers read it on the run's page (``failure_detail``)."""
    return "".join(traceback.format_exception(exc))[-FAILURE_DETAIL_CHARS:]


@transaction.atomic
def submission_fail(
    submission_id: int, *, reason: str, cause: str, from_statuses: Iterable[str], verdict: str = "",
    dataset: Dataset | None = None, detail: str = "",
) -> None:
    """Fail a submission: ``reason`` in full for organizers (and for teams on public data),
    ``verdict`` and ``dataset`` for what a team may see of a run on hidden data; ``detail`` (a
    platform fault's traceback) for the organizers only."""
    if Submission.objects.filter(pk=submission_id, status__in=list(from_statuses)).update(
        status=Status.FAILED, failure_reason=reason[:5000], failure_cause=cause, finished_at=timezone.now(),
        lease_expires_at=None, verdict=verdict, verdict_dataset=dataset,
        failure_detail=detail[-FAILURE_DETAIL_CHARS:],
    ):
        attempt = Submission.objects.filter(pk=submission_id).values_list("attempts", flat=True).first() or 0
        run_attempt_end(submission_id=submission_id, number=attempt, verdict=verdict, cause=cause, reason=reason,
                        end=AttemptEnd.FAILED if cause == FailureCause.PARTICIPANT else AttemptEnd.PLATFORM,
                        detail=detail)
        board_changed_if_shown(submission_id)


def submission_cancel(*, submission: Submission, user: User) -> Submission:
    """A team withdraws its submission: one waiting, or a system while it runs.

    A running system is stopped by its worker at its next heartbeat (which fails once the run is
    no longer ``running``: ``submission_run_heartbeat``), which removes the container and drops
    the run's outcome; a cancelled submission does not count against the quota.  Scoring, which
    takes seconds and may already be writing scores, is not interrupted.
    """
    if not Membership.objects.filter(team_id=submission.team_id, user=user).exists():
        raise PermissionDenied("only members of the team can cancel its submissions")
    with transaction.atomic():
        changed = Submission.objects.filter(
            Q(status__in=(Status.SUBMITTED, Status.QUEUED)) | Q(status=Status.RUNNING, kind__in=SYSTEM_KINDS),
            pk=submission.pk,
        ).update(status=Status.CANCELLED, finished_at=timezone.now(), lease_expires_at=None)
        if changed:  # a running attempt ends here (a queued one has no open record: no-op)
            # The attempt as it is now, not as the caller read it: a re-claim may have moved it on.
            attempt = Submission.objects.filter(pk=submission.pk).values_list("attempts", flat=True).get()
            run_attempt_end(submission_id=submission.pk, number=attempt, end=AttemptEnd.CANCELLED,
                            reason=f"cancelled by {user.username}")
    if not changed:
        raise ServiceError("only a submission that is waiting, or a system that is running, can be cancelled")
    submission.refresh_from_db()
    return submission


def submission_select(*, submission: Submission, user: User) -> Submission:
    """Make this the team's selected submission for its phase (ranking rule 'selected')."""
    if not Membership.objects.filter(team_id=submission.team_id, user=user).exists():
        raise PermissionDenied("only members of the team can select its submission")
    rule = submission.phase.challenge.ranking_rule
    if rule != RankingRule.SELECTED:
        # A choice the board would ignore must not look taken.
        raise ServiceError(f"this challenge ranks {RankingRule(rule).label}: there is nothing to select")
    if submission.status != Status.FINISHED:
        raise ServiceError("only a finished submission can be selected")
    with transaction.atomic():
        Submission.objects.filter(team_id=submission.team_id, phase_id=submission.phase_id).update(
            is_selected=False
        )
        Submission.objects.filter(pk=submission.pk).update(is_selected=True)
        board_entry_refresh(team=submission.team, phase=submission.phase)
    submission.refresh_from_db()
    return submission


def submission_run_take(*, submission_id: int, attempts: int, worker: str, now: dt.datetime,
                        hardware_class: str = "") -> RunPlan | None:
    """queued -> running, as attempt ``attempts + 1`` if the run is still at ``attempts``, with a lease:
    the one claim transition (by id here, or the fair pick of ``worker_api.submission_run_claim_next``).

    The gold the attempt reads and its plan are resolved once, here, and kept on the run
    (``Submission.run_gold``, checked again at the finish; ``Submission.run_plan``, which every later
    stage reads: ``selectors.submission_run_plan``).  None if someone else moved the run first.
    """
    with transaction.atomic():
        claimed = Submission.objects.filter(pk=submission_id, status=Status.QUEUED, attempts=attempts).update(
            status=Status.RUNNING,
            attempts=attempts + 1,
            worker=worker[:200],
            lease_expires_at=now + dt.timedelta(seconds=settings.RUN_LEASE_S),
            started_at=now,
        )
        if claimed != 1:
            return None
        run_attempt_open(submission_id=submission_id, number=attempts + 1, worker=worker, now=now,
                         hardware_class=hardware_class)
    submission = Submission.objects.select_related("phase__challenge").get(pk=submission_id)
    files = phase_gold_files(phase=submission.phase)
    plan = system_run_plan(submission=submission, files=files)
    Submission.objects.filter(pk=submission.pk, attempts=submission.attempts).update(
        run_gold={str(f.dataset_id): f.sha256 for f in files}, run_plan=plan.as_json())
    return plan


def submission_run_claim(submission_id: int, *, worker: str) -> RunPlan | None:
    """Take a queued system for running; None if someone else has it or it is final."""
    now = timezone.now()
    if submissions_held_for_review(submission_ids=[submission_id], now=now):
        return None  # waits for an organizer's look; released, it is sent again (submission_hold_release)
    with transaction.atomic():
        current = Submission.objects.filter(pk=submission_id, status=Status.QUEUED, kind__in=SYSTEM_KINDS).first()
        if current is None:
            return None
        return submission_run_take(submission_id=submission_id, attempts=current.attempts, worker=worker, now=now)


def submission_run_heartbeat(submission_id: int, *, attempt: int) -> bool:
    """Renew the lease; False when the run is no longer ours (cancelled, or re-queued by the reaper)."""
    renewed = Submission.objects.filter(pk=submission_id, status=Status.RUNNING, attempts=attempt).update(
        lease_expires_at=timezone.now() + dt.timedelta(seconds=settings.RUN_LEASE_S)
    )
    return renewed == 1


@transaction.atomic
def submission_run_fail(submission_id: int, *, attempt: int, reason: str) -> None:
    """The submission itself cannot run (an image the engine refuses, a bundle that cannot be
    unpacked): its team's fault, final at once and counted.  Never retried: it would fail the
    same way again, at the platform's cost."""
    if Submission.objects.filter(pk=submission_id, status=Status.RUNNING, attempts=attempt).update(
        status=Status.FAILED, failure_reason=reason[:5000], failure_cause=FailureCause.PARTICIPANT,
        verdict=Verdict.NOT_STARTED, finished_at=timezone.now(), lease_expires_at=None, log="", log_notes=[],
    ):
        run_attempt_end(submission_id=submission_id, number=attempt, end=AttemptEnd.FAILED,
                        verdict=Verdict.NOT_STARTED, cause=FailureCause.PARTICIPANT, reason=reason)


def run_retry_delay_s(attempts: int) -> float:
    """How long a run waits for its next attempt after ``attempts`` ended by the platform: longer
    each time, so that an engine restarting or a disk being cleared has time to come back."""
    return settings.RUN_RETRY_BACKOFF_S * attempts


def submission_run_platform_failure(submission_id: int, *, attempt: int, reason: str, detail: str = "") -> bool:
    """The platform failed the run (engine unreachable, disk full, a bug): queue it again, due after
    a back-off, while attempts remain (True); else fail it, not counted, and tell the organizers.

    ``reason`` goes into the failure reason (which a team reads in full on public data);
    ``detail`` (say, a traceback) only to the organizers' alert.
    """
    base = Submission.objects.filter(pk=submission_id, status__in=(Status.RUNNING, Status.SCORING), attempts=attempt)
    outcome = _requeue_or_fail(
        base, submission_id=submission_id, attempts=attempt, now=timezone.now(),
        failure_reason=(f"the platform could not run this submission ({reason}) after {attempt} attempts; "
                        "it does not count against your quota"),
        detail=detail, end=AttemptEnd.PLATFORM, end_reason=reason,
    )
    if outcome == Status.QUEUED:
        logger.warning("submission %s: attempt %s failed (%s); queued again", submission_id, attempt, reason)
    return outcome == Status.QUEUED


@transaction.atomic
def _requeue_or_fail(
    base: QuerySet[Submission], *, submission_id: int, attempts: int, now: dt.datetime, failure_reason: str,
    detail: str = "", end: AttemptEnd = AttemptEnd.PLATFORM, end_reason: str = "",
) -> Status | None:
    """Queue the run again while attempts remain, else fail it as the platform's fault and alert
    the organizers.  A re-queued run is due after ``run_retry_delay_s``: its ``dispatched_at`` is
    then, and no claim takes it before (``selectors.run_queue_order``).

    The new status, or None when ``base`` (a conditional filter on the run's current
    state) no longer matches: someone else moved the run first.  Either way the attempt ends as
    ``end`` (the platform's fault, or its worker lost), with ``end_reason`` for the organizers.
    """
    def attempt_ended() -> None:
        run_attempt_end(submission_id=submission_id, number=attempts, end=end, now=now, verdict=Verdict.PLATFORM,
                        cause=FailureCause.PLATFORM, reason=end_reason or failure_reason, detail=detail)

    # The last attempt's traceback (if the fault has one) stays on the organizers' page.
    kept = {"failure_detail": detail[-FAILURE_DETAIL_CHARS:]} if detail else {}
    if attempts < settings.MAX_RUN_ATTEMPTS:
        due = now + dt.timedelta(seconds=run_retry_delay_s(attempts))
        if base.update(status=Status.QUEUED, worker="", lease_expires_at=None, dispatched_at=due, **kept):
            attempt_ended()
            return Status.QUEUED
        return None
    if base.update(status=Status.FAILED, failure_cause=FailureCause.PLATFORM, finished_at=now, lease_expires_at=None,
                   failure_reason=failure_reason, verdict=Verdict.PLATFORM, **kept):
        attempt_ended()
        board_changed_if_shown(submission_id)
        submission_staff_alert(submission_id, reason="\n\n".join(filter(None, [failure_reason, detail])))
        return Status.FAILED
    return None


def submission_hold_release(*, submission: Submission, actor: User, reason: str) -> Submission:
    """An organizer lets a run held for review go (``selectors.submissions_held_for_review``): it
    takes its place in the queue again and is sent to the workers; recorded in the audit log."""
    challenge = submission.phase.challenge
    if not user_is_organizer(user=actor, challenge=challenge):
        raise PermissionDenied("only the challenge's organizers can release a held run")
    reason = audit_reason_clean(reason)
    if submission.pk not in submissions_held_for_review(submission_ids=[submission.pk]):
        raise ServiceError("it is not held for review")
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk, hold_released_at__isnull=True).update(
            hold_released_at=timezone.now(), hold_released_by=actor)
        audit_record(challenge=challenge, actor=actor, action="submission.hold_release",
                     target=f"submission {submission.pk} ({submission.team.name}, {submission.phase.name})",
                     reason=reason, details={"submission_id": submission.pk, "team_id": submission.team_id})
        # Released, it is claimable at once: the next worker to ask takes it in its turn.
    submission.refresh_from_db()
    return submission


@dataclass
class Reaped:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    @property
    def stopped(self) -> list[int]:
        return self.requeued + self.failed


def submissions_reap(*, dead_workers: Iterable[str] = (), keep: Collection[int] = (),
                     now: dt.datetime | None = None) -> Reaped:
    """Runs (and scorings) whose worker is gone: queue them again, or fail them after too many tries.

    A worker is gone when its lease expired, or when it is named in ``dead_workers``
    (a worker that restarted on the same host knows its predecessor's process is dead).
    ``keep``: runs whose handed-back result is kept (``worker_api.run_results_kept``): their system
    ran to its end, so only their scoring is sent again (``worker_api.run_results_waiting``), never
    the system.
    """
    now = now or timezone.now()
    stale = Q(lease_expires_at__lt=now)
    dead = [w for w in dead_workers if w]
    if dead:
        stale |= Q(worker__in=dead)
    reaped = Reaped()
    candidates = (Submission.objects.filter(stale, status__in=(Status.RUNNING, Status.SCORING))
                  .exclude(pk__in=list(keep)).values_list("pk", "attempts", "status", "worker"))
    for pk, attempts, status, worker in candidates:
        how = ("its worker was found dead (a worker restarted on its host)" if worker in dead
               else "its lease expired: no heartbeat from its worker")
        outcome = _requeue_or_fail(
            Submission.objects.filter(pk=pk, status=status, attempts=attempts), submission_id=pk, attempts=attempts,
            now=now, failure_reason=(f"the worker running this submission stopped {attempts} times; "
                            "it does not count against your quota"),
            end=AttemptEnd.LOST, end_reason=f"lost while {status}: {how}",
        )
        if outcome == Status.QUEUED:
            reaped.requeued.append(pk)
        elif outcome == Status.FAILED:
            reaped.failed.append(pk)
    if reaped.stopped:
        logger.warning("reaper: re-queued %s, failed %s", reaped.requeued, reaped.failed)
    return reaped


def submissions_lost_in_queue(*, queues: Collection[str], now: dt.datetime | None = None) -> list[tuple[int, str, str]]:
    """Queued submissions sent long ago and still not started: (id, task, queue) to send again.

    ``queues`` are the broker queues found empty: a submission still waiting for
    one of them lost its message (a broker restarted without its data, a send
    that failed).  A duplicate is harmless, as every claim is conditional.
    """
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.REDISPATCH_AFTER_S)
    waiting = (
        Submission.objects.filter(status=Status.QUEUED)
        .filter(Q(dispatched_at__lt=cutoff) | Q(dispatched_at__isnull=True, created_at__lt=cutoff))
        .select_related("phase__challenge")
        .order_by("queued_at", "created_at", "pk")
    )
    # System runs have no message (their row is the queue): only other submissions' tasks are lost.
    lost = [(s.pk, task, TASK_QUEUES[task]) for s in waiting
            if (task := task_for(s)) is not None and TASK_QUEUES[task] in queues]
    Submission.objects.filter(pk__in=[pk for pk, _, _ in lost]).update(dispatched_at=now)
    return lost
