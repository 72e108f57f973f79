"""Reads for submissions: quotas, history, the run queue's order and a submission's place in it,
the run plan, what a viewer may see of a run, and which reveals would expose a sealed score."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import hmac
from collections import Counter, deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.accounts.selectors import team_of_user
from leaderboard.challenges.disclosure import Average, exposed_by_reveal
from leaderboard.challenges.models import (
    SYSTEM_KINDS,
    Challenge,
    Dataset,
    DatasetFile,
    Phase,
    PhaseKind,
    SealedAggregates,
    Split,
    TeamPhaseOverride,
)
from leaderboard.challenges.selectors import (
    aggregates_published,
    challenge_run_queue,
    dataset_label,
    dataset_positions,
    dataset_run_key,
    datasets_public_order,
    phase_dataset_files,
    phase_has_dataset,
    phase_ranking_scope,
    phase_system_settings,
    ranking_scope_get,
    user_is_organizer,
)
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.columns import (
    metric_decimals,
    metric_label,
    phase_aggregate_columns,
    phase_metric_columns,
)
from leaderboard.core.display import fixed
from leaderboard.core.errors import NotFound
from leaderboard.sandbox.contract import RunDataset, RunPlan, SystemSettings, log_clean
from leaderboard.submissions.models import (
    ACTIVE_STATUSES,
    AttemptEnd,
    BoardEntry,
    FailureCause,
    RunAttempt,
    Score,
    ScoreHistory,
    Status,
    Submission,
    Verdict,
)

QUOTA_WINDOW = dt.timedelta(hours=24)
Viewer = AbstractBaseUser | AnonymousUser


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


def submission_duplicate_of(*, team: Team, phase: Phase, sha256: str) -> Submission | None:
    """The team's latest submission to ``phase`` of the very same file (by its sha256) that counted
    against its quota, if any: the same prediction file scores the same, so uploading it again would
    only spend quota.  Cancelled ones and failures the platform caused cost nothing and gave no
    score, so sending their file again is no duplicate."""
    return (submissions_counting_against_quota(team=team, phase=phase).filter(sha256=sha256)
            .order_by("-created_at", "-pk").first())


@dataclass(frozen=True)
class QuotaUsage:
    used_today: int
    used_total: int
    active: int
    per_day: int | None
    total: int | None
    concurrent: int | None
    # The team's own deadline when an organizer extended it (TeamPhaseOverride); None: the phase's.
    closes_at: dt.datetime | None = None

    @property
    def left_today(self) -> int | None:
        """Submissions the team may still make in the last 24 hours' window; None: no daily limit."""
        return None if self.per_day is None else max(0, self.per_day - self.used_today)

    @property
    def left_total(self) -> int | None:
        """Submissions the team may still make in the phase; None: no total limit."""
        return None if self.total is None else max(0, self.total - self.used_total)

    def refusal(self) -> str | None:
        if self.per_day is not None and self.used_today >= self.per_day:
            return f"daily quota reached: {self.used_today} of {self.per_day} submissions in the last 24 hours"
        if self.total is not None and self.used_total >= self.total:
            return f"total quota reached: {self.used_total} of {self.total} submissions in this phase"
        if self.concurrent is not None and self.active >= self.concurrent:
            return f"{self.active} submission(s) still being evaluated; at most {self.concurrent} at once"
        return None


def team_phase_override_get(*, team: Team, phase: Phase) -> TeamPhaseOverride | None:
    """An organizer's extension of the phase for this team (a later deadline, larger quotas), if any."""
    return TeamPhaseOverride.objects.filter(team=team, phase=phase).first()


def quota_usage(*, team: Team, phase: Phase, now: dt.datetime | None = None) -> QuotaUsage:
    now = now or timezone.now()
    counted = submissions_counting_against_quota(team=team, phase=phase)
    extended = team_phase_override_get(team=team, phase=phase)
    return QuotaUsage(
        used_today=counted.filter(created_at__gt=now - QUOTA_WINDOW).count(),
        used_total=counted.count(),
        active=counted.filter(status__in=ACTIVE_STATUSES).count(),
        per_day=extended.quota_per_day if extended and extended.quota_per_day is not None else phase.quota_per_day,
        total=extended.quota_total if extended and extended.quota_total is not None else phase.quota_total,
        concurrent=phase.quota_concurrent,
        closes_at=extended.closes_at if extended else None,
    )



def _challenges_of_queue(queue: str) -> dict[int, SystemSettings]:
    found = {}
    for challenge in Challenge.objects.only("pk", "system_settings"):
        try:
            system = SystemSettings.from_json(challenge.system_settings)
        except ValueError:
            system = SystemSettings()
        if system.queue == queue:
            found[challenge.pk] = system
    return found


@dataclass(frozen=True)
class QueuedRun:
    """A queued run of a run queue, in the order workers will start it (``run_queue_order``)."""

    submission_id: int
    team_id: int
    challenge_id: int
    attempts: int
    # Its team is at its challenge's max_running_per_team now (or will be, by the runs before it):
    # it starts when one of the team's runs ends, after the runs listed before it.
    held_back: bool = False
    # Backing off after a platform fault: no worker takes it before then.
    due_at: dt.datetime | None = None
    # Waits for an organizer's look (``selectors.submissions_held_for_review``): no worker takes it
    # until one releases it.
    held_for_review: bool = False


def run_queue_order(*, queue: str, now: dt.datetime | None = None) -> list[QueuedRun]:
    """The queued runs of ``queue`` in the order workers will start them, if none ends meanwhile.

    The order ``submission_run_claim_next`` takes them in, claim after claim: a team at its
    ``max_running_per_team`` waits; among the others the team with the fewest runs running goes
    first, then the team whose last run started longest ago (never run: first), then the oldest
    submission.  Each pick counts as one more run of its team, started now; the runs still held back
    by their team's limit follow, then those backing off, by when they are due, and last those held
    for an organizer's look (a team whose hidden-data runs the platform failed too often).  The console's
    queue and a team's queue position read this, so what they say is what the workers do.
    """
    now = now or timezone.now()
    challenges = _challenges_of_queue(queue)
    if not challenges:
        return []
    systems = Submission.objects.filter(kind__in=SYSTEM_KINDS, phase__challenge__in=list(challenges))
    queued = list(
        systems.filter(status=Status.QUEUED)
        .order_by("queued_at", "created_at", "pk")
        .values_list("pk", "team_id", "phase__challenge_id", "attempts", "dispatched_at")
    )
    if not queued:
        return []
    review = submissions_held_for_review(submission_ids=[row[0] for row in queued], now=now)
    held_for_review = [row for row in queued if row[0] in review]
    queued = [row for row in queued if row[0] not in review]
    teams = {team for _, team, _, _, _ in queued}
    running = Counter(systems.filter(status=Status.RUNNING, team_id__in=teams).values_list("team_id", flat=True))
    never = dt.datetime.min.replace(tzinfo=dt.UTC)
    last_start: dict[int, dt.datetime] = dict(
        systems.filter(team_id__in=teams, started_at__isnull=False).values("team_id")
        .annotate(last=Max("started_at")).values_list("team_id", "last")
    )
    # Each team's due runs in queue order: a team's next run is always its oldest, so each step
    # compares one candidate per team (not every queued run).
    by_team: dict[int, deque[tuple[int, Any]]] = {}
    for position, row in enumerate(queued):
        if row[4] is None or row[4] <= now:
            by_team.setdefault(row[1], deque()).append((position, row))
    later = sorted((row for row in queued if row[4] is not None and row[4] > now), key=lambda r: (r[4], r[0]))
    order: list[QueuedRun] = []
    tick = 0
    while by_team:
        eligible = [(running[team], last_start.get(team) or never, runs[0][0], team) for team, runs in by_team.items()
                    if running[team] < challenges[runs[0][1][2]].max_running_per_team]
        if not eligible:
            break
        team = min(eligible)[3]
        _, row = by_team[team].popleft()
        if not by_team[team]:
            del by_team[team]
        order.append(QueuedRun(row[0], row[1], row[2], row[3]))
        running[team] += 1
        tick += 1
        last_start[team] = now + dt.timedelta(microseconds=tick)  # started "now", after the ones before
    held = sorted((entry for runs in by_team.values() for entry in runs), key=lambda e: e[0])
    order += [QueuedRun(row[0], row[1], row[2], row[3], held_back=True) for _, row in held]
    order += [QueuedRun(row[0], row[1], row[2], row[3], due_at=row[4]) for row in later]
    order += [QueuedRun(row[0], row[1], row[2], row[3], held_for_review=True) for row in held_for_review]
    return order


def submission_queue_position(*, submission: Submission) -> int | None:
    """1 for the next submission a worker will take; None once it has started.

    Systems and prediction files wait in separate queues (a run takes minutes,
    scoring a file seconds), so a submission counts only those of its own queue.
    """
    if submission.status not in (Status.SUBMITTED, Status.QUEUED):
        return None
    if submission.kind in SYSTEM_KINDS and submission.status == Status.QUEUED:
        # Runs start in the claims' order (fair between teams), not first come, first served.
        order = run_queue_order(queue=challenge_run_queue(submission.phase.challenge))
        found = next((n for n, run in enumerate(order, 1) if run.submission_id == submission.pk), None)
        if found is not None:
            return found
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


def dataset_id_key(dataset: Dataset) -> str:
    """The key (hex) a sealed dataset's ids are re-keyed with: per challenge secret, per dataset."""
    secret = dataset.challenge.secret.encode("ascii")
    return hmac.new(secret, b"ids:" + dataset.slug.encode("utf-8"), hashlib.sha256).hexdigest()


def phase_gold_files(*, phase: Phase) -> list[DatasetFile]:
    """The gold a run of the phase reads now: every dataset's file for the phase's portion."""
    return list(
        phase_dataset_files(phase=phase)
        .select_related("dataset__challenge")
        .order_by("dataset__order", "dataset__slug")
    )


@dataclass(frozen=True)
class RunGold:
    """The gold a run's attempt was claimed with, read back once at its finish."""

    # The phase's gold files (``phase_gold_files``): the attempt's own when ``replaced`` is empty.
    files: list[DatasetFile]
    # The datasets (public labels) whose gold an organizer replaced since the claim.
    replaced: list[str]


def submission_run_gold(*, submission: Submission) -> RunGold:
    """The attempt's gold as its claim stamped it (``Submission.run_gold``), against the gold now."""
    files = phase_gold_files(phase=submission.phase)
    if not submission.run_gold:
        return RunGold(files, [])  # claimed before runs recorded it
    now = {str(f.dataset_id): f.sha256 for f in files}
    changed = [pk for pk in set(now) | set(submission.run_gold) if now.get(pk) != submission.run_gold.get(pk)]
    if not changed:
        return RunGold(files, [])
    datasets = Dataset.objects.filter(pk__in=[int(pk) for pk in changed])
    return RunGold(files, sorted(dataset_label(ds, reveal_sealed=False) for ds in datasets))


def system_run_plan(*, submission: Submission, files: Sequence[DatasetFile] | None = None) -> RunPlan:
    """What a run of this system would read and write now: every dataset with gold for the phase's portion.

    Split III datasets are included under their sealed alias (file names too)
    until the organizers reveal them.  Built once per attempt, by its claim
    (``lifecycle.submission_run_take``, from the gold it stamps: ``files``; default, the gold now),
    and kept; every later stage reads the kept one (``submission_run_plan``).
    """
    phase = submission.phase
    challenge = phase.challenge
    suite = suite_for(challenge)
    system = phase_system_settings(phase=phase)
    if files is None:
        files = phase_gold_files(phase=phase)
    by_dataset = {f.dataset.pk: f for f in files}
    datasets = []
    # The manifest lists sealed datasets last, by alias: in the spec's order they could be matched to names.
    for ds in datasets_public_order(f.dataset for f in files):
        f = by_dataset[ds.pk]
        label = dataset_label(ds, reveal_sealed=False)
        key = dataset_run_key(ds)
        datasets.append(
            RunDataset(
                slug=ds.slug,
                label=label,
                format=_INPUT_FORMATS.get(suite.key, suite.key),
                source=f.inputs.path if f.inputs else "",
                input_name=key + suite.gold_suffix,
                output_name=f"{key}.json",
                id_key=dataset_id_key(ds) if ds.is_sealed else "",
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
        hidden_data=phase_runs_on_hidden_data(phase=phase),
    )


def submission_run_plan(*, submission: Submission) -> RunPlan:
    """The plan of the run's current attempt, as its claim built and kept it (``Submission.run_plan``):
    what the inputs, the result, the dialogs and the finish of the attempt all read, whatever was
    revealed or changed since.  A run claimed before plans were kept: the plan derived now (its gold
    is checked against the stamp at the finish all the same)."""
    if submission.run_plan:
        return RunPlan.from_json(submission.run_plan)
    return system_run_plan(submission=submission)


def submissions_of_team(*, team: Team) -> QuerySet[Submission]:
    return Submission.objects.filter(team=team).select_related("phase", "submitted_by")


def submissions_on_board(*, team: Team) -> set[int]:
    """Ids of the team's submissions that represent it on its phases' boards (one per phase),
    whichever the ranking rule picked."""
    return set(BoardEntry.objects.filter(team=team).values_list("submission_id", flat=True))


@dataclass(frozen=True)
class VisibleScore:
    dataset: str  # the label the viewer may see ("Overall" for aggregates)
    metric: str
    value: float | None
    sealed: bool
    # What the board calls the metric ("Split II F1"); ``metric`` is the key scripts use.
    label: str = ""
    # Organizers only ("" for everyone else, and for aggregates): the sha256 of the gold file the
    # value was computed against, and whether that file has been replaced since (a rescore is due).
    gold_sha256: str = ""
    gold_replaced: bool = False
    # The digits its column shows (columns.metric_decimals: 0 for counts and milliseconds).
    decimals: int = 2

    @property
    def text(self) -> str:
        """The value as the board shows it ("—" for none); a sealed one is never formatted."""
        return "—" if self.value is None else fixed(self.value, self.decimals)


def submission_visible_scores(*, submission: Submission, is_organizer: bool) -> list[VisibleScore]:
    """A submission's scores as its team (or an organizer) may see them.

    Per-dataset scores of a sealed Split III dataset are withheld from the team
    until the reveal, and so is every aggregate from which one would follow given
    the visible scores: the public board's rule (``aggregates_published``), so the
    team sees what the public sees, and no more.
    """
    challenge = submission.phase.challenge
    suite = suite_for(challenge)
    # The board's order: aggregates as its columns (others after, by label), then each dataset's.
    phase_columns = phase_metric_columns(suite, submission.phase)
    column_order: dict[str, int] = {}
    for c in (*phase_columns, *suite.dataset_columns):
        column_order.setdefault(c.metric, len(column_order))  # a metric's first place is its place

    def label_of(metric: str, *, per_dataset: bool = False) -> str:
        return metric_label(suite, metric, per_dataset=per_dataset, extra=phase_columns)

    def decimals_of(metric: str, *, per_dataset: bool = False) -> int:
        return metric_decimals(suite, metric, per_dataset=per_dataset, extra=phase_columns)

    every = list(submission.scores.select_related("dataset"))
    # The viewer's dataset order (datasets_ordered): the spec's order of sealed datasets would name them.
    position = dataset_positions({s.dataset for s in every if s.dataset is not None}, reveal_sealed=is_organizer)
    scores = sorted(
        every,
        key=lambda s: (s.dataset is not None, position.get(s.dataset_id or 0, 0),
                       column_order.get(s.metric, len(column_order)), label_of(s.metric, per_dataset=s.dataset is not None)),
    )
    datasets = {score.dataset for score in scores if score.dataset is not None}
    published: set[str] = set()
    if not is_organizer:
        present = {score.metric for score in scores if score.dataset is None}
        # The board's columns first, in its order, so both pages withhold the same ones.
        metrics = [c.metric for c in phase_columns if c.metric in present]
        metrics += sorted(present - set(metrics))
        published = aggregates_published(
            challenge=challenge, suite=suite, datasets=datasets, metrics=metrics,
            # Only a sealed dataset the submission answered has a value to protect.
            ranked=phase_ranking_scope(phase=submission.phase).datasets if any(d.is_sealed for d in datasets) else None,
        )
    current_gold = dict(DatasetFile.objects.filter(dataset__in=datasets, portion=submission.phase.portion)
                        .values_list("dataset_id", "sha256")) if is_organizer else {}
    out = []
    for score in scores:
        ds = score.dataset
        if ds is None:
            hidden = not is_organizer and score.metric not in published
            out.append(VisibleScore("Overall", score.metric, None if hidden else score.value, hidden,
                                    label_of(score.metric), decimals=decimals_of(score.metric)))
            continue
        sealed = ds.is_sealed and not is_organizer
        label = dataset_label(ds, reveal_sealed=is_organizer)
        out.append(VisibleScore(label, score.metric, None if sealed else score.value, sealed,
                                label_of(score.metric, per_dataset=True),
                                gold_sha256=score.gold_sha256 if is_organizer else "",
                                gold_replaced=is_organizer and score.gold_sha256 != current_gold.get(ds.pk, ""),
                                decimals=decimals_of(score.metric, per_dataset=True)))
    return out


def submissions_answering_all(*, submissions: QuerySet[Submission], datasets: Collection[Dataset]) -> set[int]:
    """The ids of ``submissions`` with scores on every one of ``datasets`` (a phase's ranked ones)."""
    wanted = {ds.pk for ds in datasets}
    answered: dict[int, set[int]] = {}
    rows = Score.objects.filter(submission__in=submissions, dataset_id__in=wanted).values_list(
        "submission_id", "dataset_id"
    )
    for submission_id, dataset_id in rows.distinct():
        answered.setdefault(submission_id, set()).add(dataset_id)
    return {pk for pk, covered in answered.items() if covered >= wanted}


def submission_visible_primary_score(*, submission: Submission, scores: list[VisibleScore]) -> float | None:
    """The ranking score (``Submission.primary_score``), unless ``scores`` withhold that aggregate."""
    primary = suite_for(submission.phase.challenge).primary_metric
    withheld = any(s.sealed for s in scores if s.dataset == "Overall" and s.metric == primary)
    return None if withheld else submission.primary_score


# --------------------------------------------------------------------------- what a team sees of a run

# One answer for "no such id", "another team's" and "another challenge's": a 404 tells nothing.
NO_SUCH_SUBMISSION = "No such submission, or not one you may see."


def submission_get_visible(*, user: Viewer, pk: int, challenge_slug: str | None = None) -> tuple[Submission, bool]:
    """The submission if the viewer's team owns it or the viewer organizes its challenge.

    Raises NotFound with one message whether the id does not exist, belongs to another
    team, or (with ``challenge_slug``) to another challenge.  Returns it with whether the
    viewer organizes the challenge.
    """
    submission = (
        Submission.objects.select_related("phase__challenge", "team", "verdict_dataset", "log_released_by")
        .filter(pk=pk)
        .first()
    )
    if submission is None or (challenge_slug is not None and submission.phase.challenge.slug != challenge_slug):
        raise NotFound(NO_SUCH_SUBMISSION)
    challenge = submission.phase.challenge
    if user_is_organizer(user=user, challenge=challenge):
        return submission, True  # a challenge not public yet is its organizers' to run (the console links here)
    if not challenge.is_public:
        raise NotFound(NO_SUCH_SUBMISSION)
    team = team_of_user(user=user, challenge=challenge)
    if team is None or team.pk != submission.team_id:
        raise NotFound(NO_SUCH_SUBMISSION)
    return submission, False


def phase_runs_on_hidden_data(*, phase: Phase) -> bool:
    """A phase whose submissions are scored on data its teams never see: a test portion,
    or (were an organizer to give one a dev portion) a sealed dataset."""
    return phase.portion == PhaseKind.TEST or phase_reads_sealed_data(phase=phase)


def phase_reads_sealed_data(*, phase: Phase) -> bool:
    """Whether a run of the phase reads a dataset sealed now: its portion of a Split III dataset not
    revealed (a system run reads every dataset of its portion)."""
    return phase_dataset_files(phase=phase).filter(dataset__split=Split.III, dataset__revealed_at__isnull=True).exists()


@dataclass(frozen=True)
class RunReport:
    """A submission's outcome as one viewer may see it (page, API, list)."""

    on_hidden_data: bool
    # Whether this viewer gets the organizers' view: full reason, exact figures, the log.
    full: bool
    reason: str
    exit: str
    run_time: str
    peak_memory: str
    log: str | None
    log_note: str
    # The platform's own messages about the run (a cut in the log, a container that could not
    # start), shown apart from the log and only where the log is: their figures (bytes cut)
    # are the system's doing, so on hidden data they are a channel like the log itself.
    log_notes: tuple[str, ...] = ()
    # Where in ``log`` the platform cut bytes out (the page marks the place), if it did.
    log_cut: int | None = None
    # The figures as numbers, for the API: the same visibility as the texts above (None: not shown).
    run_seconds: float | None = None
    peak_memory_mb: int | None = None
    # A run on hidden data the platform failed: its team sees none of its figures (run time,
    # memory, exit status, start and end), only that the platform failed it.
    figures_withheld: bool = False
    # A platform fault's traceback: the organizers' only.
    detail: str = ""
    # ``log`` is what the running system printed so far (its attempt's live log), not its whole log;
    # when it came (None: nothing yet).  Never True where ``log`` is None.
    log_live: bool = False
    log_live_at: dt.datetime | None = None
    # Held for an organizer's look before it runs (its team's platform failures on hidden data
    # passed the challenge's platform_failures_per_day): what the team reads, else "".
    held: str = ""

    @property
    def log_head(self) -> str:
        return (self.log or "")[: self.log_cut] if self.log_cut is not None else (self.log or "")

    @property
    def log_tail(self) -> str:
        return (self.log or "")[self.log_cut:] if self.log_cut is not None else ""


def verdict_sentence(*, verdict: str, dataset: Dataset | None, cause: str) -> str:
    """A failure in the fixed vocabulary, with the dataset's public label: nothing a system wrote.

    What the team (and a public board) reads of a failed run on hidden data.
    """
    text = Verdict(verdict).label if verdict else "failed"
    sentence = text[0].upper() + text[1:]
    if dataset is not None:
        sentence += f" for dataset {dataset_label(dataset, reveal_sealed=False)}"
    if cause == FailureCause.PLATFORM:
        sentence += " (the platform's fault: not counted against your quota"
        sentence += "; the organizers have been told)" if verdict == Verdict.GOLD else ")"
    return sentence + "."


def _exit_word(submission: Submission) -> str:
    # Three words, not the code: a system chooses its exit code, so the code is a channel.
    if submission.verdict in (Verdict.TIME_LIMIT, Verdict.MEMORY_LIMIT) or submission.exit_code == 137:
        return "killed"
    if submission.exit_code is None:
        return ""
    return "zero" if submission.exit_code == 0 else "non-zero"


def submission_run_report(*, submission: Submission, is_organizer: bool) -> RunReport:
    """What the viewer may see of how a submission ended.

    On public data (a dev portion) the team sees everything: the reasons help and
    leak nothing.  On hidden data the team sees a verdict from a fixed vocabulary,
    the dataset's public label, the exit status as zero, non-zero or killed, the
    run time in whole seconds and the peak memory in whole MiB, and no log unless
    an organizer released it: no byte the system wrote, no id, count or position.
    Organizers always see the full reason, the exact figures and the log.
    """
    hidden = phase_runs_on_hidden_data(phase=submission.phase)
    full = is_organizer or not hidden
    ran = submission.kind in SYSTEM_KINDS and submission.attempts > 0
    # Whatever figures a system set before the platform failed its run went out for free (the run
    # is not counted): on hidden data its team sees none of them.  Nor while the run is not yet
    # charged to the team (scoring, or queued again after a lost worker or scoring lease): a fault
    # then would make the figures already shown free.  So on hidden data the figures are shown only
    # once the run ended on the team's account: scored, or failed as the team's fault.  This one
    # decision serves every surface (page, API, lists), which read the figures from here only.
    charged = submission.status == Status.FINISHED or (
        submission.status == Status.FAILED and submission.failure_cause == FailureCause.PARTICIPANT)
    withheld = not full and ran and not charged
    if full:
        reason = submission.failure_reason
        if reason and submission.failure_cause == FailureCause.PLATFORM and "quota" not in reason:
            reason += " (not counted against your quota)"
        exit_text = "" if submission.exit_code is None else str(submission.exit_code)
        run_time = "" if submission.run_seconds is None else f"{submission.run_seconds:.1f} s"
    else:
        reason = "" if submission.status != Status.FAILED else verdict_sentence(
            verdict=submission.verdict, dataset=submission.verdict_dataset, cause=submission.failure_cause
        )
        exit_text = _exit_word(submission) if ran else ""
        run_time = "" if submission.run_seconds is None else f"{round(submission.run_seconds)} s"
    if submission.verdict == Verdict.GOLD and not is_organizer:
        # The gold's defect, in full, names the private gold file (whose name holds a sealed
        # dataset's real slug) and its questions: the team reads the verdict, even on public data.
        reason = verdict_sentence(verdict=submission.verdict, dataset=submission.verdict_dataset,
                                  cause=submission.failure_cause)
    peak = "" if submission.peak_memory_mb is None else f"{submission.peak_memory_mb} MiB"
    seconds = submission.run_seconds
    run_seconds = None if seconds is None else (seconds if full else round(seconds))  # whole seconds: an int
    peak_mb = submission.peak_memory_mb
    if withheld:
        exit_text, run_time, peak, run_seconds, peak_mb = "", "", "", None, None
    released = submission.log_released_at is not None
    # While it runs, the log is what the system printed so far (its attempt's live log, as its worker
    # sends it): under this same rule, but only where the log is the viewer's in full.  A release is
    # of a log an organizer read; what a hidden run prints now, no organizer has read.
    running = ran and submission.status == Status.RUNNING
    notes: tuple[str, ...] = ()
    cut = None
    live_at = None
    if not ran:
        log, note = None, ""
    elif running and full:
        live = _live_log_of(submission)
        log = live.live_log if live is not None else ""
        live_at = live.live_log_at if live is not None else None
        note = _live_log_note(hidden=hidden)
        notes, cut = _platform_notes(live.live_log_notes if live is not None else [], log_length=len(log))
    elif (full or released) and not running:
        log = log_clean(submission.log)  # runs recorded before logs were cleaned at capture
        note = _log_note(submission, hidden=hidden, released=released)
        notes, cut = _platform_notes(submission.log_notes, log_length=len(log))
    else:
        log = None
        note = ("This run read hidden test data, so its log is shown to the organizers only; "
                "they can release it to your team.")
    return RunReport(hidden, full, reason, exit_text, run_time, peak, log, note, notes, cut,
                     run_seconds=run_seconds, peak_memory_mb=peak_mb, figures_withheld=withheld,
                     detail=submission.failure_detail if is_organizer else "",
                     held=submission_hold_note(submission=submission),
                     log_live=running and log is not None, log_live_at=live_at)


def _live_log_of(submission: Submission) -> RunAttempt | None:
    """The running attempt's record, with what its system printed so far (``submission_run_report``'s only)."""
    return (RunAttempt.objects.filter(submission=submission, number=submission.attempts, history=None,
                                      ended_at__isnull=True)
            .only("live_log", "live_log_notes", "live_log_at").first())


def _live_log_note(*, hidden: bool) -> str:
    if hidden:
        return ("Organizers only, live: what this run on hidden test data has printed so far; its team sees "
                "none of it.")
    return ("Live: what the run has printed so far (stdout and stderr, capped as the log is), updated every "
            "few seconds while it runs; the whole log is kept when it ends. Only your team and the organizers "
            "see it.")


@dataclass(frozen=True)
class AttemptRow:
    """One attempt of a run as one viewer may see it (``run_attempts_of``); "" or None: not shown."""

    number: int
    end: str  # AttemptEnd's label ("running" while it is open)
    verdict: str  # the Verdict code ("" while it runs)
    claimed_at: dt.datetime | None
    ended_at: dt.datetime | None
    exit: str
    run_seconds: float | None
    peak_memory_mb: int | None
    reason: str
    # The organizers' only: which worker on which host, the fault's traceback, whether the log is this one's.
    worker: str = ""
    host: str = ""
    detail: str = ""
    log_recorded: bool = False

    @property
    def verdict_label(self) -> str:
        return Verdict(self.verdict).label if self.verdict else ""


def run_attempts_of(*, submission: Submission, is_organizer: bool) -> tuple[AttemptRow, ...]:
    """The attempts of a run, as the viewer may see them: every surface (page, API, console) reads
    them from here.

    Organizers see every attempt in full.  The team sees what ``submission_run_report`` lets it see
    of the run, the one rule, and no more: on public data each attempt's end, times and figures
    (not the worker, its host or a traceback); on hidden data, only the attempt charged to it
    (scored or failed by the team's fault), shown as the report shows it, numbered 1, and nothing
    of the attempts the platform stopped: neither their figures, their workers nor their count.
    """
    rows = list(RunAttempt.objects.filter(submission=submission, history=None).order_by("number"))
    if is_organizer:
        return tuple(AttemptRow(
            number=a.number, end=AttemptEnd(a.end).label, verdict=a.verdict, claimed_at=a.claimed_at,
            ended_at=a.ended_at, exit="" if a.exit_code is None else str(a.exit_code), run_seconds=a.run_seconds,
            peak_memory_mb=a.peak_memory_mb, reason=a.reason, worker=a.worker, host=a.host, detail=a.detail,
            log_recorded=a.log_recorded,
        ) for a in rows)
    report = submission_run_report(submission=submission, is_organizer=False)
    if report.full:
        return tuple(AttemptRow(
            number=a.number, end=AttemptEnd(a.end).label, verdict=a.verdict, claimed_at=a.claimed_at,
            ended_at=a.ended_at, exit="" if a.exit_code is None else str(a.exit_code), run_seconds=a.run_seconds,
            peak_memory_mb=a.peak_memory_mb,
            # A gold defect's reason names the private gold file: the report's sentence instead.
            reason=report.reason if a.verdict == Verdict.GOLD else a.reason,
        ) for a in rows)
    charged = [a for a in rows if a.end in (AttemptEnd.SCORED, AttemptEnd.FAILED) and a.number == submission.attempts]
    if report.figures_withheld or not charged:
        return ()
    last = charged[0]
    return (AttemptRow(
        number=1, end=AttemptEnd(last.end).label, verdict=submission.verdict,
        # To the second, as the API shows start and end on hidden data: finer would tell what whole
        # seconds of the run time hide.
        claimed_at=last.claimed_at.replace(microsecond=0),
        ended_at=None if last.ended_at is None else last.ended_at.replace(microsecond=0),
        exit=report.exit, run_seconds=report.run_seconds, peak_memory_mb=report.peak_memory_mb, reason=report.reason,
    ),)


def run_attempts_ended(*, submission_ids: Collection[int]) -> dict[int, tuple[RunAttempt, ...]]:
    """The ended attempts of the current run of each submission, oldest first: the organizers'
    console only (worker, host and reason in full); a team's pages read ``run_attempts_of``."""
    ended: dict[int, list[RunAttempt]] = {}
    for attempt in (RunAttempt.objects.filter(submission_id__in=list(submission_ids), history=None,
                                              ended_at__isnull=False).order_by("submission_id", "number")):
        ended.setdefault(attempt.submission_id, []).append(attempt)
    return {pk: tuple(rows) for pk, rows in ended.items()}


def submission_hold_note(*, submission: Submission) -> str:
    """What a queued run held for an organizer's look says to everyone who sees it ("" if not held)."""
    if submission.status != Status.QUEUED or submission.kind not in SYSTEM_KINDS:
        return ""
    # The rule the queue's order and every claim apply (run_queue_order), so the note says
    # what workers do.
    if submission.pk not in submissions_held_for_review(submission_ids=[submission.pk]):
        return ""
    return ("Held for the organizers' review before it runs: more of your team's runs on hidden data than the "
            "challenge allows in a day ended by a platform failure, which is not counted. An organizer "
            "releases it once they have looked.")


def _platform_notes(raw: object, *, log_length: int) -> tuple[tuple[str, ...], int | None]:
    """The stored notes' texts, and the position of the cut in the log if one is marked."""
    notes = [n for n in raw if isinstance(n, dict) and isinstance(n.get("text"), str)] if isinstance(raw, list) else []
    cut = next((n["at"] for n in notes if isinstance(n.get("at"), int) and 0 <= n["at"] <= log_length), None)
    return tuple(n["text"] for n in notes), cut


def _log_note(submission: Submission, *, hidden: bool, released: bool) -> str:
    if released:
        who = submission.log_released_by.username if submission.log_released_by else "an organizer"
        return f"Released to the team by {who} on {submission.log_released_at:%Y-%m-%d %H:%M} UTC."
    if hidden:
        return "Organizers only: this run read hidden test data, so its team does not see this log."
    return "stdout and stderr of the run, capped; only your team and the organizers see it."


def submission_score_history(*, submission: Submission, is_organizer: bool) -> list[ScoreHistory]:
    """The submission's earlier scores, newest first: organizers only.

    History keeps sealed datasets' values and the gold files' hashes, and earlier aggregates
    were published under other visible values; a team's pages show its current scores only.
    """
    if not is_organizer:
        return []
    entries = list(ScoreHistory.objects.filter(submission=submission).prefetch_related("attempts"))
    suite = suite_for(submission.phase.challenge)
    extra = phase_metric_columns(suite, submission.phase)
    for entry in entries:
        # The board's labels ("Split II F1"), as the current scores show them, not the stored keys.
        for row in entry.scores:
            metric, per_dataset = str(row.get("metric", "")), bool(row.get("dataset"))
            row["label"] = metric_label(suite, metric, per_dataset=per_dataset, extra=extra)
            value = row.get("value")
            row["text"] = "—" if not isinstance(value, (int, float)) else fixed(
                float(value), metric_decimals(suite, metric, per_dataset=per_dataset, extra=extra))
    return entries


# Platform failures of a team's runs on hidden data are counted over the quota's day.
HOLD_WINDOW = QUOTA_WINDOW


def team_platform_failures(*, team_ids: Collection[int], now: dt.datetime | None = None) -> dict[int, int]:
    """Per team, its runs on hidden data that ended failed by the platform's fault within the last
    day: each was free (not counted), so each may have carried what its system set for nothing."""
    now = now or timezone.now()
    failed = (Submission.objects.filter(team_id__in=list(team_ids), kind__in=SYSTEM_KINDS, status=Status.FAILED,
                                        failure_cause=FailureCause.PLATFORM, finished_at__gte=now - HOLD_WINDOW)
              .select_related("phase").only("team_id", "phase"))
    hidden: dict[int, bool] = {}
    counts: dict[int, int] = {}
    for submission in failed:
        if submission.phase_id not in hidden:
            hidden[submission.phase_id] = phase_runs_on_hidden_data(phase=submission.phase)
        if hidden[submission.phase_id]:
            counts[submission.team_id] = counts.get(submission.team_id, 0) + 1
    return counts


def submissions_held_for_review(*, submission_ids: Collection[int], now: dt.datetime | None = None) -> set[int]:
    """Which of these queued runs wait for an organizer's look before any worker takes them.

    A run on hidden data whose team had more of its hidden-data runs failed by the platform within
    the last day than its challenge's ``platform_failures_per_day`` (systems settings; default 3),
    unless an organizer released it (``hold_released_at``).  Whatever causes them, such failures
    are runs its team does not pay for; held, they cannot go on for free.  The one rule that
    ``run_queue_order``, ``lifecycle.submission_run_claim`` and the pages apply.
    """
    if not submission_ids:
        return set()
    candidates = list(Submission.objects.filter(pk__in=list(submission_ids), status=Status.QUEUED,
                                                kind__in=SYSTEM_KINDS, hold_released_at__isnull=True)
                      .values_list("pk", "team_id", "phase_id"))
    if not candidates:
        return set()
    failures = team_platform_failures(team_ids={team for _, team, _ in candidates}, now=now)
    # Most teams have none: a claim then costs these two queries only.
    failing = [row for row in candidates if failures.get(row[1], 0)]
    if not failing:
        return set()
    phases = {p.pk: p for p in Phase.objects.filter(pk__in={phase for _, _, phase in failing})
              .select_related("challenge")}
    hidden: dict[int, bool] = {}
    held: set[int] = set()
    for pk, team, phase_id in failing:
        phase = phases[phase_id]
        if failures[team] <= _failures_allowed(phase.challenge):
            continue
        if phase_id not in hidden:
            hidden[phase_id] = phase_runs_on_hidden_data(phase=phase)
        if hidden[phase_id]:
            held.add(pk)
    return held


def _failures_allowed(challenge: Challenge) -> int:
    try:
        return SystemSettings.from_json(challenge.system_settings).platform_failures_per_day
    except ValueError:  # refused when the challenge was loaded; the default rather than an error here
        return SystemSettings().platform_failures_per_day


def reveal_exposes(*, datasets: Sequence[Dataset]) -> list[Dataset]:
    """The other sealed datasets whose scores would follow if ``datasets`` were revealed now.

    For every set of datasets some submission was scored on, the averages published while
    these are sealed (what anyone may have copied) are taken with their scores once public;
    any still-sealed value that follows exactly (``disclosure.exposed_by_reveal``) is exposed.
    """
    revealing = {ds.pk for ds in datasets if ds.is_sealed}
    if not revealing:
        return []
    # As if the challenge withheld only what isolates a sealed score: the most that may ever have been
    # published (a challenge strict now may not have been before, and a copy outlives the policy).
    challenge = copy.copy(datasets[0].challenge)
    challenge.sealed_aggregates = SealedAggregates.ISOLATING
    suite = suite_for(challenge)
    every = list(Dataset.objects.filter(challenge=challenge).order_by("order", "slug"))
    by_pk = {ds.pk: ds for ds in every}
    exposed: set[int] = set()
    for phase in Phase.objects.filter(challenge=challenge):
        in_phase = [ds for ds in every if phase_has_dataset(phase, ds)]
        if not revealing & {ds.pk for ds in in_phase}:
            continue
        ranked = ranking_scope_get(challenge=challenge, datasets=in_phase).datasets
        metrics = [c.metric for c in phase_aggregate_columns(suite, phase)]
        covered: dict[int, set[int]] = {}
        for submission_id, dataset_id in Score.objects.filter(
            submission__phase=phase, dataset__isnull=False
        ).values_list("submission_id", "dataset_id").distinct():
            covered.setdefault(submission_id, set()).add(dataset_id)
        for pks in {frozenset(c) for c in covered.values() if revealing & c}:
            scored = [by_pk[pk] for pk in pks if pk in by_pk]
            published = aggregates_published(challenge=challenge, suite=suite, datasets=scored, metrics=metrics,
                                             ranked=ranked)
            averages = []
            for metric in published:
                scope = suite.averaged_over(metric, scored, ranked=ranked)
                if scope is not None:
                    averages.append(Average(metric, scope[0], frozenset(ds.pk for ds in scope[1])))
            still = {ds.pk for ds in scored if ds.is_sealed and ds.pk not in revealing}
            exposed.update(int(str(pk)) for pk in exposed_by_reveal(averages, sealed_after=still))
    return [by_pk[pk] for pk in sorted(exposed)]


def reveal_closure(*, dataset: Dataset) -> list[Dataset]:
    """``dataset`` and every sealed dataset that must be revealed with it: revealing it alone would
    let anyone who copied an earlier average compute theirs (see ``reveal_exposes``)."""
    chosen = [dataset]
    while True:
        more = [ds for ds in reveal_exposes(datasets=chosen) if ds not in chosen]
        if not more:
            return chosen
        chosen += more
