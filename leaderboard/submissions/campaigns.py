"""Evaluation campaigns: archived systems run again on new data, after (or during) a task.

MRQA 2019 asked how systems generalize to distributions nobody had seen; once its deadline passed
they could never be run again.  Readerboard keeps every system it ran (the image archive or the code
bundle, by digest), so an organizer can add datasets to a campaign phase (spec ``phases[].campaign``
and ``datasets[].phase``) and run chosen systems of the source phase on them.

A campaign's run is a submission of the campaign's phase, of the source's team, pinned to the
source's stored upload (the same file, sha256 and image id): the whole run, scoring and sealing path
of any submission serves it, and nothing of the source phase is written, so its boards stay as they
were.  What could not run again (a prediction file, an archive removed by retention, a team that
opted out) is recorded with the reason (``CampaignRun.problem``), never silently left out.  Starting
is safe to repeat: a source already asked in the campaign is not asked again
(``campaignrun_unique``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.accounts.selectors import team_in_campaigns
from leaderboard.challenges.audit import audit_record
from leaderboard.challenges.models import SYSTEM_KINDS, Dataset, Phase, SubmissionKind
from leaderboard.challenges.selectors import (
    phase_dataset_files,
    phase_datasets,
    phase_system_settings,
    user_is_organizer,
)
from leaderboard.challenges.versions import board_changed
from leaderboard.core.errors import NotFound, PermissionDenied, ServiceError
from leaderboard.sandbox.contract import SystemSettings
from leaderboard.submissions.intake import submission_task_enqueue
from leaderboard.submissions.models import BoardEntry, CampaignRun, Status, Submission
from leaderboard.submissions.rerun import submission_rerun_problem

SYSTEMS_FINAL = "final"
SYSTEMS_ALL = "all"
PREDICTIONS_PROBLEM = "a prediction file answers the questions it was made for: it cannot answer new ones"


@dataclass(frozen=True)
class CampaignCandidate:
    """A system of the source phase, as the campaign would take it now."""

    source: Submission
    problem: str  # why it cannot run in the campaign ("" when it can)
    run: CampaignRun | None  # its record in the campaign, once asked


@dataclass
class CampaignPlan:
    """What starting the campaign would do: every candidate with its problem, the datasets its runs
    read, and the limits that differ from the challenge's."""

    phase: Phase
    source_phase: Phase
    datasets: list[Dataset]
    candidates: list[CampaignCandidate] = field(default_factory=list)
    # {limit: [the challenge's, the campaign's]}: the organizer's changes, recorded with each run.
    limits_changed: dict[str, list[Any]] = field(default_factory=dict)
    problem: str = ""  # why nothing can start ("" when the campaign can)

    @property
    def to_start(self) -> list[CampaignCandidate]:
        return [c for c in self.candidates if c.run is None and not c.problem]


def campaign_source_phase(*, phase: Phase) -> Phase:
    """The phase whose systems the campaign runs again (the load checked that it exists)."""
    if not phase.is_campaign:
        raise NotFound(f"{phase.name} is not an evaluation campaign")
    source = Phase.objects.select_related("challenge").filter(
        challenge_id=phase.challenge_id, slug=phase.campaign["of"]).first()
    if source is None:
        raise NotFound(f"the phase {phase.campaign['of']!r} that {phase.name} runs again is gone")
    return source


def _consent_problem(source: Submission) -> str:
    if team_in_campaigns(source.team):
        return ""
    if source.team.campaign_choice == "out":
        return "its team opted out of evaluation campaigns"
    return "its team has not opted in (this challenge's terms run only the systems of teams that opt in)"


def _limits_changed(phase: Phase) -> dict[str, list[Any]]:
    """The limits (and the runtime) the campaign changed: {name: [the challenge's, the campaign's]}."""
    def settings_of(system: SystemSettings) -> dict[str, Any]:
        return {**dataclasses.asdict(system.limits), "runtime": system.runtime or "the worker's default"}

    own = settings_of(SystemSettings.from_json(phase.challenge.system_settings))
    campaign = settings_of(phase_system_settings(phase=phase))
    return {name: [own[name], value] for name, value in campaign.items() if own[name] != value}


def campaign_plan(*, phase: Phase) -> CampaignPlan:
    """The campaign's candidates: each team's board submission of the source phase (``systems:
    final``) or every system there that finished (``all``), each with why it cannot run, if so."""
    source_phase = campaign_source_phase(phase=phase)
    plan = CampaignPlan(phase=phase, source_phase=source_phase, datasets=phase_datasets(phase=phase),
                        limits_changed=_limits_changed(phase))
    sources = Submission.objects.filter(phase=source_phase).select_related("team__challenge", "phase")
    if phase.campaign.get("systems", SYSTEMS_FINAL) == SYSTEMS_ALL:
        sources = sources.filter(status=Status.FINISHED, team__hidden=False)
    else:
        sources = sources.filter(pk__in=BoardEntry.objects.filter(phase=source_phase).values("submission_id"),
                                 team__hidden=False)
    runs = {r.source_id: r for r in CampaignRun.objects.filter(phase=phase).select_related("run")}
    for source in sources.order_by("team__name", "created_at", "pk"):
        if source.kind not in SYSTEM_KINDS:
            problem = (PREDICTIONS_PROBLEM if source.kind != SubmissionKind.IMPORTED
                       else "an imported published result has no system to run")
        else:
            problem = _consent_problem(source) or submission_rerun_problem(source)
        plan.candidates.append(CampaignCandidate(source, problem, runs.get(source.pk)))
    if not phase_dataset_files(phase=phase).exists():
        plan.problem = (f"{phase.name} has no dataset with {phase.portion} gold yet: give it one in the spec "
                        "(datasets[].phase) and load it again")
    return plan


@dataclass(frozen=True)
class CampaignSummary:
    """What a campaign's board says of it, to anyone who reads the board: no team named, so an
    anonymous team's word (or its pruned archive) is not pinned on it."""

    source_phase: Phase
    opened: dt.datetime
    runs: int
    # (reason, how many systems) of those not run again.
    not_run: list[tuple[str, int]]


def campaign_summary(*, phase: Phase) -> CampaignSummary | None:
    """The campaign's line on its board, or None for a phase of uploads."""
    if not phase.is_campaign:
        return None
    records = CampaignRun.objects.filter(phase=phase)
    reasons = Counter(records.exclude(problem="").values_list("problem", flat=True))
    return CampaignSummary(source_phase=campaign_source_phase(phase=phase), opened=phase.opens_at,
                           runs=records.filter(run__isnull=False).count(), not_run=sorted(reasons.items()))


def campaign_runs_of(*, phase: Phase) -> list[CampaignRun]:
    """The campaign's records, the runs and the systems that could not run, in the order asked."""
    return list(CampaignRun.objects.filter(phase=phase).select_related("source__team", "source__phase", "run"))


def campaign_start(*, phase: Phase, by: AbstractBaseUser, source_ids: Collection[int] | None = None,
                   reason: str = "") -> list[CampaignRun]:
    """Ask every candidate of the plan (or those of ``source_ids``) that was not asked yet: a run for
    each that can run, a record of the reason for each that cannot.  Returns the new records.

    Safe to call twice, and concurrently: a source has one record per campaign (the unique
    constraint decides a race), so a second start asks only what the first did not."""
    if not user_is_organizer(user=by, challenge=phase.challenge):
        raise PermissionDenied("only the challenge's organizers start its campaigns")
    plan = campaign_plan(phase=phase)
    if plan.problem:
        raise ServiceError(plan.problem)
    wanted = [c for c in plan.candidates if c.run is None and (source_ids is None or c.source.pk in source_ids)]
    if source_ids is not None:
        unknown = set(source_ids) - {c.source.pk for c in plan.candidates}
        if unknown:
            raise ServiceError(f"not a system of the {plan.source_phase.name} phase this campaign takes: "
                               f"submission {', '.join(map(str, sorted(unknown)))}")
    made: list[CampaignRun] = []
    for candidate in wanted:
        try:
            with transaction.atomic():
                made.append(_ask(phase, candidate, plan, by=by, reason=reason))
                board_changed(challenge_id=phase.challenge_id)  # the campaign's board counts what it asked
        except IntegrityError:
            continue  # another start asked it meanwhile
    return made


def _ask(phase: Phase, candidate: CampaignCandidate, plan: CampaignPlan, *, by: AbstractBaseUser,
         reason: str) -> CampaignRun:
    source = candidate.source
    run = None
    if not candidate.problem:
        now = timezone.now()
        # The source's upload itself, not a copy: the campaign runs what ran, by its digest.
        run = Submission.objects.create(
            team=source.team, phase=phase, submitted_by=None, kind=source.kind, status=Status.QUEUED,
            description=f"campaign run of submission {source.pk}"[:300], file=source.file.name,
            original_name=source.original_name, sha256=source.sha256, size_bytes=source.size_bytes,
            image_digest=source.image_digest, queued_at=now, dispatched_at=now,
        )
        submission_task_enqueue(run)
    record = CampaignRun.objects.create(phase=phase, source=source, run=run, problem=candidate.problem,
                                        limits_changed=plan.limits_changed, created_by_id=by.pk)
    audit_record(
        challenge=phase.challenge, actor=by, action="campaign_run", target=f"submission {source.pk}",
        reason=candidate.problem or f"run again in the {phase.name} campaign as submission {run.pk if run else ''}",
        details={"campaign": phase.slug, "source": source.pk, "run": run.pk if run else None,
                 "image_digest": source.image_digest, "sha256": source.sha256,
                 "limits_changed": plan.limits_changed, "why": reason},
    )
    return record

