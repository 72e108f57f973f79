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
import os
import secrets
import socket
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile, File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from leaderboard.accounts.models import Membership, Team, TeamKind
from leaderboard.accounts.selectors import user_take_part_check
from leaderboard.challenges.models import (
    SYSTEM_KINDS,
    Challenge,
    Dataset,
    DatasetFile,
    IncompleteRows,
    Phase,
    RankingRule,
    Split,
    SubmissionKind,
)
from leaderboard.challenges.selectors import phase_ranking_scope
from leaderboard.challenges.suites import DatasetResult, Suite, scoring_version_of, suite_for
from leaderboard.challenges.versions import board_changed
from leaderboard.core.enqueue import (
    EVALUATE_SUBMISSION,
    RESCORE_SUBMISSION,
    RUN_SYSTEM,
    TASK_QUEUES,
    enqueue_on_commit,
)
from leaderboard.core.errors import PayloadTooLarge, PermissionDenied, QuotaExceeded, ServiceError
from leaderboard.sandbox.answers_json import Answers, answers_refusal
from leaderboard.sandbox.contract import SystemSettings
from leaderboard.submissions.alerts import submission_staff_alert
from leaderboard.submissions.models import (
    FAILURE_DETAIL_CHARS,
    BoardEntry,
    FailureCause,
    QuestionScores,
    Score,
    Status,
    Submission,
    Verdict,
)
from leaderboard.submissions.selectors import quota_usage, submissions_answering_all, team_phase_override_get
from leaderboard.submissions.storage import storage_budget_enforce
from leaderboard.submissions.uploads import (
    DatasetTarget,
    UploadError,
    check_qids,
    missing_datasets_problem,
    parse_upload,
)
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
    now: dt.datetime | None = None,
) -> Submission:
    """Validate a prediction upload whole, then store and queue it, inside the team's quota.

    ``now``: when the upload started (``request_received_at``), for the deadline.
    """
    submission_check_can_submit(team=team, phase=phase, user=user, kind=SubmissionKind.PREDICTIONS, now=now)
    raw = _read_upload(upload, limit_bytes)
    storage_budget_enforce(team=team, incoming_bytes=len(raw))
    name = upload.name or "predictions.json"
    targets = phase_prediction_targets(phase=phase)
    if not targets:
        raise ServiceError("this phase has no dataset with gold answers yet; ask the organizers")
    dataset_targets = [DatasetTarget(ds.slug, (ds.name,), f.qids) for ds, f in targets]
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

    with transaction.atomic():
        quota_enforce_locked(team=team, phase=phase)
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
            sha256=hashlib.sha256(raw).hexdigest(),
            size_bytes=len(raw),
            queued_at=now,
            dispatched_at=now,
        )
        submission_store_and_queue(submission, suffix=".upload", content=ContentFile(raw))
    return submission


def predictions_check(suite: Suite, answers: Answers, *, qids: Sequence[str], where: str) -> None:
    """What the platform can take of each answer (``answers_refusal``: the rule a system's output
    meets too, in the same words), the suite's answer format, then the qids; each fails as an
    UploadError naming ``where``."""
    refused = answers_refusal(answers.by_qid, where=where)
    if refused is not None:
        raise UploadError(refused.message)
    try:
        suite.check_predictions(answers.by_qid, where=where)
    except ScoringError as exc:
        raise UploadError(str(exc)) from None
    check_qids(answers, qids=qids, where=where)


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
    enqueue_on_commit(task_for(submission), submission.pk, queue=queue_for(submission))


def task_for(submission: Submission) -> str:
    return RUN_SYSTEM if submission.kind in SYSTEM_KINDS else EVALUATE_SUBMISSION


def queue_for(submission: Submission) -> str:
    """The broker queue of the submission's task: its challenge's run queue for a system."""
    task = task_for(submission)
    if task != RUN_SYSTEM:
        return TASK_QUEUES[task]
    return run_queue_of(submission.phase.challenge)


def run_queue_of(challenge: Challenge) -> str:
    try:
        return SystemSettings.from_json(challenge.system_settings).queue
    except ValueError:  # refused when the challenge was loaded; the default rather than an error here
        return TASK_QUEUES[RUN_SYSTEM]


def submission_cancel(*, submission: Submission, user: User) -> Submission:
    """A team withdraws its submission: one waiting, or a system while it runs.

    A running system is stopped by its worker at its next heartbeat (which fails once the run is
    no longer ``running``: ``submission_run_heartbeat``), which removes the container and drops
    the run's outcome; a cancelled submission does not count against the quota.  Scoring, which
    takes seconds and may already be writing scores, is not interrupted.
    """
    if not Membership.objects.filter(team_id=submission.team_id, user=user).exists():
        raise PermissionDenied("only members of the team can cancel its submissions")
    changed = Submission.objects.filter(
        Q(status__in=(Status.SUBMITTED, Status.QUEUED)) | Q(status=Status.RUNNING, kind__in=SYSTEM_KINDS),
        pk=submission.pk,
    ).update(status=Status.CANCELLED, finished_at=timezone.now(), lease_expires_at=None)
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


def failure_traceback(exc: BaseException) -> str:
    """An exception's traceback as the organizers read it on the run's page (``failure_detail``)."""
    return "".join(traceback.format_exception(exc))[-FAILURE_DETAIL_CHARS:]


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
        board_changed_if_shown(submission_id)


def board_changed_if_shown(submission_id: int) -> None:
    """A board row may point at a submission that is not finished (a baseline's last run, an imported
    row that failed): a change of its status is on the board too."""
    challenge_id = (BoardEntry.objects.filter(submission_id=submission_id)
                    .values_list("phase__challenge_id", flat=True).first())
    if challenge_id is not None:
        board_changed(challenge_id=challenge_id)


def submission_evaluate(submission_id: int) -> None:
    """Score a queued prediction submission; safe to call twice (the second call does nothing)."""
    now = timezone.now()
    claimed = Submission.objects.filter(
        pk=submission_id, status=Status.QUEUED, kind=SubmissionKind.PREDICTIONS
    ).update(
        status=Status.SCORING,
        started_at=now,
        attempts=F("attempts") + 1,
        # Named as compute workers are, for the console's queue page: which process scores it.
        worker=f"scoring@{socket.gethostname()}:{os.getpid()}"[:200],
        # A worker that dies mid-scoring leaves this lease to expire; the reaper re-queues it.
        lease_expires_at=now + dt.timedelta(seconds=settings.SCORING_LEASE_S),
    )
    if claimed != 1:
        logger.info("submission %s: not queued any more (already claimed, final or gone)", submission_id)
        return
    submission = Submission.objects.select_related("phase__challenge", "team").get(pk=submission_id)
    scoring: Dataset | None = None  # the dataset being scored, named by a gold failure's verdict
    try:
        with submission.file.open("rb") as fh:
            raw = fh.read()
        targets = phase_prediction_targets(phase=submission.phase)
        per_dataset = parse_upload(
            raw,
            filename=submission.original_name or "predictions",
            targets=[DatasetTarget(ds.slug, (ds.name,), f.qids) for ds, f in targets],
            max_expanded_bytes=settings.MAX_PREDICTION_ARCHIVE_BYTES,
        )
        results = {}
        for scoring, f in targets:
            # Checked at the upload already; again here, as the answers are read again from the
            # stored file: what reaches the scorer is what the one rule takes.
            refused = answers_refusal(per_dataset[scoring.slug].by_qid,
                                      where=f"{submission.original_name or 'predictions'} [{scoring.slug}]")
            if refused is not None:
                raise UploadError(refused.message)
            results[scoring] = score_dataset(submission=submission, dataset_file=f,
                                             predictions=per_dataset[scoring.slug].by_qid)
        scores_write(submission=submission, results=results, gold={ds: f.sha256 for ds, f in targets})
    except UploadError as exc:
        submission_fail(submission_id, reason=str(exc), cause=FailureCause.PARTICIPANT, from_statuses=[Status.SCORING],
                        verdict=Verdict.OUTPUT_WRONG_SHAPE)
    except ScoringError as exc:
        # The upload passed every check a team is told about (its format, and its ids against
        # this gold), so a refusal from scoring is the gold's doing, as on the run path: not
        # counted, and the organizers get the full reason, which names the gold file: the
        # team reads the verdict only (submission_run_report).
        logger.error("submission %s: scoring failed on a checked upload: %s", submission_id, exc)
        submission_fail(submission_id, reason=f"scoring failed: {exc}", cause=FailureCause.PLATFORM,
                        from_statuses=[Status.SCORING], verdict=Verdict.GOLD, dataset=scoring)
        submission_staff_alert(submission_id, reason=f"scoring failed on a prediction file that passed every "
                                                     f"check: {exc}")
    except Exception as exc:
        # What is left is the platform's (the answers passed the one rule, the gold's refusals are
        # above): a bug, the disk, the database.  Its traceback is the organizers' (their page).
        logger.exception("submission %s: scoring failed", submission_id)
        submission_fail(
            submission_id,
            reason="the platform failed while scoring this submission; it does not count against your quota",
            cause=FailureCause.PLATFORM,
            from_statuses=[Status.SCORING],
            verdict=Verdict.PLATFORM,
            detail=failure_traceback(exc),
        )


def score_dataset(*, submission: Submission, dataset_file: DatasetFile, predictions: Any) -> DatasetResult:
    suite = suite_for(submission.phase.challenge)
    return suite.score(dataset_file.gold.path, predictions, submission.phase.challenge.suite_options)


def submission_aggregates(
    *, submission: Submission, per_dataset: Mapping[Dataset, Mapping[str, float | None]]
) -> dict[str, float | None]:
    """The aggregates stored with these per-dataset metrics: one definition for scoring and rescoring."""
    suite = suite_for(submission.phase.challenge)
    # The ranking average covers the challenge's ranking scope (MRQA 2019: Splits II and III)
    # among the phase's datasets, whichever of them this submission answered: the others count 0,
    # so primary_score is the same average for every row (best-of selection compares on it).
    ranked = phase_ranking_scope(phase=submission.phase).datasets
    return suite.aggregate(per_dataset, ranked=ranked)


def gold_sha256_current(*, phase: Phase, datasets: Iterable[Dataset]) -> dict[Dataset, str]:
    """The sha256 of each dataset's gold for the phase's portion now ("" where it has none)."""
    shas = dict(
        DatasetFile.objects.filter(dataset__in=list(datasets), portion=phase.portion).values_list("dataset_id", "sha256")
    )
    return {ds: shas.get(ds.pk, "") for ds in datasets}


def scores_write(
    *, submission: Submission, results: Mapping[Dataset, DatasetResult], gold: Mapping[Dataset, str] | None = None
) -> None:
    """Replace the submission's scores in one transaction and finish it (idempotent).

    ``gold``: the sha256 of the gold file each dataset was scored against, recorded on its
    scores (default: the current gold, for callers that score what they just read).
    """
    suite = suite_for(submission.phase.challenge)
    aggregates = submission_aggregates(submission=submission, per_dataset={ds: r.metrics for ds, r in results.items()})
    scored_against = dict(gold) if gold is not None else gold_sha256_current(phase=submission.phase,
                                                                           datasets=list(results))
    with transaction.atomic():
        Score.objects.filter(submission=submission).delete()
        QuestionScores.objects.filter(submission=submission).delete()
        rows = [
            Score(submission=submission, dataset=ds, metric=metric, value=value, gold_sha256=scored_against.get(ds, ""))
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
            verdict=Verdict.FINISHED,
            lease_expires_at=None,
            primary_score=aggregates.get(suite.primary_metric),
            scoring_version=scoring_version_of(submission.phase.challenge.suite_options),
            finished_at=timezone.now(),
        )
        if not finished:
            # Cancelled or claimed elsewhere meanwhile: keep the database as it was.
            transaction.set_rollback(True)
            return
        board_entry_refresh(team=submission.team, phase=submission.phase)
        current = gold_sha256_current(phase=submission.phase, datasets=list(results))
        if any(scored_against.get(ds, "") != sha for ds, sha in current.items()):
            # The gold changed while this was being scored: the rescore that the change queued
            # found it unfinished and left it, so it is queued again here.
            enqueue_on_commit(RESCORE_SUBMISSION, submission.pk)


def aggregates_refresh(*, challenge: Challenge) -> int:
    """Recompute every stored aggregate of the challenge from its per-dataset scores, and the
    board rows that rank on them; returns how many submissions were recomputed.

    Aggregates are stored when scores are written, under the ranking scope of that moment;
    ``challenge_load`` calls this when a spec changes the scope, so no board keeps ranking
    on the old average.
    """
    suite = suite_for(challenge)
    per_submission: dict[int, dict[Dataset, dict[str, float | None]]] = {}
    for score in Score.objects.filter(submission__phase__challenge=challenge, dataset__isnull=False).select_related(
        "dataset"
    ):
        per_submission.setdefault(score.submission_id, {}).setdefault(score.dataset, {})[score.metric] = score.value
    ranked_of: dict[int, list[Dataset]] = {}
    with transaction.atomic():
        for submission in Submission.objects.filter(pk__in=per_submission).select_related("phase__challenge"):
            per_dataset = per_submission[submission.pk]
            if submission.phase_id not in ranked_of:
                ranked_of[submission.phase_id] = phase_ranking_scope(phase=submission.phase).datasets
            aggregates = suite.aggregate(per_dataset, ranked=ranked_of[submission.phase_id])
            Score.objects.filter(submission=submission, dataset=None).delete()
            Score.objects.bulk_create(
                [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
            )
            if submission.status == Status.FINISHED:
                Submission.objects.filter(pk=submission.pk).update(primary_score=aggregates.get(suite.primary_metric))
        for team_id, phase_id in {(s.team_id, s.phase_id) for s in Submission.objects.filter(pk__in=per_submission)}:
            board_entry_refresh(team=Team.objects.get(pk=team_id), phase=Phase.objects.get(pk=phase_id))
    return len(per_submission)


def board_entries_refresh(*, challenge: Challenge) -> None:
    """Choose every team's board row again (the challenge's ranking rule changed)."""
    pairs = (Submission.objects.filter(phase__challenge=challenge).values_list("team_id", "phase_id").distinct())
    teams = {t.pk: t for t in Team.objects.filter(pk__in={t for t, _ in pairs})}
    phases = {p.pk: p for p in Phase.objects.filter(challenge=challenge).select_related("challenge")}
    for team_id, phase_id in pairs:
        board_entry_refresh(team=teams[team_id], phase=phases[phase_id])


def board_entry_refresh(*, team: Team, phase: Phase) -> BoardEntry | None:
    """Point the team's board row at the submission the challenge's ranking rule picks."""
    # A submission an organizer hid never represents its team; a disqualified one (shown unranked,
    # with the reason) only when the team has no other.
    finished = Submission.objects.filter(team=team, phase=phase, status=Status.FINISHED, hidden_reason="")
    if finished.filter(excluded_reason="").exists():
        finished = finished.filter(excluded_reason="")
    rule = phase.challenge.ranking_rule
    chosen: Submission | None
    if rule == RankingRule.BEST:
        # primary_score is the same full-coverage average for every submission (a ranked dataset
        # not answered counts 0), so a prediction file over Split II cannot hide a complete run.
        # The id breaks ties of equal times (imported rows keep theirs): PostgreSQL, unlike SQLite's
        # rowid order, returns equal rows in no fixed order.
        best = finished.filter(primary_score__isnull=False).order_by("-primary_score", "created_at", "id")
        chosen = best.first()
        if (phase.challenge.ranking_scope or {}).get("incomplete") == IncompleteRows.UNRANKED and chosen is not None:
            # Incomplete rows are shown unranked: a complete submission, if any, is the one that ranks.
            ranked = phase_ranking_scope(phase=phase).datasets
            complete = submissions_answering_all(submissions=best, datasets=ranked)
            chosen = next((s for s in best if s.pk in complete), chosen)
    elif rule == RankingRule.SELECTED:
        chosen = finished.filter(is_selected=True).first() or finished.order_by("-created_at", "-id").first()
    else:
        chosen = finished.order_by("-created_at", "-id").first()
    if chosen is None:
        # Published systems whose run failed still appear, marked as failed: a baseline's
        # last run, or an imported row of any team (a failed run in a results export).
        fallback = Submission.objects.filter(team=team, phase=phase, hidden_reason="")
        if team.kind != TeamKind.BASELINE:
            fallback = fallback.filter(kind=SubmissionKind.IMPORTED)
        chosen = fallback.order_by("-created_at", "-id").first()
    if chosen is None:
        BoardEntry.objects.filter(team=team, phase=phase).delete()
        entry = None
    else:
        entry, _ = BoardEntry.objects.update_or_create(team=team, phase=phase, defaults={"submission": chosen})
    # Every write a board shows ends here (scores, a choice, a moderation, a rerun): its snapshot
    # is made again, whether or not the row points elsewhere (the same row may have new scores).
    board_changed(challenge_id=phase.challenge_id)
    return entry


@dataclass
class ImportedEntry:
    """A published result: per-dataset metric values (None where the run failed).

    ``name`` is the team the row belongs to: entries with the same name are one team's
    submissions, and its board row follows the challenge's ranking rule.
    """

    name: str
    scores: dict[str, dict[str, float | None]]
    affiliation: str = ""
    reference: str = ""
    failure: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The row as the results file names it (what a mapping file refers to); "" = ``name``.
    row: str = ""
    # Published results are baselines unless the import says otherwise: a CodaLab export
    # lists participants, and its mapping names the organizers' baselines.
    is_baseline: bool = True
    # Shown unranked on the board with this reason (Submission.excluded_reason).
    excluded_reason: str = ""
    # When the row was originally submitted and scored; None means the time of the import.
    submitted_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None


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


def imported_team_get_or_create(
    *, challenge: Challenge, name: str, is_baseline: bool, affiliation: str, reference: str
) -> Team:
    """The team of imported rows: nobody belongs to it, and it is marked a baseline only if
    the import says so.  A team people belong to is never taken over."""
    kind = TeamKind.BASELINE if is_baseline else TeamKind.PARTICIPANT
    team = Team.objects.filter(challenge=challenge, name=name).first()
    if team is None:
        return Team.objects.create(
            challenge=challenge, name=name, kind=kind, affiliation=affiliation, reference=reference,
            join_code=secrets.token_urlsafe(12),
        )
    if Membership.objects.filter(team=team).exists():
        raise ServiceError(f"{name}: a participant team already has that name")
    if team.kind != kind:
        # Baseline teams may carry a join code derived from their name; a participant-kind
        # team must not, or anyone could join an imported team and submit as it.
        team.join_code = secrets.token_urlsafe(12)
    team.kind, team.affiliation, team.reference = kind, affiliation, reference
    team.save(update_fields=["kind", "affiliation", "reference", "join_code"])
    return team


def _team_affiliation(name: str, group: list[ImportedEntry]) -> str:
    """The affiliation a team's rows agree on ("" if none gives one)."""
    values = {e.affiliation for e in group} - {""}
    if len(values) > 1:
        rows = ", ".join(repr(e.row or e.name) for e in group)
        raise ServiceError(f"team {name!r} (rows {rows}): its rows disagree on the affiliation "
                           f"({', '.join(map(repr, sorted(values)))})")
    return values.pop() if values else ""


def results_import(*, phase: Phase, entries: Iterable[ImportedEntry], replace: bool = False) -> list[Submission]:
    """Add published rows to a phase's board, one submission per entry, grouped into teams by name.

    Re-importing replaces those teams' imported rows in this phase, so running the same
    import twice changes nothing.  With ``replace`` the import is the phase's whole set of
    imported rows: teams it no longer names lose theirs (and are deleted if that leaves
    them with no submission and no member), as when a mapping file renames or groups rows.
    """
    datasets = {d.slug.lower(): d for d in phase.challenge.datasets.all()}
    datasets.update({d.name.lower(): d for d in phase.challenge.datasets.all()})
    suite = suite_for(phase.challenge)
    ranked = phase_ranking_scope(phase=phase).datasets
    teams: dict[str, list[ImportedEntry]] = {}
    for entry in entries:
        teams.setdefault(entry.name[:100], []).append(entry)
    created: list[Submission] = []
    with transaction.atomic():
        for name, group in teams.items():
            excluded = [e for e in group if e.excluded_reason]
            if excluded and len(group) > 1:
                # The team's one board row is its best (or latest) submission: an excluded row
                # in a group would either represent the team or vanish with its reason.
                raise ServiceError(f"{excluded[0].row or name!r}: an excluded row cannot share team {name!r} "
                                   "with other rows; give it a team of its own")
            if len({e.is_baseline for e in group}) > 1:
                raise ServiceError(f"team {name!r}: some of its rows are marked baselines and some are not")
            team = imported_team_get_or_create(
                challenge=phase.challenge, name=name, is_baseline=group[0].is_baseline,
                # Cut to their columns, as the name is above (PostgreSQL refuses longer text).
                affiliation=_team_affiliation(name, group)[:200],
                reference=next((e.reference for e in group if e.reference), "")[:300],
            )
            Submission.objects.filter(team=team, phase=phase, kind=SubmissionKind.IMPORTED).delete()
            for entry in group:
                created.append(_imported_submission_create(team=team, phase=phase, entry=entry,
                                                           datasets=datasets, suite=suite, ranked=ranked))
            board_entry_refresh(team=team, phase=phase)
        # Even an import of no rows may have replaced (deleted) rows the board showed.
        board_changed(challenge_id=phase.challenge_id)
        if replace:
            stale = Submission.objects.filter(phase=phase, kind=SubmissionKind.IMPORTED).exclude(team__name__in=teams)
            stale_teams = list(Team.objects.filter(pk__in=stale.values("team_id")))
            stale.delete()
            for team in stale_teams:
                if Submission.objects.filter(team=team).exists() or Membership.objects.filter(team=team).exists():
                    board_entry_refresh(team=team, phase=phase)
                else:
                    team.delete()
    return created


def _imported_submission_create(
    *, team: Team, phase: Phase, entry: ImportedEntry, datasets: Mapping[str, Dataset], suite: Suite,
    ranked: Sequence[Dataset],
) -> Submission:
    per_dataset: dict[Dataset, dict[str, float | None]] = {}
    for key, metrics in entry.scores.items():
        ds = datasets.get(key.lower())
        if ds is None:
            raise ServiceError(f"{entry.row or entry.name}: no dataset called {key!r} in {phase.challenge.slug}")
        per_dataset[ds] = metrics
    failed = bool(entry.failure) or any(v is None for m in per_dataset.values() for v in m.values())
    # A dataset column the results file lacks for this row is a dataset it did not answer: the
    # same rule as for submissions (it counts 0, or the board shows the row unranked).
    aggregates = suite.aggregate(per_dataset, ranked=ranked)
    now = timezone.now()
    submission = Submission.objects.create(
        team=team,
        phase=phase,
        kind=SubmissionKind.IMPORTED,
        status=Status.FAILED if failed else Status.FINISHED,
        failure_reason=entry.failure or ("no scores: the run failed" if failed else ""),
        failure_cause=FailureCause.PARTICIPANT if failed else FailureCause.NONE,
        excluded_reason=entry.excluded_reason[:300],
        # Which row of the results file this was: a team may group several.
        description=(entry.row or entry.reference)[:300],
        primary_score=None if failed else aggregates.get(suite.primary_metric),
        scoring_version="imported",
        finished_at=entry.finished_at or entry.submitted_at or now,
    )
    if entry.submitted_at is not None:
        # created_at is auto_now_add; the board shows it as the submission time, and the
        # ranking rule breaks ties on it, so it must be the original one.
        Submission.objects.filter(pk=submission.pk).update(created_at=entry.submitted_at)
        submission.created_at = entry.submitted_at
    rows = [
        Score(submission=submission, dataset=ds, metric=m, value=v)
        for ds, metrics in per_dataset.items()
        for m, v in metrics.items()
    ]
    rows += [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
    Score.objects.bulk_create(rows)
    return submission
