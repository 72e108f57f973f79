"""Reads for submissions: quotas, history, queue position."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.text import slugify

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import SYSTEM_KINDS, DatasetFile, Phase
from leaderboard.challenges.selectors import aggregate_is_one_sealed_dataset, dataset_label
from leaderboard.challenges.suites import suite_for
from leaderboard.submissions.models import ACTIVE_STATUSES, FailureCause, Status, Submission
from leaderboard.submissions.systems import RunDataset, RunPlan, SystemSettings

QUOTA_WINDOW = dt.timedelta(hours=24)


def submissions_counting_against_quota(*, team: Team, phase: Phase) -> QuerySet[Submission]:
    """What counts against a quota: every submission of the team in the phase, except

    - cancelled ones (withdrawn before they produced a score), and
    - failures the platform caused (a worker crash, a lost broker): never the team's fault.

    Failures the submission caused (invalid output, a crash of the team's system)
    do count, so failed runs cannot be used to probe the hidden test set for free.
    """
    return (
        Submission.objects.filter(team=team, phase=phase)
        .exclude(status=Status.CANCELLED)
        .exclude(status=Status.FAILED, failure_cause=FailureCause.PLATFORM)
    )


@dataclass(frozen=True)
class QuotaUsage:
    used_today: int
    used_total: int
    active: int
    per_day: int | None
    total: int | None
    concurrent: int | None

    def refusal(self) -> str | None:
        if self.per_day is not None and self.used_today >= self.per_day:
            return f"daily quota reached: {self.used_today} of {self.per_day} submissions in the last 24 hours"
        if self.total is not None and self.used_total >= self.total:
            return f"total quota reached: {self.used_total} of {self.total} submissions in this phase"
        if self.concurrent is not None and self.active >= self.concurrent:
            return f"{self.active} submission(s) still being evaluated; at most {self.concurrent} at once"
        return None


def quota_usage(*, team: Team, phase: Phase, now: dt.datetime | None = None) -> QuotaUsage:
    now = now or timezone.now()
    counted = submissions_counting_against_quota(team=team, phase=phase)
    return QuotaUsage(
        used_today=counted.filter(created_at__gt=now - QUOTA_WINDOW).count(),
        used_total=counted.count(),
        active=counted.filter(status__in=ACTIVE_STATUSES).count(),
        per_day=phase.quota_per_day,
        total=phase.quota_total,
        concurrent=phase.quota_concurrent,
    )



def submission_queue_position(*, submission: Submission) -> int | None:
    """1 for the next submission a worker will take; None once it has started.

    Systems and prediction files wait in separate queues (a run takes minutes,
    scoring a file seconds), so a submission counts only those of its own queue.
    """
    if submission.status not in (Status.SUBMITTED, Status.QUEUED):
        return None
    same_queue = (
        Q(kind__in=SYSTEM_KINDS) if submission.kind in SYSTEM_KINDS else ~Q(kind__in=SYSTEM_KINDS)
    )
    mine = submission.queued_at or submission.created_at
    ahead = (
        Submission.objects.filter(status__in=(Status.SUBMITTED, Status.QUEUED))
        .filter(same_queue)
        .filter(Q(queued_at__lt=mine) | Q(queued_at=mine, id__lt=submission.id))
    )
    return ahead.count() + 1


_INPUT_FORMATS = {"mrqa": "mrqa", "mrc2018": "dureader"}


def system_run_plan(*, submission: Submission) -> RunPlan:
    """What a run of this system reads and writes: every dataset with gold for the phase's portion.

    Split III datasets are included under their sealed alias (file names too)
    until the organizers reveal them.
    """
    phase = submission.phase
    challenge = phase.challenge
    suite = suite_for(challenge)
    system = SystemSettings.from_json(challenge.system_settings)
    files = (
        DatasetFile.objects.filter(dataset__challenge=challenge, portion=phase.portion)
        .select_related("dataset")
        .order_by("dataset__order", "dataset__slug")
    )
    datasets = []
    for f in files:
        ds = f.dataset
        label = (ds.sealed_alias or f"Hidden-{ds.pk}") if ds.is_sealed else ds.name
        key = slugify(label) or f"dataset-{ds.pk}"
        datasets.append(
            RunDataset(
                slug=ds.slug,
                label=label,
                format=_INPUT_FORMATS.get(suite.key, suite.key),
                source=f.inputs.path if f.inputs else "",
                input_name=key + suite.gold_suffix,
                output_name=f"{key}.json",
                rename_header=ds.is_sealed,
            )
        )
    return RunPlan(
        submission_id=submission.pk,
        attempt=submission.attempts,
        kind=submission.kind,
        challenge=challenge.slug,
        phase=phase.slug,
        portion=phase.portion,
        upload_path=submission.file.path if submission.file else "",
        image_digest=submission.image_digest,
        base_image=system.base_image,
        runtime=system.runtime,
        limits=system.limits,
        datasets=datasets,
    )


def submissions_of_team(*, team: Team) -> QuerySet[Submission]:
    return Submission.objects.filter(team=team).select_related("phase", "submitted_by")


@dataclass(frozen=True)
class VisibleScore:
    dataset: str  # the label the viewer may see ("Overall" for aggregates)
    metric: str
    value: float | None
    sealed: bool


def submission_visible_scores(*, submission: Submission, is_organizer: bool) -> list[VisibleScore]:
    """A submission's scores as its team (or an organizer) may see them.

    Per-dataset scores of a sealed Split III dataset are withheld from the team
    until the reveal; the aggregates that include them are shown, except a split's
    average over that one sealed dataset, which is its score under another name.
    """
    scores = list(submission.scores.select_related("dataset").order_by("dataset__order", "metric"))
    datasets = {score.dataset for score in scores if score.dataset is not None}
    out = []
    for score in scores:
        ds = score.dataset
        if ds is None:
            hidden = not is_organizer and aggregate_is_one_sealed_dataset(score.metric, datasets)
            out.append(VisibleScore("Overall", score.metric, None if hidden else score.value, hidden))
            continue
        sealed = ds.is_sealed and not is_organizer
        label = dataset_label(ds, reveal_sealed=is_organizer)
        out.append(VisibleScore(label, score.metric, None if sealed else score.value, sealed))
    return out
