"""Character-level BLEU and ROUGE-L shared by DuReader (spec 4) and the MRC2018 metric (spec 5).

Both official scripts end up comparing strings of characters with their white
space removed: ``dureader_eval.py`` joins the non-space characters with single
spaces and hands them to coco-caption, whose tokens are then exactly those
characters (spec 4.2); the MRC2018 scripts slice the stripped strings directly
(spec 5.1, 5.3).  So one representation serves both: a ``str`` without white
space, whose n-grams are its substrings of length n.

Corpus BLEU is computed from per-question sufficient statistics
(:class:`BleuStats`: clipped matches and candidate n-gram counts per order,
candidate length, closest reference length), so a subset of questions (a
source, a question type, a bootstrap resample) is scored by summing, never
by re-scoring.  The two flavours differ only in how the sums become a number:
:func:`coco_bleu` (1e-15/1e-9 pseudo-smoothing, spec 4.4) and :func:`mrc_bleu`
(no smoothing, divisions by zero are errors, spec 5.4).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import add
from typing import Any

from rapidfuzz.distance import LCSseq

from scoring.errors import UndefinedMetricError

MAX_ORDER = 4

# coco-caption bleu_scorer.py: ``small`` and ``tiny`` (spec 4.4).
COCO_SMALL = 1e-9
COCO_TINY = 1e-15

# Joins several references into one haystack for substring tests.  The texts
# never contain white space (they are stripped), so no n-gram can straddle it.
_SEPARATOR = "\n"

_lcs_similarity = LCSseq.similarity


def strip_whitespace(text: str) -> str:
    """Drop every character ``c`` with ``c.strip() == ''``: the official ``normalize`` (spec 4.2, 5.1).

    ``str.split()`` splits on exactly the characters ``str.strip()`` removes,
    so this is the same set (space, tab, NBSP, U+3000, ...).
    """
    return "".join(text.split())


# --------------------------------------------------------------------------- n-gram matches


def _overlapping_count(text: str, gram: str) -> int:
    # str.count skips overlapping occurrences ("aa" occurs twice in "aaa" as an n-gram).
    count = 0
    at = text.find(gram)
    while at >= 0:
        count += 1
        at = text.find(gram, at + 1)
    return count


def clipped_matches(cand: str, refs: Sequence[str], max_n: int = MAX_ORDER) -> list[int]:
    """For n = 1..max_n, Σ over the candidate's n-grams of min(count in cand, max count in one ref).

    This is coco-caption's ``cook_test`` ``correct`` and the MRC2018
    ``get_match_size`` (spec 4.4, 5.3), for stripped strings (no white space).

    Building n-gram counters for every reference is what makes the official
    scripts slow; here a reference is only searched for the candidate's
    n-grams (a C substring test), and only for orders whose shorter n-grams
    matched at all.  Counters are built only when the candidate repeats an
    n-gram, which is the only case where the clipping needs counts.
    """
    correct = [0] * max_n
    length = len(cand)
    if not refs or length == 0:
        return correct
    haystack = refs[0] if len(refs) == 1 else _SEPARATOR.join(refs)
    contains = haystack.__contains__
    grams: Sequence[str] = cand
    distinct = False
    for n in range(1, max_n + 1):
        if length < n:
            break
        if n > 1:
            grams = list(map(add, grams, cand[n - 1:]))
        if not distinct:
            # All n-grams distinct implies all longer ones distinct too.
            distinct = len(set(grams)) == len(grams)
        if distinct:
            matched = sum(map(contains, grams))
        else:
            matched = 0
            for gram, count in Counter(grams).items():
                if gram in haystack:
                    if count == 1:
                        matched += 1
                    else:
                        if n == 1:
                            best = max(ref.count(gram) for ref in refs)
                        else:
                            best = max(_overlapping_count(ref, gram) for ref in refs)
                        matched += count if count < best else best
        correct[n - 1] = matched
        if matched == 0:
            break  # no n-gram matched, so no longer one can
    return correct


def closest_ref_len(cand_len: int, refs: Sequence[str]) -> int:
    """Length of the reference closest in length to the candidate; ties go to the shorter (spec 4.4, 5.4)."""
    return min((abs(len(ref) - cand_len), len(ref)) for ref in refs)[1]


# --------------------------------------------------------------------------- BLEU statistics


@dataclass(frozen=True, slots=True)
class BleuStats:
    """One question's BLEU sufficient statistics.

    ``correct[k]`` / ``guess[k]``: clipped matches / candidate n-grams of order
    k+1 (floats when MRC2018 bonuses were added to both, spec 5.4);
    ``test_len``: candidate length; ``ref_len``: closest reference length.
    """

    correct: tuple[float, ...]
    guess: tuple[float, ...]
    test_len: int
    ref_len: int

    def as_record(self) -> dict[str, Any]:
        return {
            "bleu_correct": list(self.correct),
            "bleu_guess": list(self.guess),
            "test_len": self.test_len,
            "ref_len": self.ref_len,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> BleuStats:
        """Read the fields written by :meth:`as_record` (a per-example record)."""
        return cls(
            tuple(record["bleu_correct"]),
            tuple(record["bleu_guess"]),
            int(record["test_len"]),
            int(record["ref_len"]),
        )


def char_bleu_stats(cand: str, refs: Sequence[str], max_n: int = MAX_ORDER) -> BleuStats:
    """Per-question statistics of a stripped candidate against stripped references (refs non-empty)."""
    length = len(cand)
    return BleuStats(
        tuple(clipped_matches(cand, refs, max_n)),
        tuple(length - n + 1 if length >= n else 0 for n in range(1, max_n + 1)),
        length,
        closest_ref_len(length, refs),
    )


@dataclass(slots=True)
class BleuTotals:
    """Sums of :class:`BleuStats` over a set of questions."""

    correct: list[float]
    guess: list[float]
    test_len: int
    ref_len: int
    count: int


def sum_bleu_stats(stats: Iterable[BleuStats], max_n: int = MAX_ORDER) -> BleuTotals:
    correct = [0.0] * max_n
    guess = [0.0] * max_n
    test_len = ref_len = count = 0
    for item in stats:
        count += 1
        test_len += item.test_len
        ref_len += item.ref_len
        for k in range(max_n):
            correct[k] += item.correct[k]
            guess[k] += item.guess[k]
    return BleuTotals(correct, guess, test_len, ref_len, count)


def coco_bleu(totals: BleuTotals, n: int = MAX_ORDER) -> float:
    """coco-caption ``BleuScorer.compute_score`` BLEU-n, option ``closest`` (spec 4.4).

    Defined for any totals, the empty set included: the pseudo-smoothing keeps
    every factor positive and the brevity penalty then drives it to 0.0.
    """
    bleu = 1.0
    for k in range(n):
        bleu *= float(totals.correct[k] + COCO_TINY) / (totals.guess[k] + COCO_SMALL)
    bleu = float(bleu ** (1.0 / n))  # never negative, so never complex
    ratio = (totals.test_len + COCO_TINY) / (totals.ref_len + COCO_SMALL)
    if ratio < 1:
        bleu *= math.exp(1 - 1 / ratio)
    return bleu


def mrc_bleu(totals: BleuTotals, n: int = MAX_ORDER, *, lic2019_guards: bool = False) -> float:
    """MRC2018 ``BLEU.score()[n-1]`` (spec 5.4): no smoothing, brevity ``exp(min(1 - r/c, 0))``.

    The official script divides by zero when some order has no candidate
    n-gram at all (every candidate shorter than n characters) or when every
    candidate is empty; we raise :class:`UndefinedMetricError` instead.  With
    ``lic2019_guards`` the LIC2019 script's rule applies (spec 5.7b): such an
    order has precision 0 and an all-empty candidate set has brevity factor 0.
    """
    if totals.count == 0:
        if lic2019_guards:
            return 0.0
        raise UndefinedMetricError("BLEU-4 is undefined: no question was scored")
    bleu = 1.0
    for k in range(n):
        if totals.guess[k] == 0:
            if lic2019_guards:
                bleu = 0.0
                continue
            if totals.test_len == 0:
                raise UndefinedMetricError(
                    "BLEU-4 is undefined: every candidate answer is empty "
                    "(the official script divides by zero)"
                )
            raise UndefinedMetricError(
                f"BLEU-4 is undefined: no candidate answer has {k + 1} or more characters, so there is "
                f"no {k + 1}-gram to compute a precision on (the official script divides by zero)"
            )
        bleu *= totals.correct[k] / float(totals.guess[k])
    bleu = float(bleu ** (1.0 / n))  # never negative, so never complex
    if totals.test_len == 0:
        return 0.0  # only reachable with lic2019_guards: BP = 0
    return bleu * math.exp(min(1 - totals.ref_len / float(totals.test_len), 0))


# --------------------------------------------------------------------------- ROUGE-L


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of two strings' characters (rapidfuzz, exact)."""
    return int(_lcs_similarity(a, b))


def coco_rouge_l(cand: str, refs: Sequence[str], beta: float = 1.2) -> float:
    """coco-caption ``Rouge.calc_score`` on space-joined characters (spec 4.5), refs non-empty.

    The official tokens come from ``s.split(" ")``, so an empty string is the
    single token ``''``: its length is 1, and it matches an empty reference.
    """
    cand_len = len(cand) or 1
    prec_max = rec_max = 0.0
    for ref in refs:
        if cand and ref:
            lcs = _lcs_similarity(cand, ref)
        else:
            lcs = 0 if cand or ref else 1
        prec = lcs / float(cand_len)
        rec = lcs / float(len(ref) or 1)
        if prec > prec_max:
            prec_max = prec
        if rec > rec_max:
            rec_max = rec
    if prec_max != 0 and rec_max != 0:
        return ((1 + beta**2) * prec_max * rec_max) / float(rec_max + beta**2 * prec_max)
    return 0.0


def mean_or_nan(values: Sequence[float]) -> float:
    """``np.mean`` of a list, NaN for an empty one (what the official DuReader script prints, spec 4.5)."""
    if not values:
        return math.nan
    return math.fsum(values) / len(values)
