"""Breakdowns: a dataset's questions cut into slices the gold data tells apart, each with its score.

A **family** is one way of cutting (question type, source, difficulty level, answerable or
not, answer length, turn position); its **slices** partition the questions that count in the
dataset's score, so the slices of a family always average back to it (weighted by size).  Which
families a format has, and which per-question field is scored, follow what each scorer's
``--per-example`` records hold:

=========  ======================  =============================================================
format     score (x100)            families
=========  ======================  =============================================================
mrqa       ``f1``                  answer length (needs the gold answers)
squad2     ``f1``                  answerable, difficulty level (``level``), answer length (gold)
quac       ``model_f1``            turn position (``<dialog>_q#N``, N from 0); questions that
                                   QuAC's human-agreement filter leaves out do not count
coqa       ``f1``                  source (CoQA's domain), turn position (``turn_id``)
mrc2018    ``rouge_l``             question type (YES_NO, ENTITY, DESCRIPTION), source
=========  ======================  =============================================================

Answer length is the number of words of the shortest gold answer (white-space words; with
``cjk`` each Chinese character is a word), bucketed 1, 2-3, 4-7, 8+; an unanswerable question
is its own slice ("no answer").  A family with a single slice says nothing the dataset's score
does not, and is left out.

Each slice has the mean of its questions' scores and a percentile bootstrap interval: the
questions of each slice are resampled within the slice (the slice keeps its size), with
:func:`scoring.significance.paired_bootstrap` (one matrix product per chunk of resamples, so
the cost is bounded and there is no Python loop over resamples).  Seeded: the same records give
the same intervals.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scoring.significance import DEFAULT_SAMPLES, paired_bootstrap

QUESTION_TYPE = "question type"
SOURCE = "source"
LEVEL = "difficulty level"
ANSWERABLE = "answerable"
ANSWER_LENGTH = "answer length"
TURN = "turn position"

NO_ANSWER = "no answer"
# Why a dataset without per-question records has no breakdown (imported results, a run without them).
NO_RECORDS = "no per-question scores"
NO_LEVEL = "no level"
LENGTH_BUCKETS = ("1", "2-3", "4-7", "8+")
TURN_BUCKETS = ("1", "2", "3", "4", "5+")
# DuReader's question types in the paper's order; any other label follows, sorted.
_QUESTION_TYPES = ("YES_NO", "ENTITY", "DESCRIPTION")
# The formats whose answer-length family needs the gold answers (their records do not hold them).
NEEDS_GOLD_ANSWERS = frozenset({"mrqa", "squad2"})

_QUAC_TURN = re.compile(r"_q#(\d+)$")
_CJK_OR_WORD = re.compile(r"[\u4e00-\u9fff]|[^\s\u4e00-\u9fff]+")


@dataclass(frozen=True)
class Slice:
    label: str
    questions: int
    score: float  # the mean of the questions' scores (0-100)
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Family:
    name: str
    slices: tuple[Slice, ...]
    # Each counted question's slice, in the records' order: which questions two families share.
    labels: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @property
    def smallest(self) -> int:
        """The size of its smallest slice (what a minimum slice size is compared with)."""
        return min(s.questions for s in self.slices)


@dataclass(frozen=True)
class Breakdown:
    """A dataset's families; ``unavailable`` says why there are none when the records cannot give any."""

    metric: str  # the score's name: "F1", "ROUGE-L"
    questions: int  # the questions that count in the score
    families: tuple[Family, ...]
    score: float = math.nan  # the mean over every question that counts (the dataset's score)
    unavailable: str = ""
    # Questions of the dataset the score leaves out (QuAC's human-agreement filter), and why.
    left_out: int = 0
    left_out_why: str = ""


@dataclass(frozen=True)
class _Format:
    field: str
    label: str
    counts: Callable[[Mapping[str, Any]], bool]
    families: Callable[[Mapping[str, Any], Mapping[str, str] | None], dict[str, str | None]]
    # Why a question ``counts`` refuses is not in the score, in a reader's words.
    left_out_why: str = ""


def words(text: str, *, cjk: bool = False) -> int:
    """The number of words of an answer: white-space separated, or with ``cjk`` each Chinese character too."""
    if cjk:
        return len(_CJK_OR_WORD.findall(text))
    return len(text.split())


def length_bucket(answers: Sequence[str], *, cjk: bool = False) -> str:
    """The answer-length slice of a question from its gold answers (the shortest one counts)."""
    if not answers:
        return NO_ANSWER
    shortest = min(words(a, cjk=cjk) for a in answers)
    if shortest <= 1:
        return "1"
    if shortest <= 3:
        return "2-3"
    if shortest <= 7:
        return "4-7"
    return "8+"


def turn_bucket(position: int) -> str:
    """The turn-position slice of a dialog's ``position``-th question (1 for its first)."""
    return str(position) if position < len(TURN_BUCKETS) else TURN_BUCKETS[-1]


def _qid(record: Mapping[str, Any]) -> str:
    return str(record.get("qid", record.get("id")))


def _mrqa_families(record: Mapping[str, Any], lengths: Mapping[str, str] | None) -> dict[str, str | None]:
    return {ANSWER_LENGTH: lengths.get(_qid(record)) if lengths is not None else None}


def _squad2_families(record: Mapping[str, Any], lengths: Mapping[str, str] | None) -> dict[str, str | None]:
    level = record.get("level")
    return {
        ANSWERABLE: None if "has_ans" not in record else ("answerable" if record["has_ans"] else "unanswerable"),
        # Some datasets label only some questions (their unanswerable ones): the others are a slice.
        LEVEL: None if "level" not in record else NO_LEVEL if level is None else str(level),
        ANSWER_LENGTH: lengths.get(_qid(record)) if lengths is not None else None,
    }


def _quac_families(record: Mapping[str, Any], lengths: Mapping[str, str] | None) -> dict[str, str | None]:
    match = _QUAC_TURN.search(str(record.get("id", "")))
    return {TURN: turn_bucket(int(match.group(1)) + 1) if match else None}


def _coqa_families(record: Mapping[str, Any], lengths: Mapping[str, str] | None) -> dict[str, str | None]:
    turn = record.get("turn_id")
    try:
        position = int(turn) if turn is not None and not isinstance(turn, bool) else None
    except (TypeError, ValueError):
        position = None
    source = record.get("source")
    return {SOURCE: None if source is None else str(source),
            TURN: turn_bucket(position) if position is not None and position >= 1 else None}


def _mrc2018_families(record: Mapping[str, Any], lengths: Mapping[str, str] | None) -> dict[str, str | None]:
    qtype, source = record.get("question_type"), record.get("source")
    return {QUESTION_TYPE: None if qtype is None else str(qtype), SOURCE: None if source is None else str(source)}


def _always(record: Mapping[str, Any]) -> bool:
    return True


FORMATS: dict[str, _Format] = {
    "mrqa": _Format("f1", "F1", _always, _mrqa_families),
    "squad2": _Format("f1", "F1", _always, _squad2_families),
    # QuAC's F1 leaves out the questions whose human F1 is below min_f1 (filtered): so do its slices.
    "quac": _Format("model_f1", "F1", lambda r: not r.get("filtered"), _quac_families,
                    "QuAC's human-agreement filter, as in its official scorer: its annotators' own answers "
                    "to them agree below the threshold"),
    "coqa": _Format("f1", "F1", _always, _coqa_families),
    "mrc2018": _Format("rouge_l", "ROUGE-L", _always, _mrc2018_families),
}

_ORDERS: dict[str, tuple[str, ...]] = {
    ANSWER_LENGTH: (*LENGTH_BUCKETS, NO_ANSWER),
    TURN: TURN_BUCKETS,
    QUESTION_TYPE: _QUESTION_TYPES,
    ANSWERABLE: ("answerable", "unanswerable"),
}
_LAST = {LEVEL: NO_LEVEL}
_FAMILY_ORDER = (QUESTION_TYPE, SOURCE, LEVEL, ANSWERABLE, ANSWER_LENGTH, TURN)


def _slice_order(family: str, labels: set[str]) -> list[str]:
    known = _ORDERS.get(family, ())
    last = [label for label in (_LAST.get(family),) if label in labels]
    return [label for label in known if label in labels] + sorted(labels - set(known) - set(last)) + last


def question_scores(fmt: str, records: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[Mapping[str, Any]]]:
    """The per-question scores (0-100) of the records that count, and those records.

    Raises ValueError when a record lacks a finite score in the format's field.
    """
    spec = FORMATS[fmt]
    values: list[float] = []
    kept: list[Mapping[str, Any]] = []
    for record in records:
        if not spec.counts(record):
            continue
        value = record.get(spec.field)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"question {_qid(record)!r} has no per-question {spec.field!r}")
        values.append(100.0 * float(value))
        kept.append(record)
    return values, kept


def slice_intervals(values: Sequence[float], labels: Sequence[str], *, samples: int = DEFAULT_SAMPLES,
                    seed: int = 0, level: float = 0.95) -> list[Slice]:
    """Each slice's size, mean and percentile bootstrap interval (questions resampled within their
    slice), in the order in which the slices first appear in ``labels``."""
    if len(values) != len(labels) or not values:
        raise ValueError("need one label per value, and at least one value")
    result = paired_bootstrap(np.asarray([values], dtype=np.float64), samples=samples, seed=seed, level=level,
                              strata=list(labels))
    summary = result.systems[0]
    sizes = result.strata_sizes
    return [Slice(label=label, questions=sizes[label], score=summary.strata[label],
                  ci_low=summary.strata_ci[label][0], ci_high=summary.strata_ci[label][1])
            for label in summary.strata]


def dataset_breakdown(fmt: str, records: Sequence[Mapping[str, Any]], *,
                      answer_lengths: Mapping[str, str] | None = None, samples: int = DEFAULT_SAMPLES,
                      seed: int = 0, level: float = 0.95) -> Breakdown:
    """The families of one dataset's per-question ``records`` (a scorer's ``--per-example`` output).

    ``answer_lengths``: qid -> :func:`length_bucket` of its gold answers, for the formats whose
    records do not hold them (:data:`NEEDS_GOLD_ANSWERS`); without it there is no answer-length
    family.  A family is left out when some counted question has no label in it (the records
    lack the field, or the gold lacks the question), since its slices would not partition them.
    """
    spec = FORMATS.get(fmt)
    if not records:
        return Breakdown(metric=spec.label if spec else "", questions=0, families=(), unavailable=NO_RECORDS)
    if spec is None:
        return Breakdown(metric="", questions=0, families=(), unavailable=f"no slices are known for {fmt}")
    try:
        values, kept = question_scores(fmt, records)
    except ValueError as exc:
        return Breakdown(metric=spec.label, questions=0, families=(),
                         unavailable=f"per-question {spec.label} unavailable ({exc})")
    if not values:
        return Breakdown(metric=spec.label, questions=0, families=(), unavailable="no question counts")
    labels_of: dict[str, list[str | None]] = {}
    for record in kept:
        for family, label in spec.families(record, answer_lengths).items():
            labels_of.setdefault(family, []).append(label)
    families = []
    for name in _FAMILY_ORDER:
        labels = labels_of.get(name)
        if labels is None or any(label is None for label in labels):
            continue
        present = {str(label) for label in labels}
        if len(present) < 2:
            continue
        # The slices first appear in their display order, so the bootstrap draws them in that order.
        rank = {label: i for i, label in enumerate(_slice_order(name, present))}
        order = sorted(range(len(values)), key=lambda i: rank[str(labels[i])])
        slices = slice_intervals([values[i] for i in order], [str(labels[i]) for i in order],
                                 samples=samples, seed=seed, level=level)
        families.append(Family(name=name, slices=tuple(slices), labels=tuple(str(label) for label in labels)))
    return Breakdown(metric=spec.label, questions=len(values), families=tuple(families),
                     score=math.fsum(values) / len(values), left_out=len(records) - len(kept),
                     left_out_why=spec.left_out_why if len(records) > len(kept) else "")


def smallest_joint_cell(families: Sequence[Family]) -> int:
    """The fewest questions that fall in one slice of each of ``families`` together (the cells of
    their joint partition; cells with no question do not count).

    Means over slices of several families are sums over these cells; what they and the dataset's
    score let one compute is a combination of cell sums, never less than one cell.  So a set of
    families shows nothing about fewer questions than its smallest cell: one family's slices can
    each be large while, with another's, they isolate a handful (a "no level" slice that is every
    answerable question plus one unanswerable one, beside the answerable slice).
    """
    if not families:
        return 0
    counts: dict[tuple[str, ...], int] = {}
    for cell in zip(*(family.labels for family in families), strict=True):
        counts[cell] = counts.get(cell, 0) + 1
    return min(counts.values(), default=0)  # no labels known: nothing may be shown

