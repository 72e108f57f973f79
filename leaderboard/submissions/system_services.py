"""Writes for submitted systems: accepting uploads, and the run's lifecycle.

A compute worker drives a run through these services, over the internal API
(``compute`` and ``internal_views``; in-process: ``workers/control_runs.py``):

    submission_run_claim     queued -> running, with a lease and an attempt number (by id; compute
                             workers claim with ``compute.submission_run_claim_next``, fair between teams)
    submission_run_heartbeat renews the lease; False tells the worker to stop
    submission_run_finish    running -> scoring -> finished, or failed with a reason
    submission_run_fail      failed at once, counted: the submission cannot run (its team's fault)
    submission_run_platform_failure   back to queued after a back-off (or failed, not counted,
                             and the organizers alerted): the platform's fault

Every transition is a conditional UPDATE on (status, attempt), so a worker that
lost its lease, a redelivered message or the reaper can never move a run that
someone else now owns.  ``submissions_reap`` finds runs whose worker died.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import tempfile
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.challenges.audit import audit_reason_clean, audit_record
from leaderboard.challenges.models import SYSTEM_KINDS, Dataset, DatasetFile, Phase, SubmissionKind
from leaderboard.challenges.selectors import dataset_label, user_is_organizer
from leaderboard.challenges.suites import Suite, suite_for
from leaderboard.core.errors import PayloadTooLarge, PermissionDenied, ServiceError
from leaderboard.sandbox.answers_json import NotJson, WrongShape, answers_decode, answers_refusal
from leaderboard.sandbox.archives import ArchiveError, bundle_inspect, image_archive_inspect, image_protocol
from leaderboard.sandbox.contract import (
    BUNDLE_DECLARATION,
    INTERACTIVE,
    PROTOCOL_LABEL,
    RunDataset,
    RunOutcome,
    RunPlan,
    log_clean,
)
from leaderboard.submissions import dialog_runs
from leaderboard.submissions.alerts import submission_staff_alert
from leaderboard.submissions.models import FAILURE_DETAIL_CHARS, FailureCause, Status, Submission, Verdict
from leaderboard.submissions.selectors import submissions_held_for_review, system_run_plan
from leaderboard.submissions.services import (
    baseline_team_get_or_create,
    board_changed_if_shown,
    failure_traceback,
    queue_for,
    quota_enforce_locked,
    score_dataset,
    scores_write,
    submission_check_can_submit,
    submission_fail,
    submission_store_and_queue,
    task_for,
)
from leaderboard.submissions.storage import run_answers_store, storage_budget_enforce
from leaderboard.submissions.uploads import UploadError, check_qids
from scoring.errors import ScoringError

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- uploads


class _SpooledUpload(File):  # type: ignore[type-arg]
    """A file already on disk: FileSystemStorage moves it into place instead of copying."""

    def temporary_file_path(self) -> str:
        return str(self.name)


def _spool(upload: File, limit: int) -> tuple[str, str, int]:  # type: ignore[type-arg]
    """Copy the upload to a private temporary file, hashing and counting; refuse past ``limit``."""
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(f"{upload.name}: {upload.size} bytes; the limit for systems is {limit} bytes")
    spool_dir = Path(settings.PRIVATE_STORAGE_ROOT) / "spool"
    spool_dir.mkdir(parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(dir=spool_dir, suffix=".upload")
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in upload.chunks():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"{upload.name}: larger than the limit for systems of {limit} bytes")
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        os.unlink(path)
        raise
    return path, digest.hexdigest(), size


def _check_archive(path: str, *, kind: str, name: str, phase: Phase) -> str:
    """Inspect an uploaded image archive or bundle; return the image id (pin) for images.

    A phase in the interactive protocol takes only systems that declare they speak it: one that
    does not would wait for files that never come, and fail every turn on the turn limit.
    """
    try:
        if kind == SubmissionKind.DOCKER_IMAGE:
            image = image_archive_inspect(path, max_uncompressed=settings.MAX_IMAGE_UNCOMPRESSED_BYTES)
            digest, protocol = image.image_id, image_protocol(image)
        else:
            digest = ""
            protocol = bundle_inspect(path, max_uncompressed=settings.MAX_BUNDLE_UNCOMPRESSED_BYTES).protocol
    except ArchiveError as exc:
        raise UploadError(f"{name}: {exc}") from None
    if phase.protocol_modes and protocol != INTERACTIVE:
        how = (f"LABEL {PROTOCOL_LABEL}={INTERACTIVE} in its Dockerfile" if kind == SubmissionKind.DOCKER_IMAGE
               else f'a {BUNDLE_DECLARATION} with {{"protocol": "{INTERACTIVE}"}} at the top of the bundle')
        raise UploadError(f"{name}: the {phase.name} phase runs systems turn by turn over stdin and stdout "
                          f"(the interactive protocol), and this system does not declare that it speaks it: "
                          f"add {how}")
    return digest


def _store_and_queue(
    *, team: Team, phase: Phase, user: User | None, kind: str, name: str, path: str, sha256: str, size: int,
    digest: str, description: str,
) -> Submission:
    now = timezone.now()
    submission = Submission(
        team=team, phase=phase, submitted_by=user, kind=kind, status=Status.QUEUED,
        description=description[:300], original_name=name[:255], sha256=sha256, size_bytes=size,
        image_digest=digest, queued_at=now, dispatched_at=now,
    )
    suffix = ".tar" if kind == SubmissionKind.DOCKER_IMAGE else ".zip"
    with open(path, "rb") as fh:
        submission_store_and_queue(submission, suffix=suffix, content=_SpooledUpload(fh, path))
    return submission


def submission_create_system(
    *,
    team: Team,
    phase: Phase,
    user: User,
    upload: UploadedFile,
    kind: str,
    description: str = "",
    now: dt.datetime | None = None,
) -> Submission:
    """Check an image archive or code bundle whole, then store and queue it, inside the quota.

    ``now``: when the upload started (``request_received_at``), for the deadline.
    """
    if kind not in SYSTEM_KINDS:
        raise ServiceError(f"unknown kind of system {kind!r}: use docker_image or code_bundle", field="kind")
    submission_check_can_submit(team=team, phase=phase, user=user, kind=kind, now=now)
    name = upload.name or ("image.tar" if kind == SubmissionKind.DOCKER_IMAGE else "bundle.zip")
    # Over the team's storage budget: refused before a byte is spooled when the size is declared.
    storage_budget_enforce(team=team, incoming_bytes=upload.size or 0)
    path, sha256, size = _spool(upload, settings.MAX_SYSTEM_UPLOAD_BYTES)
    stored = ""
    try:
        digest = _check_archive(path, kind=kind, name=name, phase=phase)
        with transaction.atomic():
            quota_enforce_locked(team=team, phase=phase)
            storage_budget_enforce(team=team, incoming_bytes=size)
            submission = _store_and_queue(team=team, phase=phase, user=user, kind=kind, name=name, path=path,
                                          sha256=sha256, size=size, digest=digest, description=description)
            stored = str(submission.file.name)
        return submission
    except BaseException:
        # The archive was moved into storage, but its row did not commit: nothing would name it.
        if stored:
            default_storage.delete(stored)
        raise
    finally:
        if os.path.exists(path):
            os.unlink(path)


def baseline_system_submit(*, phase: Phase, team_name: str, path: str, kind: str, description: str = "") -> Submission:
    """Organizers: run a system as a marked baseline row (no quota, no membership needed)."""
    if kind not in SYSTEM_KINDS:
        raise ServiceError(f"unknown kind of system {kind!r}: use docker_image or code_bundle")
    name = os.path.basename(path)
    digest = _check_archive(path, kind=kind, name=name, phase=phase)
    with open(path, "rb") as fh:
        spooled, sha256, size = _spool(File(fh, name=name), settings.MAX_SYSTEM_UPLOAD_BYTES)
    try:
        with transaction.atomic():
            team = baseline_team_get_or_create(challenge=phase.challenge, name=team_name)
            return _store_and_queue(team=team, phase=phase, user=None, kind=kind, name=name, path=spooled,
                                    sha256=sha256, size=size, digest=digest, description=description)
    finally:
        if os.path.exists(spooled):
            os.unlink(spooled)


# --------------------------------------------------------------------------- the run


def submission_run_claim(submission_id: int, *, worker: str) -> RunPlan | None:
    """Take a queued system for running; None if someone else has it or it is final."""
    now = timezone.now()
    if submissions_held_for_review(submission_ids=[submission_id], now=now):
        return None  # waits for an organizer's look; released, it is sent again (submission_hold_release)
    with transaction.atomic():
        current = Submission.objects.filter(pk=submission_id, status=Status.QUEUED, kind__in=SYSTEM_KINDS).first()
        if current is None:
            return None
        claimed = Submission.objects.filter(pk=submission_id, status=Status.QUEUED, attempts=current.attempts).update(
            status=Status.RUNNING,
            attempts=current.attempts + 1,
            worker=worker[:200],
            lease_expires_at=now + dt.timedelta(seconds=settings.RUN_LEASE_S),
            started_at=now,
        )
        if claimed != 1:
            return None
    submission = Submission.objects.select_related("phase__challenge").get(pk=submission_id)
    submission_run_gold_stamp(submission=submission)
    return system_run_plan(submission=submission)


def _current_gold(submission: Submission) -> dict[str, str]:
    return {str(pk): sha for pk, sha in DatasetFile.objects.filter(
        dataset__challenge_id=submission.phase.challenge_id, portion=submission.phase.portion,
    ).values_list("dataset_id", "sha256")}


def submission_run_gold_stamp(*, submission: Submission) -> None:
    """Record, at the claim, which gold the run's data comes from (``Submission.run_gold``)."""
    Submission.objects.filter(pk=submission.pk, attempts=submission.attempts).update(
        run_gold=_current_gold(submission))


def _gold_replaced_during_run(submission: Submission) -> list[str]:
    """The datasets (public labels) whose gold an organizer replaced since the run was claimed."""
    if not submission.run_gold:
        return []  # claimed before runs recorded it
    now = _current_gold(submission)
    changed = [pk for pk in set(now) | set(submission.run_gold) if now.get(pk) != submission.run_gold.get(pk)]
    datasets = Dataset.objects.filter(pk__in=[int(pk) for pk in changed])
    return sorted(dataset_label(ds, reveal_sealed=False) for ds in datasets)


def submission_run_heartbeat(submission_id: int, *, attempt: int) -> bool:
    """Renew the lease; False when the run is no longer ours (cancelled, or re-queued by the reaper)."""
    renewed = Submission.objects.filter(pk=submission_id, status=Status.RUNNING, attempts=attempt).update(
        lease_expires_at=timezone.now() + dt.timedelta(seconds=settings.RUN_LEASE_S)
    )
    return renewed == 1


def _mib(value: int) -> str:
    return f"{value} MiB"


def run_verdict(plan: RunPlan, outcome: RunOutcome) -> tuple[Verdict, str] | None:
    """Why a run failed: the verdict (fixed vocabulary) and the full reason in words a
    person can act on; None if it ran to a clean exit."""
    limits = plan.limits
    if outcome.not_started:
        return Verdict.NOT_STARTED, outcome.not_started
    if outcome.timed_out:
        return Verdict.TIME_LIMIT, (f"timed out: still running after {limits.time_limit_s:g} s (the time limit) "
                                    "and was killed; the log shows how far it got")
    if outcome.output_too_large:
        return Verdict.OUTPUT_TOO_LARGE, (f"wrote more than {_mib(limits.output_mb)} to /output (the output limit); "
                                          "nothing of it is scored")
    if outcome.oom_killed:
        return Verdict.MEMORY_LIMIT, (f"ran out of memory: it used more than {_mib(limits.memory_mb)} "
                                      "(the memory limit, swap included)")
    if outcome.exit_code is None:
        return Verdict.CRASHED, "stopped without an exit code"
    if outcome.exit_code == 137:
        # A SIGKILL the runner did not send and the engine did not flag as an OOM kill: most
        # often the kernel's OOM killer picking one process of several in the container.
        return Verdict.CRASHED, (f"was killed (signal 9, exit code 137), most likely for using more than "
                                 f"{_mib(limits.memory_mb)} of memory (the memory limit)")
    if outcome.exit_code != 0:
        return Verdict.CRASHED, f"exited with code {outcome.exit_code}; the log shows its last output"
    return None


class _OutputRejected(Exception):
    """A dataset's output cannot be scored: the verdict, the dataset, and the full reason."""

    def __init__(self, verdict: Verdict, dataset: RunDataset, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.dataset = dataset
        self.reason = reason


def _output_predictions(suite: Suite, ds: RunDataset, outcome: RunOutcome, qids: list[str]) -> Any:
    """One dataset's output, decoded and checked; each way it can be wrong is its own verdict."""
    where = f"/output/{ds.output_name} (dataset {ds.label})"
    if ds.slug in outcome.output_errors:
        verdict = Verdict.OUTPUT_TOO_LARGE if ds.slug in outcome.outputs_too_large else Verdict.OUTPUT_MISSING
        raise _OutputRejected(verdict, ds, f"dataset {ds.label}: {outcome.output_errors[ds.slug]}")
    # Read with the shape in mind (answers_json): an output the size of the output limit costs
    # the worker memory in proportion to the dataset's questions, whatever it holds.
    try:
        answers = answers_decode(outcome.outputs[ds.slug], where=where, qids=qids)
    except NotJson as exc:
        raise _OutputRejected(Verdict.OUTPUT_NOT_JSON, ds, exc.message) from None
    except WrongShape as exc:
        raise _OutputRejected(Verdict.OUTPUT_WRONG_SHAPE, ds, exc.message) from None
    # The rule a prediction file meets, in the same words: what no store takes (a lone surrogate,
    # NUL) is the team's fault here, counted, and never reaches run_answers_store.
    refused = answers_refusal(answers.by_qid, where=where)
    if refused is not None:
        verdict = Verdict.OUTPUT_WRONG_SHAPE if refused.of_shape else Verdict.ANSWER_REFUSED
        raise _OutputRejected(verdict, ds, refused.message)
    try:
        suite.check_predictions(answers.by_qid, where=where)
    except ScoringError as exc:
        raise _OutputRejected(Verdict.OUTPUT_WRONG_SHAPE, ds, str(exc)) from None
    try:
        check_qids(answers, qids=qids, where=where)
    except UploadError as exc:
        verdict = Verdict.UNKNOWN_IDS if answers.n_unknown else Verdict.ANSWERS_MISSING
        raise _OutputRejected(verdict, ds, str(exc)) from None
    return answers.by_qid


def submission_run_finish(submission_id: int, *, attempt: int, outcome: RunOutcome) -> None:
    """Record the run (log always), then fail it with a verdict or score its outputs."""
    base = Submission.objects.filter(pk=submission_id, status=Status.RUNNING, attempts=attempt)
    submission = base.select_related("phase__challenge", "team").first()
    if submission is None:
        logger.info("submission %s: attempt %s is no longer the running one; result dropped", submission_id, attempt)
        return
    replaced = _gold_replaced_during_run(submission)
    if replaced:
        # Its answers are to data the platform no longer scores: neither the team's fault nor a
        # result; it runs again on the new data (an attempt of the platform's, not counted).
        reason = f"the organizers replaced the data of {', '.join(replaced)} while it ran"
        if submission_run_platform_failure(submission_id, attempt=attempt, reason=reason):
            from leaderboard.submissions.compute import run_dispatch_again

            transaction.on_commit(lambda: run_dispatch_again(submission_id))
        return
    plan = system_run_plan(submission=submission)
    record = {
        "log": log_clean(outcome.logs),  # the runner cleaned it already; idempotent, so positions stay
        # The platform's own messages, apart from the log: nothing the system printed can pass for one.
        "log_notes": [note.as_json() for note in outcome.notes],
        "exit_code": outcome.exit_code,
        "run_seconds": outcome.duration_s,
        "peak_memory_mb": None if outcome.peak_memory_bytes is None else -(-outcome.peak_memory_bytes // 2**20),
        "runtime": outcome.runtime,
        "lease_expires_at": None,
    }
    failed = run_verdict(plan, outcome)
    if failed is not None:
        verdict, reason = failed
        if base.update(status=Status.FAILED, failure_reason=reason, failure_cause=FailureCause.PARTICIPANT,
                       verdict=verdict, finished_at=timezone.now(), **record):
            board_changed_if_shown(submission_id)
        return
    # Scoring has its own lease: a worker that dies while scoring is noticed too.
    moved = base.update(status=Status.SCORING, lease_expires_at=timezone.now() + dt.timedelta(
        seconds=settings.SCORING_LEASE_S), **{k: v for k, v in record.items() if k != "lease_expires_at"})
    if moved != 1:
        return
    try:
        answers: dict[DatasetFile, dict[str, Any]] = {}
        files = _dataset_files(plan)
        suite = suite_for(submission.phase.challenge)
        if submission.phase.protocol_modes:
            # Interactive: the answers are the trusted side's record, by gold qid (dialog_runs).
            by_mode = dialog_runs.dialog_run_predictions(submission=submission,
                                                         files=[files[ds.slug] for ds in plan.datasets])
            answers = {f: modes[submission.phase.protocol_modes[0]] for f, modes in by_mode.items()}
        for ds in plan.datasets if not submission.phase.protocol_modes else ():
            dataset_file = files[ds.slug]
            # A sealed dataset's system answered under re-keyed ids: map them back to score.
            own_id = ds.qids_for_system(dataset_file.qids)
            predictions = _output_predictions(suite, ds, outcome, list(own_id))
            answers[dataset_file] = {own_id[qid]: answer for qid, answer in predictions.items()}
        # Kept before scoring: when the gold changes, the run is rescored from these, not run again
        # (but an interactive run, whose history held the old gold: rescore.rescore_problem).
        run_answers_store(submission_id=submission_id, answers={f.dataset.slug: a for f, a in answers.items()})
        if submission.phase.protocol_modes:
            results = dialog_runs.dialog_run_results(submission=submission, predictions=by_mode,
                                                     peak_memory_mib=record["peak_memory_mb"])
        else:
            results = {
                f.dataset: score_dataset(submission=submission, dataset_file=f, predictions=a)
                for f, a in answers.items()
            }
        scores_write(submission=submission, results=results, gold={f.dataset: f.sha256 for f in answers})
    except _OutputRejected as exc:
        submission_fail(submission_id, reason=f"invalid output: {exc.reason}", cause=FailureCause.PARTICIPANT,
                        from_statuses=[Status.SCORING], verdict=exc.verdict,
                        dataset=files[exc.dataset.slug].dataset)
    except ScoringError as exc:
        # The output passed every check a team can be told about, yet scoring refused it:
        # the gold is at fault (issue 16), not the team; the organizers read the full reason.
        logger.error("submission %s: scoring failed on checked output: %s", submission_id, exc)
        submission_fail(submission_id, reason=f"scoring failed: {exc}", cause=FailureCause.PLATFORM,
                        from_statuses=[Status.SCORING], verdict=Verdict.GOLD)
        submission_staff_alert(submission_id, reason=f"scoring failed on output that passed every check: {exc}")
    except Exception as exc:
        # After the system exited, with its output past every check the team's fault is decided by
        # (the answers' own rule included): what fails now is the platform's code, disk or database.
        # The traceback goes on the organizers' page; on hidden data the team sees no figure of the
        # run (submission_run_report), and its team's next hidden runs wait for a look once such
        # failures pass the challenge's platform_failures_per_day (compute.run_queue_order).
        logger.exception("submission %s: scoring the run's output failed", submission_id)
        submission_fail(
            submission_id,
            reason="the platform failed while scoring this run; it does not count against your quota",
            cause=FailureCause.PLATFORM,
            from_statuses=[Status.SCORING],
            verdict=Verdict.PLATFORM,
            detail=failure_traceback(exc),
        )
        # Not retried: the run would be repeated for a fault of the scoring code, likely again.
        submission_staff_alert(submission_id, reason=f"the platform failed while scoring this run's output: "
                                                     f"{type(exc).__name__}: {exc}")


def _dataset_files(plan: RunPlan) -> dict[str, DatasetFile]:
    files = DatasetFile.objects.filter(
        dataset__challenge__slug=plan.challenge, portion=plan.portion, dataset__slug__in=[d.slug for d in plan.datasets]
    ).select_related("dataset")
    return {f.dataset.slug: f for f in files}


def submission_run_fail(submission_id: int, *, attempt: int, reason: str) -> None:
    """The submission itself cannot run (an image the engine refuses, a bundle that cannot be
    unpacked): its team's fault, final at once and counted.  Never retried: it would fail the
    same way again, at the platform's cost."""
    Submission.objects.filter(pk=submission_id, status=Status.RUNNING, attempts=attempt).update(
        status=Status.FAILED, failure_reason=reason[:5000], failure_cause=FailureCause.PARTICIPANT,
        verdict=Verdict.NOT_STARTED, finished_at=timezone.now(), lease_expires_at=None, log="", log_notes=[],
    )


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
        detail=detail,
    )
    if outcome == Status.QUEUED:
        logger.warning("submission %s: attempt %s failed (%s); queued again", submission_id, attempt, reason)
    return outcome == Status.QUEUED


def _requeue_or_fail(
    base: QuerySet[Submission], *, submission_id: int, attempts: int, now: dt.datetime, failure_reason: str,
    detail: str = "",
) -> Status | None:
    """Queue the run again while attempts remain, else fail it as the platform's fault and alert
    the organizers.  A re-queued run is due after ``run_retry_delay_s``: its ``dispatched_at`` is
    then, so the lost-message check counts from when its (delayed) message is due.

    The new status, or None when ``base`` (a conditional filter on the run's current
    state) no longer matches: someone else moved the run first.
    """
    # The last attempt's traceback (if the fault has one) stays on the organizers' page.
    kept = {"failure_detail": detail[-FAILURE_DETAIL_CHARS:]} if detail else {}
    if attempts < settings.MAX_RUN_ATTEMPTS:
        due = now + dt.timedelta(seconds=run_retry_delay_s(attempts))
        if base.update(status=Status.QUEUED, worker="", lease_expires_at=None, dispatched_at=due, **kept):
            return Status.QUEUED
        return None
    if base.update(status=Status.FAILED, failure_cause=FailureCause.PLATFORM, finished_at=now, lease_expires_at=None,
                   failure_reason=failure_reason, verdict=Verdict.PLATFORM, **kept):
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
        # Its message was taken and dropped while it was held: a new one, once this commits.
        transaction.on_commit(lambda: _dispatch_again(submission.pk))
    submission.refresh_from_db()
    return submission


def _dispatch_again(submission_id: int) -> None:
    from leaderboard.submissions.compute import run_dispatch_again  # compute imports this module

    run_dispatch_again(submission_id)


# --------------------------------------------------------------------------- the reaper


@dataclass
class Reaped:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    @property
    def stopped(self) -> list[int]:
        return self.requeued + self.failed


def submissions_reap(*, dead_workers: Iterable[str] = (), now: dt.datetime | None = None) -> Reaped:
    """Runs (and scorings) whose worker is gone: queue them again, or fail them after too many tries.

    A worker is gone when its lease expired, or when it is named in ``dead_workers``
    (a worker that restarted on the same host knows its predecessor's process is dead).
    """
    now = now or timezone.now()
    stale = Q(lease_expires_at__lt=now)
    dead = [w for w in dead_workers if w]
    if dead:
        stale |= Q(worker__in=dead)
    reaped = Reaped()
    candidates = Submission.objects.filter(stale, status__in=(Status.RUNNING, Status.SCORING)).values_list(
        "pk", "attempts", "status"
    )
    for pk, attempts, status in candidates:
        outcome = _requeue_or_fail(
            Submission.objects.filter(pk=pk, status=status, attempts=attempts), submission_id=pk, attempts=attempts,
            now=now, failure_reason=(f"the worker running this submission stopped {attempts} times; "
                            "it does not count against your quota"),
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
    lost = [(s.pk, task_for(s), queue) for s in waiting if (queue := queue_for(s)) in queues]
    Submission.objects.filter(pk__in=[pk for pk, _, _ in lost]).update(dispatched_at=now)
    return lost
