"""What a judge reads about a question, taken from the dataset's files once, when the round samples it.

Per suite: the questions a round may sample (with their type where the suite has types), and for a
sampled question its text and evidence from the dataset's answer-free ``inputs`` file (what a
system read: DuReader's documents without ``is_selected`` / ``most_related_para``, which point at
the answer; an MRQA context) and its references from the gold.  The round keeps them
(``RoundItem``), so its pages and exports do not depend on a gold file replaced later.

Suites: ``mrc2018`` (DuReader lines: ``question_type`` YES_NO / ENTITY / DESCRIPTION, documents)
and ``mrqa`` (a passage per context; no question types, so rounds stratify by dataset).  The other
suites have no judging rounds yet: :func:`suite_questions` refuses them, saying so.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from leaderboard.core.errors import ServiceError
from scoring.io import iter_json_lines
from scoring.metaeval import load_references
from scoring.mrqa import load_mrqa_gold

JUDGED_SUITES = ("mrc2018", "mrqa")
# The suites whose questions carry a type a round can stratify by.
T = TypeVar("T")


@dataclass(frozen=True)
class Reference:
    text: str
    yesno: str = ""  # DuReader's label of a YES_NO reference (Yes / No / Depends)


@dataclass(frozen=True)
class Evidence:
    """A document (DuReader) or the passage (MRQA): an optional title and its paragraphs."""

    title: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class QuestionText:
    qid: str
    question_type: str
    question: str = ""
    evidence: tuple[Evidence, ...] = ()
    references: tuple[Reference, ...] = ()
    entities: tuple[str, ...] = ()  # DuReader's gold entities of an ENTITY question (the paper's nuggets)


def suite_check(suite_key: str) -> None:
    if suite_key not in JUDGED_SUITES:
        raise ServiceError(f"judging rounds are available for the {' and '.join(JUDGED_SUITES)} suites; "
                           f"this challenge uses {suite_key}")


def suite_questions(*, suite_key: str, gold_path: str) -> dict[str, QuestionText]:
    """Every question of a gold file, by id (as a string), with its type and references; no text yet."""
    suite_check(suite_key)
    if suite_key == "mrc2018":
        return {
            qid: QuestionText(
                qid=qid, question_type=ref.question_type,
                references=tuple(Reference(text, str(ref.yesno_answers[i]) if i < len(ref.yesno_answers) else "")
                                 for i, text in enumerate(ref.answers)),
                entities=ref.entities,
            )
            for qid, ref in load_references(gold_path).items()
        }
    gold = load_mrqa_gold(gold_path)
    return {qid: QuestionText(qid=qid, question_type="", references=tuple(Reference(a) for a in q.answers))
            for qid, q in gold.questions.items()}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def questions_text(*, suite_key: str, inputs_path: str, qids: Collection[str]) -> dict[str, tuple[str, tuple[Evidence, ...]]]:
    """``{qid: (question, evidence)}`` for ``qids``, read from the answer-free inputs file in one pass."""
    suite_check(suite_key)
    wanted = set(qids)
    out: dict[str, tuple[str, tuple[Evidence, ...]]] = {}
    for _, obj in iter_json_lines(inputs_path):
        if not isinstance(obj, dict):
            continue
        if suite_key == "mrc2018":
            qid = str(obj.get("question_id"))
            if qid in wanted:
                documents = tuple(
                    Evidence(str(doc.get("title") or ""), _strings(doc.get("paragraphs")))
                    for doc in obj.get("documents") or [] if isinstance(doc, dict)
                )
                out[qid] = (str(obj.get("question") or ""), documents)
            continue
        if "header" in obj:
            continue
        passage = (Evidence("", (str(obj.get("context") or ""),)),)
        for qa in obj.get("qas") or []:
            if isinstance(qa, dict) and str(qa.get("qid")) in wanted:
                out[str(qa["qid"])] = (str(qa.get("question") or ""), passage)
        if len(out) == len(wanted):
            break
    return out


def allocation(sizes: Sequence[int], n: int) -> list[int]:
    """How many of ``n`` draws each stratum gets: proportional to its size, the remainder to the
    largest fractions (then the earlier stratum), never more than a stratum has."""
    total = sum(sizes)
    n = min(n, total)
    if total == 0:
        return [0 for _ in sizes]
    exact = [n * size / total for size in sizes]
    quota = [min(int(e), size) for e, size in zip(exact, sizes)]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - int(exact[i])), i))
    left = n - sum(quota)
    while left > 0:  # a pass may skip full strata; n <= total, so some stratum always has room
        for i in order:
            if left and quota[i] < sizes[i]:
                quota[i] += 1
                left -= 1
    return quota


def questions_sample(population: Sequence[T], *, n: int, seed: int, stratum: Callable[[T], str] | None) -> list[T]:
    """``n`` of ``population`` drawn without replacement by ``random.Random(seed)``, stratified by
    ``stratum`` (proportional allocation, :func:`allocation`), in a seeded shuffled order.

    The same population in the same order with the same seed gives the same sample on any
    machine (``random.Random`` with an integer seed is specified by Python, not by the platform).
    """
    rng = random.Random(seed)
    if stratum is None:
        drawn = rng.sample(list(population), min(n, len(population)))
    else:
        groups: dict[str, list[T]] = {}
        for member in population:
            groups.setdefault(stratum(member), []).append(member)
        names = sorted(groups)
        drawn = []
        for name, quota in zip(names, allocation([len(groups[g]) for g in names], n)):
            drawn += rng.sample(groups[name], quota)
        # The strata drawn one after the other would show judges every yes/no question first.
        rng.shuffle(drawn)
    return drawn
