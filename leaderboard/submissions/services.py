"""Writes for submissions: the state machine, scoring, and board entries.

Lifecycle: submitted -> queued -> running -> scoring -> finished, or failed
(with a reason a person can act on, and who caused it) or cancelled.  Every
transition is a conditional UPDATE on the current status, so two workers (or a
redelivered message) can never both move the same submission forward.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile, File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.accounts.models import Membership, Team, TeamKind
from leaderboard.challenges.models import (
    SYSTEM_KINDS,
    Challenge,
    Dataset,
    DatasetFile,
    Phase,
    RankingRule,
    Split,
    SubmissionKind,
)
from leaderboard.challenges.suites import SCORING_VERSION, DatasetResult, Suite, suite_for
from leaderboard.core.errors import PayloadTooLarge, PermissionDenied, QuotaExceeded, ServiceError
from leaderboard.core.tasks import EVALUATE_SUBMISSION, RUN_SYSTEM, enqueue_on_commit
from leaderboard.submissions.models import (
    BoardEntry,
    FailureCause,
    QuestionScores,
    Score,
    Status,
    Submission,
)
from leaderboard.submissions.selectors import quota_usage
from leaderboard.submissions.uploads import DatasetTarget, UploadError, check_qids, parse_upload
from scoring.errors import ScoringError

logger = logging.getLogger(__name__)


def phase_prediction_targets(*, phase: Phase) -> list[tuple[Dataset, DatasetFile]]:
    """Datasets a prediction file must cover in this phase: those with gold for its portion.

    Split III datasets are left out: teams never see their questions, so only
    containerised systems can be run on them.
    """
    files = (
        DatasetFile.objects.filter(dataset__challenge_id=phase.challenge_id, portion=phase.portion)
        .exclude(dataset__split=Split.III)
        .select_related("dataset")
        .order_by("dataset__order", "dataset__slug")
    )
    return [(f.dataset, f) for f in files]


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


def submission_check_can_submit(*, team: Team, phase: Phase, user: User, kind: str) -> None:
    if team.challenge_id != phase.challenge_id:
        raise ServiceError("this team does not take part in that challenge")
    if not Membership.objects.filter(team=team, user=user).exists():
        raise PermissionDenied("only members of the team can submit for it")
    now = timezone.now()
    if now < phase.opens_at:
        raise ServiceError(f"the phase {phase.name!r} opens at {phase.opens_at:%Y-%m-%d %H:%M} UTC")
    if now >= phase.closes_at:
        raise ServiceError(f"the phase {phase.name!r} closed at {phase.closes_at:%Y-%m-%d %H:%M} UTC")
    if kind not in phase.allowed_kinds:
        allowed = ", ".join(phase.allowed_kinds) or "nothing"
        raise ServiceError(f"this phase does not accept {kind} submissions (it accepts: {allowed})")


def submission_create_predictions(
    *,
    team: Team,
    phase: Phase,
    user: User,
    upload: UploadedFile,
    limit_bytes: int,
    description: str = "",
    dataset_hint: str | None = None,
) -> Submission:
    """Validate a prediction upload whole, then store and queue it, inside the team's quota."""
    submission_check_can_submit(team=team, phase=phase, user=user, kind=SubmissionKind.PREDICTIONS)
    raw = _read_upload(upload, limit_bytes)
    name = upload.name or "predictions.json"
    targets = phase_prediction_targets(phase=phase)
    if not targets:
        raise ServiceError("this phase has no dataset with gold answers yet; ask the organizers")
    per_dataset = parse_upload(
        raw,
        filename=name,
        targets=[DatasetTarget(ds.slug, (ds.name,), f.qids) for ds, f in targets],
        dataset_hint=dataset_hint,
    )
    suite = suite_for(phase.challenge)
    for ds, f in targets:
        predictions_check(suite, per_dataset[ds.slug], qids=f.qids, where=f"{name} [{ds.slug}]")

    with transaction.atomic():
        quota_enforce_locked(team=team, phase=phase)
        now = timezone.now()
        submission = Submission(
            team=team,
            phase=phase,
            submitted_by=user,
            kind=SubmissionKind.PREDICTIONS,
            status=Status.QUEUED,
            description=description[:300],
            original_name=name[:255],
            sha256=hashlib.sha256(raw).hexdigest(),
            size_bytes=len(raw),
            queued_at=now,
            dispatched_at=now,
        )
        submission_store_and_queue(submission, suffix=".upload", content=ContentFile(raw))
    return submission


def predictions_check(suite: Suite, predictions: Any, *, qids: Sequence[str], where: str) -> None:
    """The suite's answer format, then the qids; both fail as an UploadError naming ``where``."""
    try:
        suite.check_predictions(predictions, where=where)
    except ScoringError as exc:
        raise UploadError(str(exc)) from None
    check_qids(predictions, qids=qids, where=where)


def quota_enforce_locked(*, team: Team, phase: Phase) -> None:
    """Inside a transaction: refuse past the quota, with the team's row locked until commit.

    Submissions of one team are serialised this way: the quota count and the insert must not
    interleave.
    """
    Team.objects.select_for_update().filter(pk=team.pk).first()
    refusal = quota_usage(team=team, phase=phase).refusal()
    if refusal:
        raise QuotaExceeded(refusal)


def submission_store_and_queue(submission: Submission, *, suffix: str, content: File) -> None:  # type: ignore[type-arg]
    """Store the uploaded file beside the new submission and queue its task after commit."""
    phase, team = submission.phase, submission.team
    submission.file.save(f"{phase.challenge.slug}-{team.pk}-{submission.sha256[:16]}{suffix}", content, save=False)
    try:
        submission.save()
    except Exception:
        submission.file.delete(save=False)
        raise
    enqueue_on_commit(task_for(submission), submission.pk)


def task_for(submission: Submission) -> str:
    return RUN_SYSTEM if submission.kind in SYSTEM_KINDS else EVALUATE_SUBMISSION


def submission_cancel(*, submission: Submission, user: User) -> Submission:
    if not Membership.objects.filter(team_id=submission.team_id, user=user).exists():
        raise PermissionDenied("only members of the team can cancel its submissions")
    changed = Submission.objects.filter(
        pk=submission.pk, status__in=(Status.SUBMITTED, Status.QUEUED)
    ).update(status=Status.CANCELLED, finished_at=timezone.now())
    if not changed:
        raise ServiceError("only a submission that has not started can be cancelled")
    submission.refresh_from_db()
    return submission


def submission_select(*, submission: Submission, user: User) -> Submission:
    """Make this the team's selected submission for its phase (ranking rule 'selected')."""
    if not Membership.objects.filter(team_id=submission.team_id, user=user).exists():
        raise PermissionDenied("only members of the team can select its submission")
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


def submission_fail(submission_id: int, *, reason: str, cause: str, from_statuses: Iterable[str]) -> None:
    Submission.objects.filter(pk=submission_id, status__in=list(from_statuses)).update(
        status=Status.FAILED, failure_reason=reason[:5000], failure_cause=cause, finished_at=timezone.now(),
        lease_expires_at=None,
    )


def submission_evaluate(submission_id: int) -> None:
    """Score a queued prediction submission; safe to call twice (the second call does nothing)."""
    now = timezone.now()
    claimed = Submission.objects.filter(
        pk=submission_id, status=Status.QUEUED, kind=SubmissionKind.PREDICTIONS
    ).update(
        status=Status.SCORING,
        started_at=now,
        attempts=F("attempts") + 1,
        # A worker that dies mid-scoring leaves this lease to expire; the reaper re-queues it.
        lease_expires_at=now + dt.timedelta(seconds=settings.SCORING_LEASE_S),
    )
    if claimed != 1:
        logger.info("submission %s: not queued any more (already claimed, final or gone)", submission_id)
        return
    submission = Submission.objects.select_related("phase__challenge", "team").get(pk=submission_id)
    try:
        with submission.file.open("rb") as fh:
            raw = fh.read()
        targets = phase_prediction_targets(phase=submission.phase)
        per_dataset = parse_upload(
            raw,
            filename=submission.original_name or "predictions",
            targets=[DatasetTarget(ds.slug, (ds.name,), f.qids) for ds, f in targets],
        )
        results = {
            ds: score_dataset(submission=submission, dataset_file=f, predictions=per_dataset[ds.slug])
            for ds, f in targets
        }
        scores_write(submission=submission, results=results)
    except (ScoringError, UploadError) as exc:
        submission_fail(submission_id, reason=str(exc), cause=FailureCause.PARTICIPANT, from_statuses=[Status.SCORING])
    except Exception:
        logger.exception("submission %s: scoring failed", submission_id)
        submission_fail(
            submission_id,
            reason="the platform failed while scoring this submission; it does not count against your quota",
            cause=FailureCause.PLATFORM,
            from_statuses=[Status.SCORING],
        )


def score_dataset(*, submission: Submission, dataset_file: DatasetFile, predictions: Any) -> DatasetResult:
    suite = suite_for(submission.phase.challenge)
    return suite.score(dataset_file.gold.path, predictions, submission.phase.challenge.suite_options)


def scores_write(*, submission: Submission, results: Mapping[Dataset, DatasetResult]) -> None:
    """Replace the submission's scores in one transaction and finish it (idempotent)."""
    suite = suite_for(submission.phase.challenge)
    aggregates = suite.aggregate({ds: r.metrics for ds, r in results.items()})
    with transaction.atomic():
        Score.objects.filter(submission=submission).delete()
        QuestionScores.objects.filter(submission=submission).delete()
        rows = [
            Score(submission=submission, dataset=ds, metric=metric, value=value)
            for ds, result in results.items()
            for metric, value in result.metrics.items()
        ]
        rows += [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
        Score.objects.bulk_create(rows)
        QuestionScores.objects.bulk_create(
            [QuestionScores(submission=submission, dataset=ds, records=r.per_example) for ds, r in results.items()]
        )
        finished = Submission.objects.filter(pk=submission.pk, status=Status.SCORING).update(
            status=Status.FINISHED,
            lease_expires_at=None,
            primary_score=aggregates.get(suite.primary_metric),
            scoring_version=SCORING_VERSION,
            finished_at=timezone.now(),
        )
        if not finished:
            # Cancelled or claimed elsewhere meanwhile: keep the database as it was.
            transaction.set_rollback(True)
            return
        board_entry_refresh(team=submission.team, phase=submission.phase)


def board_entry_refresh(*, team: Team, phase: Phase) -> BoardEntry | None:
    """Point the team's board row at the submission the challenge's ranking rule picks."""
    finished = Submission.objects.filter(team=team, phase=phase, status=Status.FINISHED)
    rule = phase.challenge.ranking_rule
    chosen: Submission | None
    if rule == RankingRule.BEST:
        chosen = finished.filter(primary_score__isnull=False).order_by("-primary_score", "created_at").first()
    elif rule == RankingRule.SELECTED:
        chosen = finished.filter(is_selected=True).first() or finished.order_by("-created_at").first()
    else:
        chosen = finished.order_by("-created_at", "-id").first()
    if chosen is None and team.kind == TeamKind.BASELINE:
        # Published systems whose run failed still appear, marked as failed.
        chosen = Submission.objects.filter(team=team, phase=phase).order_by("-created_at").first()
    if chosen is None:
        BoardEntry.objects.filter(team=team, phase=phase).delete()
        return None
    entry, _ = BoardEntry.objects.update_or_create(team=team, phase=phase, defaults={"submission": chosen})
    return entry


@dataclass
class ImportedEntry:
    """A published result: per-dataset metric values (None where the run failed)."""

    name: str
    scores: dict[str, dict[str, float | None]]
    affiliation: str = ""
    reference: str = ""
    failure: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def baseline_team_get_or_create(*, challenge: Challenge, name: str) -> Team:
    """The marked row for a baseline or published system; a participant team's name is refused."""
    team, _ = Team.objects.get_or_create(
        challenge=challenge,
        name=name[:100],
        defaults={"kind": TeamKind.BASELINE,
                  "join_code": hashlib.sha256(f"{challenge.slug}:{name}".encode()).hexdigest()[:32]},
    )
    if team.kind != TeamKind.BASELINE:
        raise ServiceError(f"{name}: a participant team already has that name")
    return team


def results_import(*, phase: Phase, entries: Iterable[ImportedEntry]) -> list[Submission]:
    """Add baseline/historical rows; re-importing the same names replaces their scores."""
    datasets = {d.slug.lower(): d for d in phase.challenge.datasets.all()}
    datasets.update({d.name.lower(): d for d in phase.challenge.datasets.all()})
    suite = suite_for(phase.challenge)
    created: list[Submission] = []
    with transaction.atomic():
        for entry in entries:
            per_dataset: dict[Dataset, dict[str, float | None]] = {}
            for key, metrics in entry.scores.items():
                ds = datasets.get(key.lower())
                if ds is None:
                    raise ServiceError(f"{entry.name}: no dataset called {key!r} in {phase.challenge.slug}")
                per_dataset[ds] = metrics
            team = baseline_team_get_or_create(challenge=phase.challenge, name=entry.name)
            team.affiliation = entry.affiliation
            team.reference = entry.reference
            team.save(update_fields=["affiliation", "reference"])
            Submission.objects.filter(team=team, phase=phase, kind=SubmissionKind.IMPORTED).delete()
            failed = bool(entry.failure) or any(v is None for m in per_dataset.values() for v in m.values())
            aggregates = suite.aggregate(per_dataset)
            submission = Submission.objects.create(
                team=team,
                phase=phase,
                kind=SubmissionKind.IMPORTED,
                status=Status.FAILED if failed else Status.FINISHED,
                failure_reason=entry.failure or ("no scores: the run failed" if failed else ""),
                failure_cause=FailureCause.PARTICIPANT if failed else FailureCause.NONE,
                description=entry.reference[:300],
                primary_score=None if failed else aggregates.get(suite.primary_metric),
                scoring_version="imported",
                finished_at=timezone.now(),
            )
            rows = [
                Score(submission=submission, dataset=ds, metric=m, value=v)
                for ds, metrics in per_dataset.items()
                for m, v in metrics.items()
            ]
            rows += [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
            Score.objects.bulk_create(rows)
            board_entry_refresh(team=team, phase=phase)
            created.append(submission)
    return created
