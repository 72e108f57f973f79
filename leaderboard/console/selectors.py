"""Reads for the organizer console and for what the console's actions show teams and the public.

The console's callers have checked the role (``challenge_get_organized``): what ``console_*``,
``queue_report`` and ``dataset_reveal_preview`` return is for the challenge's organizers, hidden
data included.  ``team_notices`` is what a team reads of its standing: words the organizers wrote
for it, nothing else (the announcements the public reads are ``challenges.selectors``').
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import (
    SYSTEM_KINDS,
    Announcement,
    AuditEntry,
    Challenge,
    Dataset,
    Phase,
    Split,
    SubmissionKind,
    TeamPhaseOverride,
)
from leaderboard.challenges.selectors import challenge_run_queue, phase_has_dataset
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.rankings.selectors import PUBLIC, Board, board_build
from leaderboard.submissions.campaigns import CampaignPlan, campaign_plan, campaign_runs_of
from leaderboard.submissions.models import (
    CampaignRun,
    FailureCause,
    RunAttempt,
    Score,
    Status,
    Submission,
    WorkerToken,
)
from leaderboard.submissions.selectors import (
    phase_reads_sealed_data,
    reveal_closure,
    run_attempts_ended,
    run_queue_order,
)

SUBMISSIONS_PER_PAGE = 50
AUDIT_PER_PAGE = 50
# One answer for "no such id" and "another challenge's", as everywhere in the console.
NO_SUCH_THING = "No such page, or not one you may see."

# --------------------------------------------------------------------------- one object of the challenge


def console_submission_get(*, challenge: Challenge, pk: int | str) -> Submission:
    submission = (Submission.objects.select_related("phase__challenge", "team", "verdict_dataset")
                  .filter(pk=_int(pk), phase__challenge=challenge).first())
    if submission is None:
        raise NotFound(NO_SUCH_THING)
    return submission


def console_team_get(*, challenge: Challenge, pk: int | str) -> Team:
    team = Team.objects.filter(pk=_int(pk), challenge=challenge).first()
    if team is None:
        raise NotFound(NO_SUCH_THING)
    return team


def console_phase_get(*, challenge: Challenge, slug: str) -> Phase:
    phase = Phase.objects.select_related("challenge").filter(challenge=challenge, slug=slug).first()
    if phase is None:
        raise NotFound(NO_SUCH_THING)
    return phase


@dataclass(frozen=True)
class CampaignSystem:
    """One archived system of a campaign's source phase, as an action's target ("<campaign>.<submission id>")."""

    phase: Phase
    source: Submission


def console_campaign_system_get(*, challenge: Challenge, key: str) -> CampaignSystem:
    slug, _, pk = key.rpartition(".")
    phase = console_phase_get(challenge=challenge, slug=slug)
    source = Submission.objects.select_related("team", "phase").filter(
        pk=_int(pk), phase__challenge=challenge, phase__slug=phase.campaign.get("of", "")).first()
    if not phase.is_campaign or source is None:
        raise NotFound(NO_SUCH_THING)
    return CampaignSystem(phase, source)


def console_campaigns(*, challenge: Challenge) -> list[tuple[CampaignPlan, list[CampaignRun]]]:
    """Each evaluation campaign of the challenge: what starting it would do, and what it asked so far."""
    phases = [p for p in challenge.phases.select_related("challenge").order_by("order", "opens_at") if p.is_campaign]
    return [(campaign_plan(phase=p), campaign_runs_of(phase=p)) for p in phases]


def console_dataset_get(*, challenge: Challenge, slug: str) -> Dataset:
    dataset = Dataset.objects.select_related("challenge").filter(challenge=challenge, slug=slug).first()
    if dataset is None:
        raise NotFound(NO_SUCH_THING)
    return dataset


def console_announcement_get(*, challenge: Challenge, pk: int | str) -> Announcement:
    announcement = Announcement.objects.filter(pk=_int(pk), challenge=challenge).first()
    if announcement is None:
        raise NotFound(NO_SUCH_THING)
    return announcement


def _int(value: int | str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NotFound(NO_SUCH_THING) from None


# --------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class SubmissionFilters:
    phase: Phase | None = None
    team: Team | None = None
    status: str = ""
    kind: str = ""
    # Among failures, whose fault: "participant" (the submission's) or "platform".
    cause: str = ""

    def as_params(self) -> dict[str, str]:
        """The filters as query parameters (pagination links keep them)."""
        params = {"phase": self.phase.slug if self.phase else "", "team": str(self.team.pk) if self.team else "",
                  "status": self.status, "kind": self.kind, "cause": self.cause}
        return {k: v for k, v in params.items() if v}


def submission_filters_parse(*, challenge: Challenge, params: Mapping[str, str]) -> SubmissionFilters:
    """``phase`` (slug), ``team`` (id), ``status``, ``kind`` and ``cause`` from a query string; an unknown value
    is refused with the field named, not ignored (a script must not read everything for "finshed")."""
    phase = team = None
    if params.get("phase"):
        phase = challenge.phases.filter(slug=params["phase"]).first()
        if phase is None:
            raise ServiceError(f"no phase {params['phase']!r} in this challenge", field="phase")
    if params.get("team"):
        team = Team.objects.filter(challenge=challenge, pk=params["team"]).first() if params["team"].isdigit() else None
        if team is None:
            raise ServiceError(f"no team {params['team']!r} in this challenge (give its id)", field="team")
    status, kind = params.get("status", ""), params.get("kind", "")
    if status and status not in Status.values:
        raise ServiceError(f"status must be one of {', '.join(Status.values)}", field="status")
    if kind and kind not in SubmissionKind.values:
        raise ServiceError(f"kind must be one of {', '.join(SubmissionKind.values)}", field="kind")
    cause = params.get("cause", "")
    causes = [c for c in FailureCause.values if c]
    if cause and cause not in causes:
        raise ServiceError(f"cause must be one of {', '.join(causes)}", field="cause")
    return SubmissionFilters(phase=phase, team=team, status=status, kind=kind, cause=cause)


def console_submissions(*, challenge: Challenge, filters: SubmissionFilters) -> QuerySet[Submission]:
    """Every team's submissions of the challenge, newest first."""
    submissions = Submission.objects.filter(phase__challenge=challenge)
    if filters.phase is not None:
        submissions = submissions.filter(phase=filters.phase)
    if filters.team is not None:
        submissions = submissions.filter(team=filters.team)
    if filters.status:
        submissions = submissions.filter(status=filters.status)
    if filters.kind:
        submissions = submissions.filter(kind=filters.kind)
    if filters.cause == FailureCause.PLATFORM:
        submissions = submissions.filter(failure_cause=FailureCause.PLATFORM)
    elif filters.cause:
        # The overview's "failed (the submission's fault)" counts every failure but the platform's.
        submissions = submissions.exclude(failure_cause=FailureCause.PLATFORM)
    return submissions.select_related("phase", "team", "submitted_by", "verdict_dataset").order_by("-created_at", "-id")


@dataclass(frozen=True)
class StatusCount:
    """One count of the console's overview: a status, or a cause of failure within ``failed``."""

    key: str  # the CSS class and the filter's value
    words: str  # what the overview reads: "failed (the submission's fault)"
    n: int
    query: str  # the submissions list's filter for these


def submission_counts(*, challenge: Challenge) -> list[StatusCount]:
    """How many of the challenge's submissions are in each status, in the lifecycle's order, with
    ``failed`` told apart by cause: a failure the platform caused is not the team's (not counted
    against its quota, retried), so the overview must not read "failed 8" when the platform failed all 8."""
    rows = (Submission.objects.filter(phase__challenge=challenge).order_by().values("status", "failure_cause")
            .annotate(n=Count("id")).values_list("status", "failure_cause", "n"))
    by_status: dict[str, int] = {}
    platform = 0
    for status, cause, n in rows:
        by_status[status] = by_status.get(status, 0) + n
        if status == Status.FAILED and cause == FailureCause.PLATFORM:
            platform += n
    counts = []
    for status in Status.values:
        n = by_status.get(status, 0)
        if status == Status.FAILED:
            counts.append(StatusCount("failed", "failed (the submission's fault)", n - platform,
                                      f"status={status}&cause={FailureCause.PARTICIPANT}"))
            counts.append(StatusCount("platform", "platform errors (not the teams' fault, not counted)", platform,
                                      f"status={status}&cause={FailureCause.PLATFORM}"))
        else:
            counts.append(StatusCount(status, status, n, f"status={status}"))
    return counts


# --------------------------------------------------------------------------- queue and workers

QUEUE_NAMES = {"systems": "Systems", "files": "Prediction files"}


def _queue_of(kind: str) -> str:
    # Systems and prediction files wait in separate queues (submission_queue_position).
    return "systems" if kind in SYSTEM_KINDS else "files"


@dataclass(frozen=True)
class Waiting:
    position: int  # in its queue, counting other challenges' submissions too
    submission: Submission
    # A run the platform failed waits for its back-off before a worker takes it again.
    due_at: dt.datetime | None = None
    # Its team is at its running limit: it starts when one of the team's runs ends.
    held_back: bool = False
    # Waits for an organizer's look (too many platform failures of its team today): released here.
    held_for_review: bool = False
    # How its earlier attempts ended (a run queued again after a lost worker or a platform fault).
    earlier: tuple[RunAttempt, ...] = ()


@dataclass(frozen=True)
class QueueView:
    key: str
    name: str
    waiting: list[Waiting]
    # Everyone's waiting submissions in this queue (other challenges' are counted, never shown).
    total: int


@dataclass(frozen=True)
class Running:
    # None: another challenge's (its worker is shown busy, nothing of it named).
    submission: Submission | None
    status: str
    started_at: dt.datetime | None
    attempts: int
    last_heartbeat: dt.datetime | None
    lease_expires_at: dt.datetime | None
    earlier: tuple[RunAttempt, ...] = ()

    @property
    def lease_age_s(self) -> float | None:
        """Seconds since the lease was last renewed."""
        return None if self.last_heartbeat is None else (timezone.now() - self.last_heartbeat).total_seconds()

    @property
    def lease_left_s(self) -> float | None:
        """Seconds until the lease expires (negative: expired, the reaper will queue the run again)."""
        return None if self.lease_expires_at is None else (self.lease_expires_at - timezone.now()).total_seconds()


@dataclass(frozen=True)
class WorkerView:
    name: str
    running: list[Running] = field(default_factory=list)
    # A compute worker's last call to the internal API (claim, heartbeat, files), idle or not.
    seen_at: dt.datetime | None = None

    @property
    def last_heartbeat(self) -> dt.datetime | None:
        beats = [r.last_heartbeat for r in self.running if r.last_heartbeat is not None]
        if self.seen_at is not None:
            beats.append(self.seen_at)
        return max(beats, default=None)

    @property
    def heartbeat_age_s(self) -> float | None:
        beat = self.last_heartbeat
        return None if beat is None else (timezone.now() - beat).total_seconds()


@dataclass(frozen=True)
class QueueReport:
    queues: list[QueueView]
    workers: list[WorkerView]
    now: dt.datetime


def _last_heartbeat(status: str, kind: str, lease_expires_at: dt.datetime | None) -> dt.datetime | None:
    """When the worker last renewed its lease: a lease is set to last RUN_LEASE_S from each heartbeat
    (while scoring, SCORING_LEASE_S for a prediction file and RESULT_SCORING_LEASE_S for the result a
    compute worker handed back), so the renewal was that long before it expires."""
    if lease_expires_at is None:
        return None
    lease_s = (settings.RUN_LEASE_S if status == Status.RUNNING else
               settings.RESULT_SCORING_LEASE_S if kind in SYSTEM_KINDS else settings.SCORING_LEASE_S)
    return lease_expires_at - dt.timedelta(seconds=lease_s)


def queue_report(*, challenge: Challenge) -> QueueReport:
    """What waits, in order, per queue; what runs where, since when; each worker's last heartbeat.

    Queues and workers are shared by every challenge on the platform, so positions and totals count
    the others' submissions, and a worker busy with another challenge shows as busy, unnamed.
    Workers are known from what they run: an idle worker leaves no trace in the database.
    """
    now = timezone.now()
    # Prediction files are scored first come, first served.
    files = sorted(
        Submission.objects.filter(status__in=(Status.SUBMITTED, Status.QUEUED)).exclude(kind__in=SYSTEM_KINDS)
        .values_list("pk", "queued_at", "created_at", "phase__challenge_id"),
        key=lambda r: (r[1] or r[2], r[0]),
    )
    positions = {pk: n for n, (pk, _q, _c, challenge_id) in enumerate(files, 1) if challenge_id == challenge.pk}
    totals = {"files": len(files)}
    # Runs start in the order the claims take them (fair between teams, team limits), on the run
    # queue this challenge uses, which other challenges may share: the claim's own order.
    runs = run_queue_order(queue=challenge_run_queue(challenge), now=now)
    totals["systems"] = len(runs)
    held = {run.submission_id for run in runs if run.held_back}
    review = {run.submission_id for run in runs if run.held_for_review}
    positions.update({run.submission_id: n for n, run in enumerate(runs, 1) if run.challenge_id == challenge.pk})
    ours = {s.pk: s for s in Submission.objects.filter(pk__in=positions).select_related("team", "phase")}
    busy = list(Submission.objects.filter(status__in=(Status.RUNNING, Status.SCORING)).select_related("team", "phase")
                .order_by("started_at", "pk"))
    earlier = run_attempts_ended(submission_ids=[*ours, *(s.pk for s in busy if s.phase.challenge_id == challenge.pk)])
    queues = []
    for key, name in QUEUE_NAMES.items():
        waiting = [
            Waiting(positions[pk], ours[pk], ours[pk].dispatched_at if (ours[pk].dispatched_at or now) > now else None,
                    held_back=pk in held, held_for_review=pk in review, earlier=earlier.get(pk, ()))
            for pk in sorted(positions, key=positions.__getitem__) if pk in ours and _queue_of(ours[pk].kind) == key
        ]
        if key == "systems":  # the broker queue the challenge's runs go to, which compute workers consume
            name = f"{name} (queue {challenge_run_queue(challenge)}, in the order workers start them)"
        queues.append(QueueView(key, name, waiting, totals[key]))

    workers: dict[str, WorkerView] = {}
    for submission in busy:
        mine = submission.phase.challenge_id == challenge.pk
        name = submission.worker or "a scoring worker (not named)"
        workers.setdefault(name, WorkerView(name)).running.append(Running(
            submission if mine else None, submission.status, submission.started_at, submission.attempts,
            _last_heartbeat(submission.status, submission.kind, submission.lease_expires_at), submission.lease_expires_at,
            earlier=earlier.get(submission.pk, ()) if mine else (),
        ))
    # Compute workers by their tokens: an idle one shows too, with when it last called the platform.
    for token in WorkerToken.objects.filter(revoked_at__isnull=True, last_seen_at__isnull=False):
        instances = [w for w in workers if w.startswith(f"{token.name}/")]
        for name in instances:
            workers[name] = dataclasses.replace(workers[name], seen_at=token.last_seen_at)
        if not instances:
            workers[token.name] = WorkerView(f"{token.name} (idle)", seen_at=token.last_seen_at)
    return QueueReport(queues, sorted(workers.values(), key=lambda w: w.name), now)


# --------------------------------------------------------------------------- teams, audit, announcements


@dataclass(frozen=True)
class TeamRow:
    team: Team
    members: int
    submissions: int
    overrides: list[TeamPhaseOverride]
    hidden_reason: str


def console_teams(*, challenge: Challenge) -> list[TeamRow]:
    teams = (Team.objects.filter(challenge=challenge)
             .annotate(n_members=Count("memberships", distinct=True), n_submissions=Count("submissions", distinct=True))
             .order_by("name"))
    overrides: dict[int, list[TeamPhaseOverride]] = {}
    for override in TeamPhaseOverride.objects.filter(team__challenge=challenge).select_related("phase"):
        overrides.setdefault(override.team_id, []).append(override)
    hidden = _hidden_reasons(challenge=challenge)
    return [
        TeamRow(t, t.n_members, t.n_submissions, overrides.get(t.pk, []),
                hidden.get(t.pk, "") if t.hidden else "")
        for t in teams
    ]


def _hidden_reasons(*, challenge: Challenge, team: Team | None = None) -> dict[int, str]:
    """Each hidden team's reason: the latest "team.hide" entry (``Team.hidden`` is a flag only)."""
    entries = AuditEntry.objects.filter(challenge=challenge, action="team.hide")
    if team is not None:
        entries = entries.filter(details__team_id=team.pk)
    reasons: dict[int, str] = {}
    for team_id, reason in entries.order_by("created_at", "id").values_list("details__team_id", "reason"):
        if isinstance(team_id, int):
            reasons[team_id] = reason
    return reasons


def audit_entries(*, challenge: Challenge) -> QuerySet[AuditEntry]:
    """Newest first."""
    return AuditEntry.objects.filter(challenge=challenge).select_related("actor")


def team_notices(*, team: Team) -> list[str]:
    """What the organizers told this team about its standing, for its own pages (its words only)."""
    notices = []
    if team.disqualified_reason:
        notices.append(f"The organizers disqualified your team: {team.disqualified_reason}. "
                       "Its rows stay on the boards, unranked, with this reason.")
    if team.hidden:
        reason = _hidden_reasons(challenge=team.challenge, team=team).get(team.pk, "")
        notices.append("The organizers hid your team from the public boards" + (f": {reason}." if reason else "."))
    return notices


# --------------------------------------------------------------------------- what a reveal makes public


@dataclass(frozen=True)
class RevealedRow:
    team: str  # as the public board names it ("Anonymous" for an anonymous team)
    rank_before: int | None
    rank_after: int | None
    # (column, value) that the public does not see now and will see after the reveal.
    newly_shown: list[tuple[str, float | None]]


@dataclass(frozen=True)
class RevealedBoard:
    phase: Phase
    board_public: bool
    ranked_by_before: str
    ranked_by_after: str
    rows: list[RevealedRow]


@dataclass(frozen=True)
class RevealPreview:
    dataset: Dataset
    alias: str
    boards: list[RevealedBoard]
    # Submissions with scores on the dataset: their teams see those scores on their own pages.
    submissions_scored: int
    # Other Split III datasets that stay sealed: a partial reveal can give away a value (docs/organizers/boards.md).
    still_sealed: list[str]
    # Systems running now: their runs read the dataset under the seal (see dataset_seal_change_check).
    runs_in_progress: int
    # Sealed datasets revealed with it: their scores would follow from averages published before.
    together: list[str] = field(default_factory=list)


def _public_boards(phases: list[Phase]) -> dict[int, Board]:
    """Each phase's board as the public sees it, whether or not it is public yet (a board that is
    not public shows its teams their own rows' numbers on their pages under the same rule)."""
    boards = {}
    for phase in phases:
        shown = copy.copy(phase)
        shown.board_public = True
        boards[phase.pk] = board_build(phase=shown, viewer=AnonymousUser(), view=PUBLIC)
    return boards


def _cells(board: Board) -> dict[int, dict[str, float | None]]:
    """Per team, the cells the public sees (label -> value)."""
    out: dict[int, dict[str, float | None]] = {}
    for row in board.rows:
        seen = out.setdefault(row.team_id, {})
        for column in board.columns:
            if not column.sealed and column.key not in row.sealed_keys:
                label = column.label if column.group == "Overall" else f"{column.group} {column.label}"
                seen[label] = row.values.get(column.key)
    return out


def dataset_reveal_preview(*, dataset: Dataset) -> RevealPreview:
    """What becomes public if ``dataset`` is revealed now: its real name, its per-dataset scores and the
    aggregates the boards then publish, row by row, and whether the public ranking changes.

    Computed by the boards' own rules rather than by a second copy of them: the public boards are
    built, the reveal is made inside a transaction, the boards are built again, and the transaction
    is rolled back.  Nothing is written.
    """
    if dataset.split != Split.III:
        raise ServiceError(f"{dataset.name} is a Split {dataset.split} dataset: it was never sealed")
    challenge = dataset.challenge
    together = reveal_closure(dataset=dataset)
    phases = [p for p in challenge.phases.select_related("challenge")
              if any(phase_has_dataset(p, ds) for ds in together)]
    before = _public_boards(phases)
    with transaction.atomic():
        Dataset.objects.filter(pk__in=[ds.pk for ds in together]).update(revealed_at=timezone.now())
        after = _public_boards(phases)
        transaction.set_rollback(True)
    boards = []
    for phase in phases:
        old, new = before[phase.pk], after[phase.pk]
        old_cells, old_rank = _cells(old), {r.team_id: r.rank for r in old.rows}
        rows = []
        for row in new.rows:
            shown_now = old_cells.get(row.team_id, {})
            newly = [(label, value) for label, value in _cells(new)[row.team_id].items() if label not in shown_now]
            rows.append(RevealedRow(row.team_name, old_rank.get(row.team_id), row.rank, newly))
        boards.append(RevealedBoard(phase, phase.board_public, old.ranked_by, new.ranked_by, rows))
    still_sealed = [d.sealed_alias or d.name for d in challenge.datasets.filter(split=Split.III, revealed_at=None)
                    .exclude(pk__in=[ds.pk for ds in together])]
    return RevealPreview(
        dataset=dataset,
        alias=dataset.sealed_alias or "Hidden",
        boards=boards,
        submissions_scored=Score.objects.filter(dataset=dataset).values("submission_id").distinct().count(),
        still_sealed=still_sealed,
        runs_in_progress=runs_in_progress(challenge=challenge),
        together=[f"{ds.name} ({ds.sealed_alias or 'Hidden'})" for ds in together[1:]],
    )


def runs_in_progress(*, challenge: Challenge) -> int:
    """Systems of the challenge that a worker is running now."""
    return Submission.objects.filter(Q(status=Status.RUNNING), phase__challenge=challenge,
                                     kind__in=SYSTEM_KINDS).count()


# --------------------------------------------------------------------------- releasing a hidden run's log

LOG_PREVIEW_LINES = 10


def submission_read_sealed_data(*, submission: Submission) -> bool:
    """Whether the run read a dataset that is sealed now (the rule hidden runs are decided by)."""
    return phase_reads_sealed_data(phase=submission.phase)


def submission_log_release_preview(submission: Submission) -> list[str]:
    """What releasing the log discloses, for the confirmation: its size and first lines, and a warning
    when the run read sealed data (whatever the system printed of it, the team then reads)."""
    log = submission.log or ""
    lines = log.splitlines()
    out = [f"The team will read the whole log: {len(log):,} characters in {len(lines):,} lines, as the "
           "submission's page shows it to you."]
    if submission_read_sealed_data(submission=submission):
        out.append("Warning: this run read sealed data. Whatever the system printed of it (questions, "
                   "contexts, ids) reaches the team, and what it reads may be copied; withdrawing the release "
                   "later stops showing it, nothing more.")
    head = lines[:LOG_PREVIEW_LINES]
    out.append(f"Its first {len(head)} line(s): " + (" | ".join(line[:200] for line in head) if head else "(empty)"))
    return out
