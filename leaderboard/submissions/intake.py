"""Intake: accepting both kinds of upload (prediction files and systems) and queueing them.

Who may submit and when (``submission_check_can_submit``), the upload read or spooled whole and
checked (answers, or the image archive or bundle), the team's storage budget and quota (with its
row locked), then stored and queued: its task sent after commit (``submission_task_enqueue``; a system run has
none, its row is the queue).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from leaderboard.accounts.models import Membership, Team
from leaderboard.accounts.selectors import user_take_part_check
from leaderboard.accounts.services import baseline_team_get_or_create
from leaderboard.challenges.budget_tracks import budget_track_upload_refusal
from leaderboard.challenges.models import SYSTEM_KINDS, Phase, SubmissionKind
from leaderboard.challenges.selectors import (
    challenge_run_queue,
    dataset_upload_names,
    phase_prediction_targets,
    phase_refusal,
)
from leaderboard.challenges.suites import suite_for
from leaderboard.core.enqueue import EVALUATE_SUBMISSION, enqueue_on_commit
from leaderboard.core.errors import (
    DuplicateUpload,
    PayloadTooLarge,
    PermissionDenied,
    QuotaExceeded,
    ServiceError,
)
from leaderboard.core.run_wakeups import run_queue_notify_on_commit
from leaderboard.sandbox.archives import ArchiveError, bundle_inspect, image_archive_inspect, image_protocol
from leaderboard.sandbox.contract import BUNDLE_DECLARATION, INTERACTIVE, PROTOCOL_LABEL
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import predictions_check
from leaderboard.submissions.selectors import quota_usage, submission_duplicate_of, team_phase_override_get
from leaderboard.submissions.storage import storage_budget_enforce
from leaderboard.submissions.uploads import DatasetTarget, UploadError, missing_datasets_problem, parse_upload


def _read_upload(upload: UploadedFile, limit: int) -> bytes:
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(f"{upload.name}: {upload.size} bytes; the limit is {limit} bytes")
    chunks = []
    size = 0
    for chunk in upload.chunks():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"{upload.name}: larger than the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def submission_check_can_submit(
    *, team: Team, phase: Phase, user: User, kind: str, now: dt.datetime | None = None
) -> None:
    """Refuse what the team may not submit.  ``now`` is when the upload started (the request's
    arrival): a large upload begun before the close is in time though its body arrives after."""
    if team.challenge_id != phase.challenge_id:
        raise ServiceError("this team does not take part in that challenge")
    if not Membership.objects.filter(team=team, user=user).exists():
        raise PermissionDenied("only members of the team can submit for it")
    user_take_part_check(user=user, team=team)  # the one rule of who may take part (confirmed, approved)
    started = now or timezone.now()
    if started < phase.opens_at:
        raise ServiceError(f"the phase {phase.name!r} opens at {phase.opens_at:%Y-%m-%d %H:%M} UTC")
    # An organizer may have extended the deadline for this team (TeamPhaseOverride).
    extended = team_phase_override_get(team=team, phase=phase)
    closes_at = extended.closes_at if extended and extended.closes_at else phase.closes_at
    if started >= closes_at:
        raise ServiceError(f"the phase {phase.name!r} closed at {closes_at:%Y-%m-%d %H:%M} UTC")
    # Bytes that trickle in long after the close could have been computed after it.
    grace = dt.timedelta(seconds=settings.UPLOAD_DEADLINE_GRACE_S)
    if timezone.now() > closes_at + grace:
        raise ServiceError(
            f"the phase {phase.name!r} closed at {closes_at:%Y-%m-%d %H:%M} UTC; this upload started"
            f" before the close but took more than {settings.UPLOAD_DEADLINE_GRACE_S} s after it to arrive"
        )
    refusal = phase_refusal(phase, kind)
    if refusal:
        raise ServiceError(refusal)


def submission_create_predictions(
    *,
    team: Team,
    phase: Phase,
    user: User,
    upload: UploadedFile,
    limit_bytes: int,
    description: str = "",
    dataset_hint: str | None = None,
    now: dt.datetime | None = None,
    allow_duplicate: bool = False,
) -> Submission:
    """Validate a prediction upload whole, then store and queue it, inside the team's quota.

    ``now``: when the upload started (``request_received_at``), for the deadline; ``allow_duplicate``:
    the caller confirmed sending a file the team already submitted (``duplicate_refuse``).
    """
    submission_check_can_submit(team=team, phase=phase, user=user, kind=SubmissionKind.PREDICTIONS, now=now)
    raw = _read_upload(upload, limit_bytes)
    storage_budget_enforce(team=team, incoming_bytes=len(raw))
    name = upload.name or "predictions.json"
    targets = phase_prediction_targets(phase=phase)
    if not targets:
        raise ServiceError("this phase has no dataset with gold answers yet; ask the organizers")
    dataset_targets = [DatasetTarget(ds.slug, dataset_upload_names(ds), f.qids) for ds, f in targets]
    per_dataset = parse_upload(
        raw,
        filename=name,
        targets=dataset_targets,
        max_expanded_bytes=settings.MAX_PREDICTION_ARCHIVE_BYTES,
        dataset_hint=dataset_hint,
        require_all=False,
    )
    suite = suite_for(phase.challenge)
    # Every dataset's problems in one refusal (one line each), so a team fixes them in one go.
    problems = [missing_datasets_problem(per_dataset, filename=name, targets=dataset_targets)]
    for ds, f in targets:
        if ds.slug in per_dataset:
            try:
                predictions_check(suite, per_dataset[ds.slug], qids=f.qids, where=f"{name} [{ds.slug}]")
            except UploadError as exc:
                problems.append(exc.message)
    if any(problems):
        raise UploadError("\n".join(p for p in problems if p))

    sha256 = hashlib.sha256(raw).hexdigest()
    with transaction.atomic():
        quota_enforce_locked(team=team, phase=phase)
        if not allow_duplicate:
            duplicate_refuse(team=team, phase=phase, sha256=sha256)
        storage_budget_enforce(team=team, incoming_bytes=len(raw))
        now = timezone.now()
        submission = Submission(
            team=team,
            phase=phase,
            submitted_by=user,
            kind=SubmissionKind.PREDICTIONS,
            status=Status.QUEUED,
            description=description[:300],
            original_name=name[:255],
            sha256=sha256,
            size_bytes=len(raw),
            queued_at=now,
            dispatched_at=now,
        )
        submission_store_and_queue(submission, suffix=".upload", content=ContentFile(raw))
    return submission


def quota_enforce_locked(*, team: Team, phase: Phase) -> None:
    """Inside a transaction: refuse past the quota, with the team's row locked until commit.

    Submissions of one team are serialised this way: the quota count and the insert must not
    interleave.
    """
    Team.objects.select_for_update().filter(pk=team.pk).first()
    refusal = quota_usage(team=team, phase=phase).refusal()
    if refusal:
        raise QuotaExceeded(refusal)


# How a caller confirms a duplicate: the web form's box and the API's field.
DUPLICATE_CONFIRM_LABEL = "Send it again anyway"
DUPLICATE_CONFIRM_FIELD = "allow_duplicate"


def duplicate_refuse(*, team: Team, phase: Phase, sha256: str) -> None:
    """Refuse (409, nothing counted) a prediction file the team already submitted to this phase,
    naming the earlier submission, unless the caller confirms: the web form and the API ask the same way.

    Asked, not silently taken nor silently refused: the same prediction file scores the same, so a
    second copy only spends quota (Kaggle and EvalAI, as we know them, take it and count it, and
    teams find out from their quota); but sending it again can be meant (after the organizers
    replaced a gold file, say), so one confirmation sends it.  Inside the team's row lock, so a double click does not
    slip two copies past it.
    """
    earlier = submission_duplicate_of(team=team, phase=phase, sha256=sha256)
    if earlier is None:
        return
    raise DuplicateUpload(
        f"This file is the same as your submission {earlier.pk} to the {phase.name} phase "
        f"({earlier.original_name or 'upload'}, {earlier.created_at:%Y-%m-%d %H:%M} UTC, {earlier.status}; "
        f"sha256 {sha256[:12]}): it would score the same and use one more of your quota. Nothing was "
        f"counted. To send it again anyway, tick \"{DUPLICATE_CONFIRM_LABEL}\" and choose the file again "
        f"(API: {DUPLICATE_CONFIRM_FIELD}=true).",
        duplicate_of=earlier.pk, field="file",
    )


def submission_store_and_queue(submission: Submission, *, suffix: str, content: File) -> None:
    """Store the uploaded file beside the new submission and queue its task after commit."""
    phase, team = submission.phase, submission.team
    submission.file.save(f"{phase.challenge.slug}-{team.pk}-{submission.sha256[:16]}{suffix}", content, save=False)
    try:
        submission.save()
    except Exception:
        submission.file.delete(save=False)
        raise
    submission_task_enqueue(submission)


def task_for(submission: Submission) -> str | None:
    """The task a queued submission is sent as, or None for a system run: its row in ``queued`` is
    the queue, claimed over the internal API (``worker_api.submission_run_claim_next``), so the
    compute workers need no broker at all."""
    return None if submission.kind in SYSTEM_KINDS else EVALUATE_SUBMISSION


def submission_task_enqueue(submission: Submission) -> None:
    """Send the queued submission's task once the transaction commits; for a system run, wake the
    compute workers waiting on its run queue instead (``core.run_wakeups``)."""
    task = task_for(submission)
    if task is not None:
        enqueue_on_commit(task, submission.pk)
    else:
        run_queue_notify_on_commit(challenge_run_queue(submission.phase.challenge))


class _SpooledUpload(File):
    """A file already on disk: FileSystemStorage moves it into place instead of copying."""

    def temporary_file_path(self) -> str:
        return str(self.name)


def _spool(upload: File, limit: int) -> tuple[str, str, int]:
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
    track: str = "",
) -> Submission:
    """Check an image archive or code bundle whole, then store and queue it, inside the quota.

    ``track``: the budget track the team means it for (``challenges.budget_tracks``): refused here,
    before it costs a run, when its size is already over that track's.

    ``now``: when the upload started (``request_received_at``), for the deadline.  The same system
    sent again is taken without a question (unlike a prediction file, ``duplicate_refuse``): a run
    is not a pure function of its bundle (timings, seeds, a time limit it grazed), so running it
    again is something a team means.
    """
    if kind not in SYSTEM_KINDS:
        raise ServiceError(f"unknown kind of system {kind!r}: use docker_image or code_bundle", field="kind")
    submission_check_can_submit(team=team, phase=phase, user=user, kind=kind, now=now)
    name = upload.name or ("image.tar" if kind == SubmissionKind.DOCKER_IMAGE else "bundle.zip")
    # Over the team's storage budget: refused before a byte is spooled when the size is declared.
    storage_budget_enforce(team=team, incoming_bytes=upload.size or 0)
    if track:  # the declared size first, the counted one after the spool: neither is taken over the track's
        _track_enforce(phase=phase, track=track, name=name, size_bytes=upload.size or 0)
    path, sha256, size = _spool(upload, settings.MAX_SYSTEM_UPLOAD_BYTES)
    if track:
        try:
            _track_enforce(phase=phase, track=track, name=name, size_bytes=size)
        except UploadError:
            os.unlink(path)
            raise
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


def _track_enforce(*, phase: Phase, track: str, name: str, size_bytes: int) -> None:
    refusal = budget_track_upload_refusal(phase=phase, track=track, size_bytes=size_bytes)
    if refusal is not None:
        raise UploadError(f"{name}: {refusal}", field="track")


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
