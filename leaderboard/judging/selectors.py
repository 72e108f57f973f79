"""Reads of the judging rounds: what a judge is shown, progress, agreement, disagreements, the export.

Who may see an item is decided in one place, :meth:`JudgeStanding.may_see` (:func:`judge_may_see` for
one item; lists of items read the judge's standing once).  A judge's page is built by
:func:`judge_item_view` from the item and one candidate only: nothing of a system (team, label,
submission) and nothing of another judge's judgment is in what it returns, so no template can show it.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core import signing
from django.db.models import Count, Prefetch

from leaderboard.accounts.selectors import team_of_user
from leaderboard.challenges.models import Challenge
from leaderboard.challenges.selectors import CONSOLE_NOT_FOUND, dataset_label, user_is_organizer
from leaderboard.core.csv_safe import csv_rows_safe
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.judging.models import (
    DEFAULT_GUIDELINES,
    SCALE_VALUES,
    Adjudication,
    Assignment,
    Candidate,
    Judge,
    Judgment,
    Round,
    RoundItem,
    RoundState,
    Scale,
)
from scoring.agreement import AgreementRow, agreement_table

# A judge's pages answer anyone else as a missing page does, with the console's words.
JUDGE_NOT_FOUND = CONSOLE_NOT_FOUND
# Keys a judge presses for each value of a scale (the page lists them on the buttons).
SCALE_KEYS: dict[str, dict[int, str]] = {
    Scale.FIVE_POINT: {1: "1", 2: "2", 3: "3", 4: "4", 5: "5"},
    Scale.CORRECT_PARTLY_WRONG: {1: "w", 2: "p", 3: "c"},
}
ACCEPTABLE_KEY = "a"
_TOKEN_SALT = "judging.shown"
ExportFormat = Literal["jsonl", "csv"]
EXPORT_FIELDS = ("question_id", "answer", "scores", "score", "system", "question_type", "yesno_answer",
                 "dataset", "candidate", "acceptable")


# --------------------------------------------------------------------------- who sees what


def judge_may_see(*, judge: Judge, item: RoundItem) -> bool:
    """Whether ``judge`` may be shown ``item`` (its question, evidence, references and candidates).

    Organizers see every item.  Anyone else is refused an item of a sealed dataset (Split III, not
    revealed): nothing of it reaches a person who is not an organizer before publication.  And a
    judge who is on a team of the challenge (joined one after the invitation) is shown nothing:
    references of hidden test data would reach that team.
    """
    challenge = item.round.phase.challenge
    if judge.challenge_id != challenge.pk:
        return False
    return judge_standing(judge=judge).may_see(item)


@dataclass(frozen=True)
class JudgeStanding:
    """What :func:`judge_may_see` needs to know of a judge, read once for many items."""

    challenge_id: int
    organizer: bool
    on_team: bool

    def may_see(self, item: RoundItem) -> bool:
        if item.dataset.challenge_id != self.challenge_id:
            return False
        if self.organizer:
            return True
        return not self.on_team and not item.dataset.is_sealed


def judge_standing(*, judge: Judge) -> JudgeStanding:
    """The judge's role in its challenge now (the rule is :meth:`JudgeStanding.may_see`)."""
    return JudgeStanding(
        challenge_id=judge.challenge_id,
        organizer=user_is_organizer(user=judge.user, challenge=judge.challenge),
        on_team=team_of_user(user=judge.user, challenge=judge.challenge) is not None,
    )


def judge_of(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> Judge | None:
    if not user.is_authenticated:
        return None
    return Judge.objects.filter(challenge=challenge, user_id=user.pk).select_related("user", "challenge").first()


def judge_round_get(*, user: AbstractBaseUser | AnonymousUser, slug: str, round_id: int) -> tuple[Round, Judge]:
    """The round at this address and the user's judge role, if the user judges it; NotFound otherwise,
    the same whether the challenge, the round or the role is missing (a draft round is not there yet)."""
    challenge = Challenge.objects.filter(slug=slug).first()
    judge = judge_of(user=user, challenge=challenge) if challenge is not None else None
    found = (Round.objects.filter(pk=round_id, phase__challenge=challenge).exclude(state=RoundState.DRAFT)
             .select_related("phase__challenge").first()) if judge is not None else None
    if found is None or judge is None:
        raise NotFound(JUDGE_NOT_FOUND)
    return found, judge


def _judge_items(*, judge: Judge, round: Round) -> list[RoundItem]:
    """The judge's items in the round, in the round's order, those it may see only."""
    items = (RoundItem.objects.filter(round=round, assignments__judge=judge)
             .select_related("dataset", "round__phase__challenge").order_by("position"))
    standing = judge_standing(judge=judge)
    return [item for item in items if standing.may_see(item)]


def judge_next_item(*, judge: Judge, round: Round) -> Candidate | None:
    """The next candidate the judge has not judged: items in the round's order, an item's candidates
    in their shuffled order, so a judge finishes one question before the next.  None: all done."""
    judged = set(Judgment.objects.filter(judge=judge, candidate__item__round=round).values_list("candidate_id", flat=True))
    for item in _judge_items(judge=judge, round=round):
        for candidate in item.candidates.order_by("position"):
            if candidate.pk not in judged:
                candidate.item = item  # the one already read, with its round and dataset
                return candidate
    return None


@dataclass(frozen=True)
class JudgeProgress:
    done: int
    total: int

    @property
    def left(self) -> int:
        return self.total - self.done


def judge_progress(*, judge: Judge, round: Round) -> JudgeProgress:
    items = _judge_items(judge=judge, round=round)
    total = Candidate.objects.filter(item__in=items).count()
    done = Judgment.objects.filter(judge=judge, candidate__item__in=items).count()
    return JudgeProgress(done=done, total=total)


@dataclass(frozen=True)
class ScaleButton:
    value: int
    label: str
    key: str


@dataclass(frozen=True)
class ItemView:
    """Everything a judge's page shows about one candidate, and nothing else."""

    round_id: int
    dataset: str
    question: str
    question_type: str
    evidence: Sequence[dict[str, Any]]
    references: Sequence[dict[str, Any]]
    entities: Sequence[str]
    answer: str
    yesno: str
    buttons: Sequence[ScaleButton]
    asks_acceptable: bool
    acceptable_key: str
    guideline: str
    token: str
    candidate_number: int  # its place among the item's candidates, from 1
    candidates_in_item: int


def judge_item_view(*, judge: Judge, candidate: Candidate, now: dt.datetime) -> ItemView:
    """The judge's page for ``candidate``: NotFound unless it is on one of the judge's items that
    the judge may see.  ``now`` is when it is shown, signed into the token the form sends back."""
    item = candidate.item
    if not Assignment.objects.filter(item=item, judge=judge).exists() or not judge_may_see(judge=judge, item=item):
        raise NotFound(JUDGE_NOT_FOUND)
    round = item.round
    organizer = user_is_organizer(user=judge.user, challenge=round.phase.challenge)
    keys = SCALE_KEYS[round.scale]
    return ItemView(
        round_id=round.pk,
        dataset=dataset_label(item.dataset, reveal_sealed=organizer),
        question=item.question,
        question_type=item.question_type,
        evidence=list(item.evidence),
        references=list(item.references),
        entities=list(item.entities),
        answer=candidate.answer,
        yesno=candidate.yesno,
        buttons=[ScaleButton(value, label, keys[value]) for value, label in SCALE_VALUES[round.scale]],
        asks_acceptable=round.scale == Scale.CORRECT_PARTLY_WRONG,
        acceptable_key=ACCEPTABLE_KEY,
        guideline=round.guideline or DEFAULT_GUIDELINES[round.scale],
        token=judgment_token(candidate=candidate, shown_at=now),
        candidate_number=item.candidates.filter(position__lt=candidate.position).count() + 1,
        candidates_in_item=item.candidates.count(),
    )


def judgment_token(*, candidate: Candidate, shown_at: dt.datetime) -> str:
    """What the judging form sends back: which candidate was shown and when, signed, so a judgment is
    recorded for the candidate the page showed and its time is the server's."""
    return signing.dumps({"c": candidate.pk, "at": shown_at.isoformat()}, salt=_TOKEN_SALT)


def judgment_token_read(token: str) -> tuple[int, dt.datetime]:
    """``(candidate id, shown at)`` of a token from :func:`judgment_token`; NotFound if it was not ours."""
    try:
        data = signing.loads(token, salt=_TOKEN_SALT)
        return int(data["c"]), dt.datetime.fromisoformat(data["at"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise NotFound(JUDGE_NOT_FOUND) from None


# --------------------------------------------------------------------------- the organizers' reads


@dataclass(frozen=True)
class JudgeLoad:
    judge: Judge
    assigned: int  # candidates on the judge's items
    done: int


@dataclass(frozen=True)
class RoundProgress:
    items: int
    candidates: int
    judgments: int
    needed: int  # one judgment per candidate per assigned judge
    items_complete: int  # every assigned judge judged every candidate
    judges: Sequence[JudgeLoad]

    @property
    def left(self) -> int:
        return self.needed - self.judgments


def round_progress(*, round: Round) -> RoundProgress:
    items = list(RoundItem.objects.filter(round=round).annotate(n_candidates=Count("candidates", distinct=True))
                 .prefetch_related("assignments"))
    judged: dict[tuple[int, int], int] = {}
    for item_id, judge_id in Judgment.objects.filter(candidate__item__round=round).values_list(
            "candidate__item_id", "judge_id"):
        judged[item_id, judge_id] = judged.get((item_id, judge_id), 0) + 1
    loads: dict[int, list[int]] = {}
    needed = complete = 0
    for item in items:
        judges = [a.judge_id for a in item.assignments.all()]
        needed += item.n_candidates * len(judges)
        if judges and all(judged.get((item.pk, j), 0) >= item.n_candidates for j in judges):
            complete += 1
        for j in judges:
            load = loads.setdefault(j, [0, 0])
            load[0] += item.n_candidates
            load[1] += judged.get((item.pk, j), 0)
    by_id = Judge.objects.in_bulk(list(loads))
    return RoundProgress(
        items=len(items), candidates=sum(item.n_candidates for item in items),
        judgments=sum(judged.values()), needed=needed, items_complete=complete,
        judges=[JudgeLoad(by_id[j], a, d) for j, (a, d) in sorted(loads.items())],
    )


@dataclass(frozen=True)
class JudgedCandidate:
    """A candidate with its judgments in the order they were given (the first and the second judge
    of metaeval's Table 1) and the latest adjudication."""

    candidate: Candidate
    item: RoundItem
    scores: tuple[int, ...]
    acceptable: tuple[bool | None, ...]
    adjudication: Adjudication | None
    systems: tuple[str, ...]  # labels, organizer-side

    @property
    def group(self) -> str:
        """Where agreement is reported: the question type, or the dataset where the suite has none."""
        return self.item.question_type or self.item.dataset.slug

    @property
    def human(self) -> float | None:
        """The candidate's human score: the adjudicated one, else the judges' mean."""
        if self.adjudication is not None:
            return float(self.adjudication.score)
        return sum(self.scores) / len(self.scores) if self.scores else None


def round_judged(*, round: Round) -> list[JudgedCandidate]:
    """Every candidate of the round in the round's order (items, then candidates), judged or not."""
    candidates = (Candidate.objects.filter(item__round=round)
                  .select_related("item__dataset")
                  .prefetch_related(Prefetch("judgments", queryset=Judgment.objects.order_by("given_at", "id")),
                                    Prefetch("adjudications", queryset=Adjudication.objects.order_by("-at", "-id")),
                                    "systems")
                  .order_by("item__position", "position"))
    out = []
    for c in candidates:
        judgments = list(c.judgments.all())
        adjudications = list(c.adjudications.all())
        out.append(JudgedCandidate(
            candidate=c, item=c.item, scores=tuple(j.score for j in judgments),
            acceptable=tuple(j.acceptable for j in judgments),
            adjudication=adjudications[0] if adjudications else None,
            systems=tuple(sorted((s.label for s in c.systems.all()), key=_label_order)),
        ))
    return out


def _label_order(label: str) -> tuple[int, str]:
    digits = label[1:]
    return (int(digits) if digits.isdigit() else 0, label)


def _rows(judged: Sequence[JudgedCandidate], *, per_system: bool) -> list[tuple[JudgedCandidate, str | None]]:
    """Candidates with at least one judgment, once each or once per system that gave them."""
    rows: list[tuple[JudgedCandidate, str | None]] = []
    for j in judged:
        if not j.scores:
            continue
        if per_system:
            rows += [(j, label) for label in j.systems]
        else:
            rows.append((j, None))
    return rows


def round_agreement(*, round: Round, per_system: bool = False) -> list[AgreementRow]:
    """Agreement between judges per group (question type, else dataset) and overall:
    :func:`scoring.agreement.agreement_table` exactly as ``metaeval`` computes it from the export,
    over the candidates with two judgments or more (Pearson first vs second judgment, Krippendorff's
    ordinal alpha, Cohen's unweighted kappa where every candidate has two).

    ``per_system=False`` counts each distinct candidate once (what was judged);  ``True`` counts it
    once per system that gave it, as the per-system export (and the paper's 2,500 answers) does.
    """
    rows = [(j.group, j.scores) for j, _ in _rows(round_judged(round=round), per_system=per_system)
            if len(j.scores) >= 2]
    return agreement_table(rows, level="ordinal") if rows else []


@dataclass(frozen=True)
class Disagreement:
    judged: JudgedCandidate
    spread: int


def round_disagreements(*, round: Round) -> list[Disagreement]:
    """Candidates whose judges' scores differ by more than the round's margin: adjudication's work
    (those already adjudicated say so through ``judged.adjudication``)."""
    out = []
    for j in round_judged(round=round):
        if len(j.scores) >= 2:
            spread = max(j.scores) - min(j.scores)
            if spread > round.disagreement_margin:
                out.append(Disagreement(j, spread))
    return out


def _record(j: JudgedCandidate, system: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"question_id": j.item.qid, "answer": j.candidate.answer, "scores": list(j.scores)}
    if j.adjudication is not None:
        # metaeval's human score is "score" when given (else the mean of "scores"): the adjudicated
        # one, while "scores" keep the judges' own for agreement.
        record["score"] = j.adjudication.score
    if system is not None:
        record["system"] = system
    if j.item.question_type:
        record["question_type"] = j.item.question_type
    if j.candidate.yesno:
        record["yesno_answer"] = j.candidate.yesno
    record["dataset"] = j.item.dataset.slug
    record["candidate"] = j.candidate.pk
    if any(a is not None for a in j.acceptable):
        record["acceptable"] = list(j.acceptable)
    return record


def round_judgments_export(*, round: Round, fmt: ExportFormat = "jsonl", per_system: bool = True) -> str:
    """The round's judgments in the file format ``python -m scoring metaeval`` reads
    (``scoring.metaeval.load_judgments``): one line per judged candidate, or per system's answer
    (``per_system``, with ``system``: the overall score level and the system summary need it).

    Fields: ``question_id``, ``answer``, ``scores`` (each judgment, in the order given; CSV:
    ``4;5``), ``score`` (only when adjudicated), ``system``, ``question_type``, ``yesno_answer``;
    metaeval ignores the others (``dataset``, ``candidate``, ``acceptable``).  JSONL is exact; the
    CSV is for spreadsheets too, so a cell a spreadsheet would run as a formula gets a leading
    apostrophe (``core.csv_safe``), an answer's too.  Organizer-side: it names the systems.
    """
    records = [_record(j, system) for j, system in _rows(round_judged(round=round), per_system=per_system)]
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if fmt != "csv":
        raise ValueError(f"unknown export format {fmt!r}; expected jsonl or csv")
    cells = [{**r, "scores": ";".join(str(s) for s in r["scores"]),
              **({"acceptable": ";".join("" if a is None else ("1" if a else "0") for a in r["acceptable"])}
                 if "acceptable" in r else {})} for r in records]
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerows(csv_rows_safe(EXPORT_FIELDS, cells))
    return buffer.getvalue()


def round_candidate_get(*, round: Round, candidate_id: int) -> Candidate:
    candidate = Candidate.objects.filter(pk=candidate_id, item__round=round).select_related(
        "item__round__phase__challenge", "item__dataset").first()
    if candidate is None:
        raise NotFound(JUDGE_NOT_FOUND)
    return candidate


# --------------------------------------------------------------------------- the console's reads


def round_get_organized(*, challenge: Challenge, round_id: int) -> Round:
    """A round of the challenge for its console (the caller checked the organizer role); NotFound else."""
    found = Round.objects.filter(pk=round_id, phase__challenge=challenge).select_related("phase__challenge").first()
    if found is None:
        raise NotFound(CONSOLE_NOT_FOUND)
    return found


@dataclass(frozen=True)
class PhaseRounds:
    phase: Any  # challenges.Phase
    rounds: Sequence[Round]


def rounds_by_phase(*, challenge: Challenge) -> list[PhaseRounds]:
    """Every phase of the challenge with its rounds, newest first; each round annotated with its
    counts (``n_items``, ``n_systems``, ``n_judgments``) for the list."""
    rounds = (Round.objects.filter(phase__challenge=challenge)
              .annotate(n_items=Count("items", distinct=True), n_systems=Count("systems", distinct=True),
                        n_judgments=Count("items__candidates__judgments", distinct=True))
              .order_by("-created_at", "-id"))
    by_phase: dict[int, list[Round]] = {}
    for r in rounds:
        by_phase.setdefault(r.phase_id, []).append(r)
    return [PhaseRounds(p, by_phase.get(p.pk, [])) for p in challenge.phases.order_by("order", "opens_at")]


def challenge_judges(*, challenge: Challenge) -> list[Judge]:
    return list(Judge.objects.filter(challenge=challenge).select_related("user").order_by("user__username"))


def judge_user_find(*, name_or_email: str) -> AbstractBaseUser:
    """The existing account with this username, or this e-mail address (case-insensitive).  None
    found, or an address of several accounts (the username then says which): a ServiceError, not
    NotFound, so the organizer's form says why."""
    users = get_user_model().objects
    wanted = name_or_email.strip()
    if not wanted:
        raise ServiceError("Name a judge: the username or e-mail address of an existing account.", field="user")
    by_name = users.filter(username=wanted).first()
    if by_name is not None:
        return by_name
    by_email = list(users.filter(email__iexact=wanted)[:2])
    if len(by_email) == 1:
        return by_email[0]
    if by_email:
        raise ServiceError(f"Several accounts have the address {wanted}; give the username.", field="user")
    raise ServiceError(f"No account has the username or e-mail address {wanted}; the judge signs up first.",
                       field="user")
