"""Writes of the judging rounds: create (sample, collect, merge), open (assign), close, publish; invite a
judge; record a judgment or an adjudication.

Organizer actions check the role themselves (NotFound for anyone else, the console's one answer)
and write their audit entry in the transaction that makes the change (``challenges.audit``), so the
console pages and the spec can call them as they are.  A judgment is checked against the judge's
assignment, :func:`selectors.judge_may_see` and the round's state and deadline.

A round's life: ``draft`` (created: items and candidates fixed, nobody judges) -> ``open`` (judges
assigned and judging) -> ``closed`` (no more judgments; adjudication goes on) -> ``published``
(its results may be shown beyond the organizers; nothing changes any more).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.accounts.selectors import team_of_user
from leaderboard.challenges.audit import audit_record
from leaderboard.challenges.human_eval import MAX_JUDGES_PER_ITEM, MAX_QUESTIONS, TYPED_SUITES
from leaderboard.challenges.models import Challenge, DatasetFile, Phase, SubmissionKind
from leaderboard.challenges.selectors import CONSOLE_NOT_FOUND, user_is_organizer
from leaderboard.challenges.versions import board_changed
from leaderboard.core.errors import Conflict, NotFound, ServiceError
from leaderboard.judging.answers import Answer, answer_of, submission_answers_read
from leaderboard.judging.items import (
    QuestionText,
    questions_sample,
    questions_text,
    suite_check,
    suite_questions,
)
from leaderboard.judging.models import (
    DEFAULT_GUIDELINES,
    Adjudication,
    Assignment,
    Candidate,
    Judge,
    Judgment,
    Round,
    RoundItem,
    RoundState,
    RoundSystem,
    Scale,
    Stratify,
)
from leaderboard.judging.selectors import JUDGE_NOT_FOUND, judge_may_see, judge_standing
from leaderboard.submissions.models import BoardEntry, Status, Submission

NOTE_MAX = 2000
# Scales by suite when the organizer names none: the paper's 1-5 for generated answers (DuReader),
# correct / partly / wrong with "acceptable" for extracted spans.
DEFAULT_SCALES: dict[str, str] = {"mrc2018": Scale.FIVE_POINT, "mrqa": Scale.CORRECT_PARTLY_WRONG}
# "Differ by more than": a point on the 1-5 scale; any difference on the three-way scale.
DEFAULT_MARGINS: dict[str, float] = {Scale.FIVE_POINT: 1.0, Scale.CORRECT_PARTLY_WRONG: 0.0}
# Kinds whose answers are stored (an imported row holds published numbers only).
JUDGEABLE_KINDS = (SubmissionKind.PREDICTIONS, SubmissionKind.DOCKER_IMAGE, SubmissionKind.CODE_BUNDLE)


def _organizer_check(challenge: Challenge, actor: AbstractBaseUser) -> None:
    if not user_is_organizer(user=actor, challenge=challenge):
        raise NotFound(CONSOLE_NOT_FOUND)


def _audit(round: Round, actor: AbstractBaseUser | None, action: str, reason: str = "", **details: object) -> None:
    audit_record(challenge=round.phase.challenge, actor=actor, action=f"judging.{action}",
                 target=f"judging round {round.pk} ({round.phase.name})", reason=reason,
                 details={"round_id": round.pk, **details})


# --------------------------------------------------------------------------- creating a round


def candidate_key(answer: Answer, *, suite_key: str) -> str:
    """What makes two answers to one question the same candidate: the text with white space normalized
    as the suite's metric reads it (MRC2018 removes it, as its scripts do for Chinese; MRQA
    collapses it) and the yes/no opinion.  Nothing else is normalized: "The Beatles" and "beatles"
    are two candidates, since a judge may tell them apart."""
    text = "".join(answer.text.split()) if suite_key == "mrc2018" else " ".join(answer.text.split())
    return hashlib.sha256(f"{answer.yesno}\x00{text}".encode()).hexdigest()


def _systems_chosen(*, phase: Phase, systems: Sequence[int] | None, top_k: int | None) -> list[Submission]:
    if (systems is None) == (top_k is None):
        raise ServiceError("name the systems (submission ids) or the top k of the board, not both", field="systems")
    finished = Submission.objects.filter(phase=phase, status=Status.FINISHED).select_related("team")
    if systems is not None:
        ids = list(dict.fromkeys(systems))
        found = finished.in_bulk(ids)
        missing = [str(i) for i in ids if i not in found]
        if missing:
            raise ServiceError(f"no finished submission {', '.join(missing)} in {phase.name}", field="systems")
        chosen = [found[i] for i in ids]
    else:
        if top_k is None or top_k < 1:
            raise ServiceError("top k must be at least 1", field="top_k")
        # The board's order (every suite's ranking metric is higher-better): the submission that
        # represents each team, hidden and disqualified ones left out.
        entries = (BoardEntry.objects.filter(phase=phase, submission__status=Status.FINISHED,
                                             submission__primary_score__isnull=False,
                                             submission__kind__in=JUDGEABLE_KINDS)
                   .filter(submission__hidden_reason="", submission__excluded_reason="")
                   .select_related("submission__team")
                   .order_by("-submission__primary_score", "submission__created_at", "submission_id"))
        chosen = [e.submission for e in entries[:top_k]]
    if len(chosen) < 1:
        raise ServiceError(f"no system to judge on the {phase.name} board", field="top_k")
    unjudgeable = [str(s.pk) for s in chosen if s.kind not in JUDGEABLE_KINDS]
    if unjudgeable:
        raise ServiceError(f"submission {', '.join(unjudgeable)}: an imported result has no answers to judge",
                           field="systems")
    return chosen


@dataclass(frozen=True)
class _Sampled:
    file: DatasetFile
    question: QuestionText


def round_create(
    *, phase: Phase, by: AbstractBaseUser, questions: int, systems: Sequence[int] | None = None,
    top_k: int | None = None, seed: int | None = None, stratify_by: str = Stratify.NONE, judges_per_item: int = 2,
    scale: str | None = None, guideline: str | None = None, deadline: dt.datetime | None = None,
    disagreement_margin: float | None = None, name: str = "",
) -> Round:
    """A draft round: ``questions`` sampled (seeded; stratified by question type or dataset) from the
    datasets every chosen system answered, each system's answers collected, identical answers of a
    question merged into one candidate, candidates shuffled (seeded).  ``seed`` None: a random one,
    recorded on the round so the sample can be drawn again."""
    challenge = phase.challenge
    _organizer_check(challenge, by)
    suite_key = challenge.metric_suite
    suite_check(suite_key)
    scale = scale or DEFAULT_SCALES[suite_key]
    if scale not in Scale.values:
        raise ServiceError(f"unknown scale {scale!r}; expected one of {', '.join(Scale.values)}", field="scale")
    if stratify_by not in Stratify.values:
        raise ServiceError(f"unknown strata {stratify_by!r}; expected question_type, dataset or none",
                           field="stratify_by")
    if stratify_by == Stratify.QUESTION_TYPE and suite_key not in TYPED_SUITES:
        raise ServiceError(f"the {suite_key} suite's questions have no type; stratify by dataset", field="stratify_by")
    if not 1 <= questions <= MAX_QUESTIONS:
        raise ServiceError(f"questions: between 1 and {MAX_QUESTIONS}", field="questions")
    if not 1 <= judges_per_item <= MAX_JUDGES_PER_ITEM:
        raise ServiceError(f"judges per item: between 1 and {MAX_JUDGES_PER_ITEM}", field="judges_per_item")
    margin = DEFAULT_MARGINS[scale] if disagreement_margin is None else float(disagreement_margin)
    if margin < 0:
        raise ServiceError("the disagreement margin cannot be negative", field="disagreement_margin")
    if seed is None:
        seed = secrets.randbelow(2**31)
    chosen = _systems_chosen(phase=phase, systems=systems, top_k=top_k)

    files = list(DatasetFile.objects.filter(dataset__challenge=challenge, portion=phase.portion)
                 .select_related("dataset").order_by("dataset__order", "dataset__slug"))
    answers = {s.pk: submission_answers_read(submission=s, files=files) for s in chosen}
    # Only datasets every system answered: a question some system never saw would judge it by absence.
    files = [f for f in files if all(f.dataset.slug in per_dataset for per_dataset in answers.values())]
    if not files:
        raise ServiceError(f"the chosen systems answered no {phase.portion} dataset in common")
    population: list[_Sampled] = []
    for f in files:
        by_qid = suite_questions(suite_key=suite_key, gold_path=f.gold.path)
        population += [_Sampled(f, by_qid[qid]) for qid in f.qids if qid in by_qid]
    strata: dict[str, Callable[[_Sampled], str]] = {
        Stratify.QUESTION_TYPE: lambda s: s.question.question_type,
        Stratify.DATASET: lambda s: s.file.dataset.slug,
    }
    sample = questions_sample(population, n=questions, seed=seed, stratum=strata.get(stratify_by))
    texts: dict[int, dict[str, tuple[str, tuple]]] = {}
    for f in files:
        wanted = [s.question.qid for s in sample if s.file.pk == f.pk]
        if wanted:
            texts[f.pk] = questions_text(suite_key=suite_key, inputs_path=f.inputs.path, qids=wanted) if f.inputs else {}

    with transaction.atomic():
        created = Round.objects.create(
            phase=phase, name=name[:100], scale=scale, guideline=guideline or DEFAULT_GUIDELINES[scale],
            judges_per_item=judges_per_item, questions=questions, seed=seed, stratify_by=stratify_by,
            deadline=deadline, disagreement_margin=margin, created_by_id=by.pk,
        )
        labelled = [RoundSystem.objects.create(round=created, submission=s, label=f"S{i}")
                    for i, s in enumerate(chosen, start=1)]
        for position, sampled in enumerate(sample):
            f, q = sampled.file, sampled.question
            question, evidence = texts.get(f.pk, {}).get(q.qid, ("", ()))
            item = RoundItem.objects.create(
                round=created, dataset=f.dataset, qid=q.qid, question_type=q.question_type, position=position,
                gold_sha256=f.sha256, question=question,
                evidence=[{"title": e.title, "paragraphs": list(e.paragraphs)} for e in evidence],
                references=[{"text": r.text, "yesno": r.yesno} for r in q.references],
                entities=list(q.entities),
            )
            _candidates_create(item=item, systems=labelled, answers=answers, suite_key=suite_key, seed=seed,
                               yes_no=q.question_type == "YES_NO")
        _audit(created, by, "round_create", systems=[s.pk for s in chosen], items=len(sample), seed=seed,
               stratify_by=stratify_by, scale=scale)
    return created


def _candidates_create(*, item: RoundItem, systems: Sequence[RoundSystem], answers: dict[int, dict[str, dict]],
                       suite_key: str, seed: int, yes_no: bool) -> None:
    merged: dict[str, tuple[Answer, list[RoundSystem]]] = {}
    for system in systems:
        raw = answers[system.submission_id].get(item.dataset.slug, {}).get(item.qid)
        answer = answer_of(raw, suite_key=suite_key)
        if not yes_no:
            # The opinion label counts (and is shown) on yes/no questions only, as the metric reads it.
            answer = Answer(answer.text)
        key = candidate_key(answer, suite_key=suite_key)
        merged.setdefault(key, (Answer(answer.text.strip(), answer.yesno), []))[1].append(system)
    order = list(merged)
    # Seeded per question by its name, not its row id: the same round drawn again shuffles alike.
    random.Random(f"{seed}:{item.dataset.slug}:{item.qid}").shuffle(order)
    # Created in the shuffled order, so that not even the rows' ids follow the systems' labels.
    for position, key in enumerate(order):
        answer, givers = merged[key]
        candidate = Candidate.objects.create(item=item, answer=answer.text, yesno=answer.yesno, key=key,
                                             position=position)
        candidate.systems.set(givers)


# --------------------------------------------------------------------------- judges and assignments


def judge_invite(*, challenge: Challenge, user: AbstractBaseUser, by: AbstractBaseUser) -> Judge:
    """Make ``user`` a judge of the challenge's rounds.  Not a member of one of its teams: a judge
    reads references of hidden data and the teams' answers.  Open rounds give the new judge the
    items still short of judges."""
    _organizer_check(challenge, by)
    if team_of_user(user=user, challenge=challenge) is not None:
        raise ServiceError(f"{user.get_username()} is on a team of this challenge; a judge is on none", field="user")
    with transaction.atomic():
        judge, created = Judge.objects.get_or_create(challenge=challenge, user_id=user.pk,
                                                     defaults={"invited_by_id": by.pk})
        if not created:
            raise Conflict(f"{user.get_username()} judges this challenge already")
        audit_record(challenge=challenge, actor=by, action="judging.judge_invite",
                     target=f"judge {user.get_username()}", reason="", details={"user_id": user.pk})
        for open_round in Round.objects.filter(phase__challenge=challenge, state=RoundState.OPEN):
            round_judges_assign(round=open_round)
    return judge


def round_judges_assign(*, round: Round) -> list[RoundItem]:
    """Give every item of the round judges until it has ``judges_per_item`` (existing assignments
    stay): for each item in order, among the judges who may see it (``judge_may_see``), those with
    the fewest items so far, ties broken by a seeded order.  Returns the items still short."""
    judges = list(Judge.objects.filter(challenge=round.phase.challenge).select_related("user", "challenge")
                  .order_by("pk"))
    standings = {j.pk: judge_standing(judge=j) for j in judges}
    random.Random(f"{round.seed}:judges").shuffle(judges)
    tie = {j.pk: i for i, j in enumerate(judges)}
    load = {j.pk: 0 for j in judges}
    items = list(RoundItem.objects.filter(round=round).select_related("dataset", "round__phase__challenge")
                 .prefetch_related("assignments").order_by("position"))
    for item in items:
        for a in item.assignments.all():
            load[a.judge_id] = load.get(a.judge_id, 0) + 1
    short = []
    for item in items:
        have = {a.judge_id for a in item.assignments.all()}
        need = round.judges_per_item - len(have)
        eligible = [j for j in judges if j.pk not in have and standings[j.pk].may_see(item)]
        eligible.sort(key=lambda j: (load[j.pk], tie[j.pk]))
        for judge in eligible[:max(need, 0)]:
            Assignment.objects.create(item=item, judge=judge)
            load[judge.pk] += 1
        if len(have) + len(eligible[:max(need, 0)]) < round.judges_per_item:
            short.append(item)
    return short


# --------------------------------------------------------------------------- a round's states


_DONE = {"open": "opened", "close": "closed", "publish": "published"}


def _transition(round: Round, *, by: AbstractBaseUser, frm: str, to: str, stamp: str, action: str,
                reason: str = "") -> Round:
    _organizer_check(round.phase.challenge, by)
    with transaction.atomic():
        # The conditional update is the claim: of two organizers pressing at once, one moves it.
        moved = Round.objects.filter(pk=round.pk, state=frm).update(state=to, **{stamp: timezone.now()})
        if moved != 1:
            round.refresh_from_db()
            raise Conflict(f"the round is {round.get_state_display()}; only a {RoundState(frm).label} round can be "
                           f"{_DONE[action]}")
        round.refresh_from_db()
        _audit(round, by, f"round_{action}", reason=reason)
        if to == RoundState.PUBLISHED:
            # The phase's board shows the round's human scores from now: snapshots are built again.
            board_changed(challenge_id=round.phase.challenge_id)
    return round


def round_open(*, round: Round, by: AbstractBaseUser, reason: str = "") -> Round:
    """Open the round for judging, assigning every item ``judges_per_item`` judges.  Refused when the
    challenge has too few judges who may see an item (a sealed dataset's items: organizers only)."""
    _organizer_check(round.phase.challenge, by)
    with transaction.atomic():
        short = round_judges_assign(round=round)
        if short:
            transaction.set_rollback(True)
            raise ServiceError(
                f"{len(short)} item(s) cannot get {round.judges_per_item} judges who may see them "
                f"(first: {short[0].dataset.slug}/{short[0].qid}); invite more judges"
                + (" (items of a sealed dataset go to organizers only)" if short[0].dataset.is_sealed else ""))
        return _transition(round, by=by, frm=RoundState.DRAFT, to=RoundState.OPEN, stamp="opened_at",
                           action="open", reason=reason)


def round_close(*, round: Round, by: AbstractBaseUser, reason: str = "") -> Round:
    return _transition(round, by=by, frm=RoundState.OPEN, to=RoundState.CLOSED, stamp="closed_at",
                       action="close", reason=reason)


def round_publish(*, round: Round, by: AbstractBaseUser, reason: str = "") -> Round:
    """Publish a closed round: its human scores may then reach beyond the organizers (the board's
    human column reads published rounds only)."""
    return _transition(round, by=by, frm=RoundState.CLOSED, to=RoundState.PUBLISHED, stamp="published_at",
                       action="publish", reason=reason)


# --------------------------------------------------------------------------- judgments


def _score_check(round: Round, score: int, acceptable: bool | None) -> None:
    if score not in round.values:
        raise ServiceError(f"a score on this round's scale is one of {', '.join(map(str, round.values))}",
                           field="score")
    if acceptable is not None and round.scale != Scale.CORRECT_PARTLY_WRONG:
        raise ServiceError("this round's scale has no 'acceptable' flag", field="acceptable")


def judgment_give(*, judge: Judge, candidate: Candidate, score: int, acceptable: bool | None = None,
                  shown_at: dt.datetime | None = None, now: dt.datetime | None = None) -> Judgment:
    """Record the judge's one judgment of the candidate.  NotFound unless the candidate is on one of
    the judge's items and the judge may see it; refused in a round that is not open or past its
    deadline, and a second time (a judgment is not changed: adjudication is the organizers')."""
    now = now or timezone.now()
    item = RoundItem.objects.select_related("round__phase__challenge", "dataset").get(pk=candidate.item_id)
    round = item.round
    if (judge.challenge_id != round.phase.challenge_id or not Assignment.objects.filter(item=item, judge=judge).exists()
            or not judge_may_see(judge=judge, item=item)):
        raise NotFound(JUDGE_NOT_FOUND)
    if round.state != RoundState.OPEN:
        raise Conflict(f"the round is {round.get_state_display()}: it takes no more judgments")
    if round.deadline is not None and now > round.deadline:
        raise Conflict("the round's deadline has passed: it takes no more judgments")
    _score_check(round, score, acceptable)
    if Judgment.objects.filter(candidate=candidate, judge=judge).exists():
        raise Conflict("you judged this answer already; a judgment is not changed")
    # A time the page signed is the server's; one in the future or before the round opened is not a time.
    if shown_at is not None and (shown_at > now or (round.opened_at is not None and shown_at < round.opened_at)):
        shown_at = None
    try:
        with transaction.atomic():
            return Judgment.objects.create(
                candidate=candidate, judge=judge, score=score, acceptable=acceptable, shown_at=shown_at,
                given_at=now, seconds=(now - shown_at).total_seconds() if shown_at is not None else None,
            )
    except IntegrityError:  # the same form sent twice at once: the unique key let one through
        raise Conflict("you judged this answer already; a judgment is not changed") from None


def adjudication_record(*, candidate: Candidate, by: AbstractBaseUser, score: int, acceptable: bool | None = None,
                        note: str = "") -> Adjudication:
    """An organizer's score for a candidate (where judges disagreed), recorded and audited; the
    latest counts as its human score.  Refused once the round is published (its numbers are out)."""
    round = Round.objects.select_related("phase__challenge").get(pk=candidate.item.round_id)
    _organizer_check(round.phase.challenge, by)
    if round.state not in (RoundState.OPEN, RoundState.CLOSED):
        raise Conflict(f"the round is {round.get_state_display()}: nothing is adjudicated in it")
    _score_check(round, score, acceptable)
    note = " ".join((note or "").split())
    if len(note) > NOTE_MAX:
        raise ServiceError(f"the note is {len(note)} characters long; at most {NOTE_MAX}", field="note")
    with transaction.atomic():
        adjudication = Adjudication.objects.create(candidate=candidate, by_id=by.pk, score=score, acceptable=acceptable,
                                                   note=note)
        _audit(round, by, "adjudicate", candidate_id=candidate.pk, score=score)
    return adjudication
