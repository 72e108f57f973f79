"""Integrity signals for the organizers: never shown to teams, and none acts on its own.

Three signals, each with its explanation and its evidence:

- near-duplicate predictions (``integrity_duplicates``): two teams' submissions in a phase that
  share far more of their *wrong* answers than systems built apart do (``scoring.copying``);
- determinism (``determinism_check_start``, ``determinism_results``): a finished system run again
  on the same inputs, its answers compared with the kept answers of the run before;
- membership (``integrity_membership_changes``): users who moved between teams, and joins and
  leaves in the days before a phase closes.

Reads are selectors; the one write, starting a determinism check, is a re-run
(``submissions.rerun``) plus its audit entry.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from leaderboard.accounts.models import Membership, MembershipEvent, MembershipEventKind, Team
from leaderboard.challenges.audit import audit_reason_clean, audit_record
from leaderboard.challenges.models import SYSTEM_KINDS, AuditEntry, Challenge, Dataset, Phase, SubmissionKind
from leaderboard.challenges.selectors import (
    CONSOLE_NOT_FOUND,
    dataset_label,
    user_is_organizer,
)
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.judging.answers import submission_answers_read
from leaderboard.submissions.models import BoardEntry, QuestionScores, ScoreHistory, Status, Submission
from leaderboard.submissions.rerun import submission_rerun, submission_rerun_problem
from leaderboard.submissions.selectors import phase_gold_files
from leaderboard.submissions.storage import run_answers_read, run_answers_read_kept
from scoring.copying import (
    FLAG_WRONG_SHARE,
    INDEPENDENT_WRONG_SHARE,
    MIN_BOTH_WRONG,
    PairAgreement,
    answer_key,
    pair_agreement,
)

# A team's newest finished submissions compared, besides the one on its board: a copy need not be
# its best, and comparing every pair of every submission grows with the square of their number.
NEWEST_PER_TEAM = 3
# Pairs shown below the flagged ones, for context (the closest unflagged).
UNFLAGGED_SHOWN = 5
MEMBERSHIP_DAYS = 3

Answers = dict[str, dict[str, object]]  # dataset slug -> qid -> answer


# --------------------------------------------------------------------------- answers and verdicts


def submission_answers(*, submission: Submission) -> Answers:
    """What a submission answered, per dataset of its phase, read as a judging round reads it
    (``judging.answers.submission_answers_read``: a prediction file as evaluation parses it, a system
    run as it was kept for rescoring).  {} when nothing can be read (its upload freed, a failed run)."""
    try:
        return submission_answers_read(submission=submission, files=phase_gold_files(phase=submission.phase))
    except (ServiceError, OSError):
        return {}


def _decoded(stored: Mapping[str, bytes]) -> Answers:
    return {slug: json.loads(data) for slug, data in stored.items()}


def submission_rightness(*, submission: Submission) -> dict[str, dict[str, bool]]:
    """Per dataset slug, qid -> whether the answer was right (exact match), from the per-question
    scores its scoring kept; questions without an exact-match verdict are left out."""
    out: dict[str, dict[str, bool]] = {}
    for slug, records in QuestionScores.objects.filter(submission=submission).values_list("dataset__slug", "records"):
        verdicts: dict[str, bool] = {}
        for record in records or []:
            if not isinstance(record, dict) or record.get("missing"):
                continue
            em = record.get("exact_match", record.get("em"))
            if isinstance(em, (int, float)):
                verdicts[str(record.get("qid", record.get("id")))] = em > 0
        out[slug] = verdicts
    return out


def _summed(parts: Iterable[PairAgreement]) -> PairAgreement:
    parts = list(parts)
    return PairAgreement(*(sum(getattr(p, f) for p in parts) for f in
                           ("questions", "same", "right_a", "right_b", "both_wrong", "same_wrong")))


# --------------------------------------------------------------------------- near-duplicates


@dataclass(frozen=True)
class DuplicatePair:
    phase: Phase
    a: Submission
    b: Submission
    overall: PairAgreement
    per_dataset: list[tuple[str, PairAgreement]]

    @property
    def flagged(self) -> bool:
        return self.overall.flagged

    @property
    def explanation(self) -> str:
        p = self.overall
        if not p.both_wrong:
            return f"no question both got wrong among the {p.questions} both answered: nothing to compare"
        text = (f"identical on {p.same_wrong} of {p.both_wrong} questions both got wrong "
                f"({p.wrong_share or 0:.0%}); independent systems share about {INDEPENDENT_WRONG_SHARE:.0%}")
        text += (f". Overall they agree on {p.same} of {p.questions} answers ({p.agreement or 0:.0%}); "
                 f"independent systems of these accuracies would agree on about {p.expected_agreement or 0:.0%}")
        if p.both_wrong < MIN_BOTH_WRONG:
            text += f". Too few shared wrong answers to judge (fewer than {MIN_BOTH_WRONG})"
        return text

    @property
    def sort_key(self) -> tuple[bool, float, int]:
        return (self.flagged, self.overall.wrong_share or 0.0, self.overall.both_wrong)


def _compared(phase: Phase) -> list[Submission]:
    """Each team's board submission and its newest finished ones in the phase."""
    finished = (Submission.objects.filter(phase=phase, status=Status.FINISHED)
                .exclude(kind=SubmissionKind.IMPORTED).select_related("team", "phase__challenge")
                .order_by("team_id", "-created_at", "-id"))
    on_board = set(BoardEntry.objects.filter(phase=phase).values_list("submission_id", flat=True))
    chosen: list[Submission] = []
    per_team: dict[int, int] = {}
    for s in finished:
        if s.pk in on_board or per_team.get(s.team_id, 0) < NEWEST_PER_TEAM:
            chosen.append(s)
            per_team[s.team_id] = per_team.get(s.team_id, 0) + 1
    return chosen


def integrity_duplicates(*, phase: Phase) -> list[DuplicatePair]:
    """Pairs of submissions of two different teams in ``phase``, the most suspect first: for each
    pair of teams, its most similar pair of submissions; every flagged one and a few unflagged."""
    submissions = _compared(phase)
    answers = {s.pk: submission_answers(submission=s) for s in submissions}
    right = {s.pk: submission_rightness(submission=s) for s in submissions}
    labels = {ds.slug: dataset_label(ds, reveal_sealed=True) for ds in Dataset.objects.filter(challenge=phase.challenge)}
    best: dict[tuple[int, int], DuplicatePair] = {}
    for a, b in combinations(submissions, 2):
        if a.team_id == b.team_id:
            continue
        if a.team_id > b.team_id:
            a, b = b, a
        per_dataset = [
            (labels.get(slug, slug), pair_agreement(answers[a.pk][slug], answers[b.pk][slug],
                                                    right[a.pk].get(slug, {}), right[b.pk].get(slug, {})))
            for slug in sorted(answers[a.pk].keys() & answers[b.pk].keys())
        ]
        per_dataset = [(label, p) for label, p in per_dataset if p.questions]
        if not per_dataset:
            continue
        pair = DuplicatePair(phase, a, b, _summed(p for _, p in per_dataset), per_dataset)
        key = (a.team_id, b.team_id)
        if key not in best or pair.sort_key > best[key].sort_key:
            best[key] = pair
    ranked = sorted(best.values(), key=lambda p: p.sort_key, reverse=True)
    flagged = [p for p in ranked if p.flagged]
    return flagged + [p for p in ranked if not p.flagged][:UNFLAGGED_SHOWN]


DUPLICATES_EXPLAINED = (
    f"Two systems built apart seldom give the same wrong answer: on the shared MRQA data, baselines built "
    f"independently shared at most {INDEPENDENT_WRONG_SHARE:.0%} of the answers they both got wrong (SQuAD's "
    f"normalization; abstentions left out), while copies with a fifth of their answers changed shared 80% or more. "
    f"A pair is flagged at {FLAG_WRONG_SHARE:.0%} over {MIN_BOTH_WRONG} or more such questions. Systems fine-tuned "
    "from the same public model agree more than these baselines do: read the answers before acting."
)


# --------------------------------------------------------------------------- membership


@dataclass(frozen=True)
class MembershipChange:
    user: str
    team: Team
    event: str
    at: dt.datetime
    phase: Phase
    before_close: dt.timedelta

    @property
    def hours_before(self) -> int:
        return int(self.before_close.total_seconds() // 3600)


@dataclass
class Mover:
    """A user who was on more than one team of the challenge (one at a time: the database allows no more)."""

    user: str
    teams: list[str] = field(default_factory=list)  # in the order they joined
    events: list[MembershipEvent] = field(default_factory=list)


@dataclass(frozen=True)
class MembershipSignals:
    movers: list[Mover]
    near_deadline: list[MembershipChange]
    days: int


def integrity_membership_changes(*, challenge: Challenge, days: int = MEMBERSHIP_DAYS) -> MembershipSignals:
    events = list(MembershipEvent.objects.filter(team__challenge=challenge).select_related("team", "user")
                  .order_by("at", "id"))
    by_user: dict[int, Mover] = {}
    for e in events:
        mover = by_user.setdefault(e.user_id, Mover(e.user.get_username()))
        mover.events.append(e)
        if e.team.name not in mover.teams:
            mover.teams.append(e.team.name)
    # A membership made without an event (an admin, data older than the events) still counts.
    for m in Membership.objects.filter(challenge=challenge).select_related("team", "user"):
        mover = by_user.setdefault(m.user_id, Mover(m.user.get_username()))
        if m.team.name not in mover.teams:
            mover.teams.append(m.team.name)
    window = dt.timedelta(days=days)
    near = [
        MembershipChange(e.user.get_username(), e.team, MembershipEventKind(e.event).label
                         if e.event in MembershipEventKind.values else e.event, e.at, phase, phase.closes_at - e.at)
        for phase in challenge.phases.all()
        for e in events
        if e.event != MembershipEventKind.OWNER and dt.timedelta(0) <= phase.closes_at - e.at <= window
    ]
    return MembershipSignals([m for m in by_user.values() if len(m.teams) > 1],
                             sorted(near, key=lambda c: (c.phase.closes_at, c.at)), days)


# --------------------------------------------------------------------------- determinism


DETERMINISM_ACTION = "submission.determinism_check"


def determinism_check_problem(submission: Submission) -> str:
    """Why the submission cannot be checked now ("" if it can)."""
    if submission.kind not in SYSTEM_KINDS:
        return "only a system can be run again on the same inputs; a prediction file has no run to repeat"
    if submission.status != Status.FINISHED:
        return f"it is {submission.status}: only a finished run has answers to compare"
    if run_answers_read(submission_id=submission.pk) is None:
        return "its run kept no answers to compare with"
    return submission_rerun_problem(submission)


def determinism_check_start(*, submission: Submission, by: AbstractBaseUser, reason: str) -> ScoreHistory:
    """Run a finished system again on the same inputs (a re-run, which keeps the current run's answers
    in its history); the integrity page compares the two runs' answers once the new one finishes."""
    challenge = submission.phase.challenge
    if not user_is_organizer(user=by, challenge=challenge):
        raise NotFound(CONSOLE_NOT_FOUND)
    reason = audit_reason_clean(reason)
    problem = determinism_check_problem(submission)
    if problem:
        raise ServiceError(problem)
    with transaction.atomic():
        history = submission_rerun(submission=submission, by=by, reason=f"determinism check: {reason}")
        audit_record(challenge=challenge, actor=by, action=DETERMINISM_ACTION,
                     target=f"submission {submission.pk} ({submission.team.name}, {submission.phase.name})",
                     reason=reason, details={"submission_id": submission.pk, "history_id": history.pk})
    return history


@dataclass(frozen=True)
class DeterminismResult:
    entry: AuditEntry
    submission: Submission
    state: str  # "running", "compared", "unavailable"
    differ: int = 0
    compared: int = 0
    per_dataset: list[tuple[str, int, int]] = field(default_factory=list)  # label, differ, compared
    note: str = ""

    @property
    def explanation(self) -> str:
        if self.state != "compared":
            return self.note
        if not self.differ:
            return f"all {self.compared} answers identical between the two runs (normalized)"
        parts = ", ".join(f"{label}: {n} of {m}" for label, n, m in self.per_dataset if n)
        return (f"{self.differ} of {self.compared} answers differ ({parts}): the same system on the same "
                "inputs answered differently")


def _differences(first: Answers, second: Answers, labels: Mapping[str, str]) -> list[tuple[str, int, int]]:
    out = []
    for slug in sorted(first.keys() | second.keys()):
        a, b = first.get(slug, {}), second.get(slug, {})
        qids = a.keys() | b.keys()
        # A question answered by one run only differs too.
        differ = sum(1 for q in qids if q not in a or q not in b or answer_key(a[q]) != answer_key(b[q]))
        out.append((labels.get(slug, slug), differ, len(qids)))
    return out


def determinism_result(*, entry: AuditEntry) -> DeterminismResult | None:
    """The comparison a determinism check's audit entry asked for; None if its submission is gone."""
    submission = (Submission.objects.select_related("team", "phase__challenge")
                  .filter(pk=entry.details.get("submission_id")).first())
    history = ScoreHistory.objects.filter(pk=entry.details.get("history_id"), submission=submission).first()
    if submission is None or history is None:
        return None
    before = run_answers_read_kept(history_id=history.pk)
    if before is None:
        return DeterminismResult(entry, submission, "unavailable", note="the first run's answers were not kept")
    # The second run's answers: the next history entry's if it was run again since, else its own now.
    later = ScoreHistory.objects.filter(submission=submission, pk__gt=history.pk).order_by("pk").first()
    if later is not None:
        after = run_answers_read_kept(history_id=later.pk)
    elif submission.status == Status.FINISHED:
        after = run_answers_read(submission_id=submission.pk)
    elif submission.status == Status.FAILED:
        return DeterminismResult(entry, submission, "unavailable",
                                 note=f"the second run failed ({submission.failure_reason}): no answers to compare")
    else:
        return DeterminismResult(entry, submission, "running",
                                 note=f"the second run is {submission.status}; compared when it finishes")
    if after is None:
        return DeterminismResult(entry, submission, "unavailable", note="the second run kept no answers")
    labels = {ds.slug: dataset_label(ds, reveal_sealed=True) for ds in Dataset.objects.filter(
        challenge_id=submission.phase.challenge_id)}
    per = _differences(_decoded(before), _decoded(after), labels)
    return DeterminismResult(entry, submission, "compared", sum(n for _, n, _ in per), sum(m for _, _, m in per), per)


def determinism_results(*, challenge: Challenge) -> list[DeterminismResult]:
    """Every determinism check of the challenge, newest first."""
    entries = AuditEntry.objects.filter(challenge=challenge, action=DETERMINISM_ACTION).order_by("-created_at", "-id")
    return [r for e in entries if (r := determinism_result(entry=e)) is not None]


def integrity_report(*, challenge: Challenge, days: int = MEMBERSHIP_DAYS) -> dict[str, Any]:
    """The console page's three signals."""
    return {
        "duplicates": [(phase, integrity_duplicates(phase=phase)) for phase in challenge.phases.all()],
        "duplicates_explained": DUPLICATES_EXPLAINED,
        "determinism": determinism_results(challenge=challenge),
        "membership": integrity_membership_changes(challenge=challenge, days=days),
    }
