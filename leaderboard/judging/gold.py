"""Answers people accept, added to the gold: from an extractive round, the candidates judged
acceptable become extra gold answers of their questions, as one gold change of each dataset.

The rule (:func:`candidate_accepted`): the latest adjudication decides when it says whether the
answer is acceptable; otherwise every judge of the candidate must have ticked "acceptable", and it
must have all ``judges_per_item`` judgments.  Unanimity, not a majority: an added answer counts for
every submission, so one judge's doubt is enough to leave it to an organizer's adjudication.

An answer is added to a question's ``answers`` only if no answer there already reads the same once
normalized as the metric normalizes (``scoring.text.normalize_answer``): it would change no score,
and so running the addition again adds nothing.  The new file is the current gold with only those
lines rewritten whose questions gain answers, each in its own JSON layout, the answers appended in
sorted order; every other byte stays (:func:`gold_with_answers`).  It then goes through the one
gold-change path, ``submissions.reload.dataset_gold_replace``: the old file retired while scores
refer to it, every submission scored on it rescored with its earlier scores in its history, the
board refreshed.  The plan (:func:`round_gold_additions_plan`) is ``reload.gold_change_plan``'s.

When: the plan once the round is closed, the addition once it is published, since a board that
moves shows the teams what the judges accepted (no judgment reaches a team before publication).
A sealed dataset's additions are held until it is revealed: its scores move the averages teams
see, and the move would tell a team which of its answers to questions it never saw were accepted.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from leaderboard.challenges.audit import audit_reason_clean, audit_record
from leaderboard.challenges.models import Dataset, DatasetFile
from leaderboard.challenges.selectors import CONSOLE_NOT_FOUND, user_is_organizer
from leaderboard.core.errors import Conflict, NotFound, ServiceError
from leaderboard.judging.models import Round, RoundState, Scale
from leaderboard.judging.selectors import JudgedCandidate, round_judged
from leaderboard.submissions.reload import GoldChange, dataset_gold_replace, gold_change_plan
from scoring.mrqa import load_mrqa_gold
from scoring.text import normalize_answer

# The extractive suites whose gold is a list of answer strings per question.
EXTRACTIVE_SUITES = frozenset({"mrqa"})
_GZIP_MAGIC = b"\x1f\x8b"
# JSON layouts a gold line may be written in: (ensure_ascii, separators).  A line in none of them
# cannot be rewritten without changing more of it than its answers, so it is refused.
_LAYOUTS: tuple[tuple[bool, tuple[str, str]], ...] = (
    (False, (", ", ": ")), (True, (", ", ": ")), (False, (",", ":")), (True, (",", ":")),
)


def candidate_accepted(judged: JudgedCandidate, *, judges_per_item: int) -> bool:
    """Whether people accept the candidate: the adjudication's word when it gives one, else all of
    at least ``judges_per_item`` judges ticked "acceptable"."""
    if judged.adjudication is not None and judged.adjudication.acceptable is not None:
        return judged.adjudication.acceptable
    return len(judged.acceptable) >= max(judges_per_item, 1) and all(a is True for a in judged.acceptable)


# --------------------------------------------------------------------------- the new gold file


def _layout(line: str, obj: Any) -> tuple[bool, tuple[str, str]] | None:
    for ensure_ascii, separators in _LAYOUTS:
        if json.dumps(obj, ensure_ascii=ensure_ascii, separators=separators) == line:
            return ensure_ascii, separators
    return None


def gold_with_answers(content: bytes, additions: Mapping[str, Sequence[str]], *, where: str = "gold") -> bytes:
    """An MRQA gold file (gzipped or not) with ``additions`` (``{qid: answers}``) appended to those
    questions' ``answers``, in the order given; nothing else changes.

    Only the lines holding those questions are rewritten, each in the JSON layout it was written in
    (checked: re-encoding the unchanged line must give it back byte for byte); a question that
    occurs twice gains them where scoring reads it, at its last occurrence.  Gzipped output is
    compressed with no time stamp, so the same input gives the same bytes.
    """
    zipped = content[:2] == _GZIP_MAGIC
    data = gzip.decompress(content) if zipped else content
    # Split on the byte: str.splitlines would also split inside a string holding U+2028.
    lines = data.split(b"\n")
    parsed: dict[int, Any] = {}
    last: dict[str, int] = {}
    for number, raw in enumerate(lines):
        if not raw.strip():
            continue
        obj = json.loads(raw.decode("utf-8"))
        if not isinstance(obj, dict) or "header" in obj:
            continue
        for qa in obj.get("qas") or []:
            if isinstance(qa, dict) and str(qa.get("qid")) in additions:
                parsed[number] = obj
                last[str(qa["qid"])] = number
    missing = sorted(set(additions) - set(last))
    if missing:
        raise ServiceError(f"{where}: no question {', '.join(missing[:3])} in the gold file")
    for number in sorted(set(last.values())):
        raw = lines[number]
        text = raw.decode("utf-8")
        ending = "\r" if text.endswith("\r") else ""
        obj = parsed[number]
        layout = _layout(text[: len(text) - len(ending)], obj)
        if layout is None:
            raise ServiceError(f"{where}: line {number + 1} is not in a JSON layout that can be rewritten "
                               "with only its answers changed; add the answers to the file by hand")
        for qa in obj["qas"]:
            qid = str(qa.get("qid")) if isinstance(qa, dict) else ""
            if last.get(qid) == number:
                qa["answers"] = [*qa["answers"], *additions[qid]]
        ensure_ascii, separators = layout
        lines[number] = (json.dumps(obj, ensure_ascii=ensure_ascii, separators=separators) + ending).encode("utf-8")
    out = b"\n".join(lines)
    return gzip.compress(out, compresslevel=9, mtime=0) if zipped else out


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class DatasetAdditions:
    """The answers a round adds to one dataset's gold of the phase's portion, and what that changes."""

    dataset: Dataset
    portion: str
    answers: dict[str, tuple[str, ...]]  # qid -> answers to append, sorted
    old_sha256: str
    content: bytes = field(repr=False)  # the new gold file ("" when nothing is added or it is held)
    filename: str
    held: str = ""  # why the answers are not added now (a sealed dataset)
    # Questions whose accepted answers are all there already, and ones the current gold lacks.
    present: int = 0
    gone: tuple[str, ...] = ()
    change: GoldChange | None = None  # the reload plan's view of the change (the plan only)

    @property
    def applicable(self) -> bool:
        return bool(self.answers) and not self.held


@dataclass
class GoldAdditionsPlan:
    """What adding a round's accepted answers to the gold would change; ``lines()`` says it in words."""

    round: Round
    accepted: int  # candidates people accept (the rule above)
    datasets: list[DatasetAdditions]

    @property
    def has_additions(self) -> bool:
        return any(d.applicable for d in self.datasets)

    def lines(self) -> list[str]:
        n_answers = sum(len(a) for d in self.datasets if d.applicable for a in d.answers.values())
        out = [f"round {self.round.pk} ({self.round.phase.name}): {self.accepted} candidate(s) judged acceptable; "
               + (f"{n_answers} answer(s) to add" if self.has_additions else "nothing to add")]
        for d in self.datasets:
            head = f"  {d.dataset.slug} ({d.portion})"
            if d.held:
                out.append(f"{head}: held: {d.held}")
            if not d.answers:
                out.append(f"{head}: nothing to add" + (f" ({d.present} question(s) have their accepted answers "
                                                          "already)" if d.present else ""))
            else:
                c = d.change
                counts = f"{len(d.answers)} question(s) gain answers"
                if c is not None and not d.held:
                    counts = (f"{c.old_sha256[:12]} -> {c.new_sha256[:12]}: {counts}; "
                              f"{c.rescored} submission(s) will be rescored")
                    for why, count in sorted(c.not_rescorable.items()):
                        counts += f"; {count} cannot be, and keep their scores on the old gold ({why})"
                out.append(f"{head}: {counts}")
                for qid, answers in sorted(d.answers.items()):
                    out.append(f"    {qid}: + " + ", ".join(json.dumps(a, ensure_ascii=False) for a in answers))
            if d.gone:
                out.append(f"    not in the current gold any more, skipped: {', '.join(d.gone)}")
            if d.change is not None and not d.held:
                unchanged = 0
                for s in d.change.score_changes:
                    if not s.changed:
                        unchanged += 1
                        continue
                    parts = [f"{m} {_num(s.before.get(m))} -> {_num(s.after.get(m))} ({_signed(s.delta(m))})"
                             for m in sorted(s.after) if s.before.get(m) != s.after.get(m)]
                    if s.primary_before != s.primary_after:
                        delta = (None if s.primary_before is None or s.primary_after is None
                                 else s.primary_after - s.primary_before)
                        parts.append(f"primary {_num(s.primary_before)} -> {_num(s.primary_after)} ({_signed(delta)})")
                    out.append(f"    submission {s.submission.pk} ({s.submission.team.name}): {'; '.join(parts)}")
                if unchanged:
                    out.append(f"    {unchanged} other submission(s) rescored with unchanged scores")
        return out


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def _round_check(round: Round, by: AbstractBaseUser, *, states: Sequence[str], doing: str) -> None:
    challenge = round.phase.challenge
    if not user_is_organizer(user=by, challenge=challenge):
        raise NotFound(CONSOLE_NOT_FOUND)
    if challenge.metric_suite not in EXTRACTIVE_SUITES or round.scale != Scale.CORRECT_PARTLY_WRONG:
        raise ServiceError("accepted answers come from an extractive round (the correct / partly / wrong scale "
                           f"with 'acceptable', on the {', '.join(sorted(EXTRACTIVE_SUITES))} suite)")
    if round.state not in states:
        wanted = " or ".join(RoundState(s).label for s in states)
        raise Conflict(f"the round is {round.get_state_display()}; {doing} once it is {wanted}")


def _additions(round: Round, *, with_change: bool) -> tuple[int, list[DatasetAdditions]]:
    accepted: dict[int, dict[str, list[str]]] = {}  # dataset id -> qid -> accepted answers
    datasets: dict[int, Dataset] = {}
    n_accepted = 0
    for judged in round_judged(round=round):
        if not judged.candidate.answer.strip() or not candidate_accepted(judged, judges_per_item=round.judges_per_item):
            continue
        n_accepted += 1
        datasets[judged.item.dataset_id] = judged.item.dataset
        accepted.setdefault(judged.item.dataset_id, {}).setdefault(judged.item.qid, []).append(judged.candidate.answer)
    portion = round.phase.portion
    files = {f.dataset_id: f for f in DatasetFile.objects.filter(dataset_id__in=list(accepted), portion=portion)
             .select_related("dataset__challenge")}
    out = []
    for dataset_id in sorted(accepted, key=lambda i: (datasets[i].order, datasets[i].slug)):
        dataset, gold = datasets[dataset_id], files.get(dataset_id)
        if gold is None:
            continue  # no gold of the portion any more: nothing to add to
        out.append(_dataset_additions(dataset, gold, accepted[dataset_id], with_change=with_change))
    return n_accepted, out


def _dataset_additions(dataset: Dataset, gold: DatasetFile, accepted: Mapping[str, Sequence[str]], *,
                       with_change: bool) -> DatasetAdditions:
    current = load_mrqa_gold(gold.gold.path).questions
    answers: dict[str, tuple[str, ...]] = {}
    present, gone = 0, []
    for qid, texts in sorted(accepted.items()):
        question = current.get(qid)
        if question is None:
            gone.append(qid)
            continue
        seen = {normalize_answer(a) for a in question.answers}
        new: dict[str, str] = {}
        for text in sorted(texts):
            key = normalize_answer(text)
            if key and key not in seen and key not in new:
                new[key] = text
        if new:
            answers[qid] = tuple(sorted(new.values()))
        else:
            present += 1
    filename = PurePosixPath(str(gold.gold.name)).name
    held = ("the dataset is sealed: its answers are added once it is revealed, as its scores then are"
            if dataset.is_sealed else "")
    content = b""
    change = None
    if answers and not held:
        with gold.gold.open("rb") as fh:
            content = gold_with_answers(fh.read(), answers, where=f"{dataset.slug} ({gold.portion})")
        if with_change:
            change = gold_change_plan(dataset=dataset, portion=gold.portion, content=content, filename=filename)
    return DatasetAdditions(dataset=dataset, portion=gold.portion, answers=answers, old_sha256=gold.sha256,
                            content=content, filename=filename, held=held, present=present, gone=tuple(gone),
                            change=change)


def gold_additions_problem(round: Round) -> str:
    """Why the round's accepted answers cannot be added to the gold now ("" when they can): the
    console action's rule, the same as :func:`round_gold_additions_apply`'s (its role check aside)."""
    challenge = round.phase.challenge
    if challenge.metric_suite not in EXTRACTIVE_SUITES or round.scale != Scale.CORRECT_PARTLY_WRONG:
        return "accepted answers come from an extractive round (the correct / partly / wrong scale)"
    if round.state != RoundState.PUBLISHED:
        return f"the round is {round.get_state_display()}: its accepted answers are added once it is published"
    return ""


def gold_additions_preview(*, round: Round) -> GoldAdditionsPlan:
    """The plan of :func:`round_gold_additions_plan` without its role check, for a page that made it
    already (the console's action, behind ``organizers_only``)."""
    accepted, datasets = _additions(round, with_change=True)
    return GoldAdditionsPlan(round=round, accepted=accepted, datasets=datasets)


def round_gold_additions_plan(*, round: Round, by: AbstractBaseUser) -> GoldAdditionsPlan:
    """What :func:`round_gold_additions_apply` would do, writing nothing: per dataset of the round,
    the answers each question gains (or why they are held), and the reload plan's view of the gold
    change with each rescored submission's scores before and after.  For organizers of the round's
    challenge (NotFound for anyone else) once the round is closed."""
    _round_check(round, by, states=(RoundState.CLOSED, RoundState.PUBLISHED), doing="its accepted answers are planned")
    return gold_additions_preview(round=round)


def round_gold_additions_apply(*, round: Round, by: AbstractBaseUser, reason: str) -> GoldAdditionsPlan:
    """Add the round's accepted answers to the gold: one ``dataset_gold_replace`` per dataset that
    gains answers (sealed ones held), each audited with ``reason``, in one transaction; the
    rescores run after the commit.  Returns what was added (the plan, without the score preview).
    A published round only; running it again adds nothing."""
    _round_check(round, by, states=(RoundState.PUBLISHED,), doing="its accepted answers are added to the gold")
    reason = audit_reason_clean(reason)
    with transaction.atomic():
        # The gold rows locked: a concurrent change of the same files waits, and this reads the file it replaces.
        list(DatasetFile.objects.select_for_update().filter(dataset__challenge_id=round.phase.challenge_id,
                                                            portion=round.phase.portion))
        accepted, datasets = _additions(round, with_change=False)
        for d in datasets:
            if not d.applicable:
                continue
            record = dataset_gold_replace(dataset=d.dataset, portion=d.portion, content=d.content, filename=d.filename)
            audit_record(
                challenge=round.phase.challenge, actor=by, action="judging.gold_answers_add",
                target=f"gold of {d.dataset.slug} ({d.portion})", reason=reason,
                details={"round_id": round.pk, "dataset": d.dataset.slug, "portion": d.portion,
                         "old_sha256": d.old_sha256, "new_sha256": record.sha256,
                         "answers": {qid: list(a) for qid, a in d.answers.items()}},
            )
    return GoldAdditionsPlan(round=round, accepted=accepted, datasets=datasets)
