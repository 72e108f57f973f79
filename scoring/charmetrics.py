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

Counting clipped n-gram matches is nearly all of the work.
:func:`clipped_matches` is the per-question definition (and the path for
small inputs); :func:`batch_clipped_matches` gives the same integers for a
whole corpus with a few sorts of packed integer keys in numpy, which is what
keeps a 20,000-question evaluation within a few seconds.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import add
from typing import Any, NamedTuple, TypeGuard

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


_is_str = str.__instancecheck__


def is_string_list(value: object) -> TypeGuard[list[str]]:
    """``value`` is a list whose items are all strings (checked at C speed: loaders call this per line)."""
    return isinstance(value, list) and all(map(_is_str, value))


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


MatchItem = tuple[str, Sequence[str]]

# Below this many pairs the numpy set-up is not worth it.
_BATCH_MIN_ITEMS = 64
# At most this many pairs per sorted chunk (fewer when the keys need more bits).
_CHUNK_ITEMS = 2048
# Fewer pairs per chunk than this and the per-chunk overhead dominates: use plain Python.
_MIN_CHUNK_ITEMS = 32


def batch_clipped_matches(items: Sequence[MatchItem], max_n: int = MAX_ORDER) -> list[list[int]]:
    """:func:`clipped_matches` for many ``(cand, refs)`` pairs at once: the same integers, faster.

    Per-n-gram Python work is what makes character BLEU slow (a corpus has
    millions of n-grams), so large batches are counted with numpy
    (:func:`_numpy_matches`); small ones, or corpora with too many distinct
    characters for 64-bit keys, use the plain function.
    """
    if len(items) >= _BATCH_MIN_ITEMS:
        result = _numpy_matches(items, max_n)
        if result is not None:
            return result
    return [clipped_matches(cand, refs, max_n) for cand, refs in items]


def _numpy_matches(items: Sequence[MatchItem], max_n: int) -> list[list[int]] | None:
    """Vectorised clipped matches, or None when 64-bit keys cannot hold them.

    Every character position of every text (the candidate is slot 0, the
    references slots 1..k) gets one integer key: its pair index (within a
    chunk of pairs), the ids of the ``max_n`` characters from that position
    (0 past the end of the text), and its slot.  After one sort per chunk the
    positions that start with the same n-gram of the same pair are
    contiguous for every n, because the n-gram is a prefix of the key; where
    a group changes is read from the highest differing bit of neighbouring
    keys.  A group with both candidate and reference positions contributes
    1, or, when the candidate repeats the n-gram, min(candidate count, largest
    count in one reference), which a second small sort provides.
    """
    import numpy as np  # noqa: PLC0415 - numpy costs a command that never counts a large batch its import time

    texts: list[str] = []
    pair_of: list[int] = []
    slot_of: list[int] = []
    max_slot = 0
    for index, (cand, refs) in enumerate(items):
        if not cand or not refs:
            continue  # no candidate n-gram, or nothing to match: all zeros
        texts.append(cand)
        pair_of.append(index)
        slot_of.append(0)
        for slot, ref in enumerate(refs, start=1):
            if ref:
                texts.append(ref)
                pair_of.append(index)
                slot_of.append(slot)
                if slot > max_slot:
                    max_slot = slot
    out = np.zeros((len(items), max_n), dtype=np.int64)
    if not texts:
        return out.tolist()

    pad = max_n - 1
    separator = _SEPARATOR * pad  # never inside a text (texts have no white space): ends every text
    codes = np.frombuffer((separator.join(texts) + separator).encode("utf-32-le", "surrogatepass"),
                          dtype=np.uint32)
    # Dense character ids 1..V through a table over all code points; 0 is "past the end".
    table = np.zeros(0x110000, dtype=np.uint64)
    table[codes] = 1
    table[ord(_SEPARATOR)] = 0
    np.cumsum(table, out=table)
    char_bits = int(table[-1]).bit_length()
    table[ord(_SEPARATOR)] = 0
    ids = table[codes]
    del table

    slot_bits = max(1, max_slot.bit_length())
    gram_bits = max_n * char_bits + slot_bits
    pair_bits = min(64 - gram_bits, _CHUNK_ITEMS.bit_length() - 1)
    if pair_bits < 0 or (1 << pair_bits) < min(_MIN_CHUNK_ITEMS, len(items)):
        return None
    chunk_items = 1 << pair_bits

    positions = len(codes) - pad
    gram = ids[:positions].copy()
    for j in range(1, max_n):
        gram <<= np.uint64(char_bits)
        gram |= ids[j:positions + j]
    # Keep the positions inside texts; they come text by text, so per-text values repeat over them.
    gram = gram[ids[:positions] != 0]
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    pair_pos = np.repeat(np.asarray(pair_of, dtype=np.int64), lengths)
    gram <<= np.uint64(slot_bits)
    gram |= np.repeat(np.asarray(slot_of, dtype=np.uint64), lengths)
    low = gram
    del ids

    cuts = np.searchsorted(pair_pos, np.arange(0, len(items) + chunk_items, chunk_items))
    for first_pair, lo, hi in zip(range(0, len(items), chunk_items), cuts[:-1], cuts[1:], strict=False):
        if hi > lo:
            key = ((pair_pos[lo:hi] - first_pair).astype(np.uint64) << np.uint64(gram_bits)) | low[lo:hi]
            _count_chunk(np, key, out[first_pair:first_pair + chunk_items], max_n, char_bits, slot_bits)
    return out.tolist()


def _count_chunk(np: Any, key: Any, out: Any, max_n: int, char_bits: int, slot_bits: int) -> None:
    """Fill ``out[pair, n-1]`` for one chunk of position keys (see :func:`_numpy_matches`)."""
    key.sort()
    size = key.size
    slot_mask = np.uint64((1 << slot_bits) - 1)
    char_mask = np.uint64((1 << char_bits) - 1)
    pair_shift = np.uint64(max_n * char_bits + slot_bits)
    is_cand = (key & slot_mask) == 0
    cand_before = np.zeros(size + 1, dtype=np.int64)  # candidate positions before index i
    np.cumsum(is_cand, out=cand_before[1:])
    differ = key[1:] ^ key[:-1]
    for n in range(1, max_n + 1):
        shift = slot_bits + (max_n - n) * char_bits
        # Neighbours share an order-n group iff their keys agree above the n-th character's last bit.
        # Only groups of two or more positions can be shared: the runs of "agrees with the previous".
        same = np.zeros(size + 1, dtype=np.int8)
        np.less(differ, np.uint64(1 << shift), out=same[1:size].view(np.bool_))
        step = np.diff(same)
        starts = np.flatnonzero(step == 1)
        ends = np.flatnonzero(step == -1) + 1
        if starts.size == 0:
            break
        in_cand = cand_before[ends] - cand_before[starts]
        head = key[starts]
        keep = (in_cand > 0) & (in_cand < ends - starts) & (((head >> np.uint64(shift)) & char_mask) != 0)
        if not keep.any():
            break  # nothing shared at this order, so nothing at any longer one
        starts = starts[keep]
        ends = ends[keep]
        in_cand = in_cand[keep]
        contrib = np.ones(starts.size, dtype=np.int64)
        repeated = np.flatnonzero(in_cand > 1)
        if repeated.size:
            contrib[repeated] = np.minimum(
                in_cand[repeated], _largest_ref_count(np, key, starts[repeated], ends[repeated], slot_mask,
                                                      slot_bits))
        pairs = (head[keep] >> pair_shift).astype(np.int64)
        out[:, n - 1] = np.bincount(pairs, weights=contrib, minlength=out.shape[0])[:out.shape[0]]


def _largest_ref_count(np: Any, key: Any, starts: Any, ends: Any, slot_mask: Any, slot_bits: int) -> Any:
    """For each group [start, end) of sorted keys: the largest number of positions of one reference slot."""
    lengths = ends - starts
    group = np.repeat(np.arange(starts.size, dtype=np.uint64), lengths)
    index = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
    slots = key[index] & slot_mask
    refs = slots != 0
    sub = (group[refs] << np.uint64(slot_bits)) | slots[refs]
    sub.sort()
    run = np.concatenate(([0], np.flatnonzero(sub[1:] != sub[:-1]) + 1))
    counts = np.diff(np.append(run, sub.size))
    owner = sub[run] >> np.uint64(slot_bits)
    first = np.concatenate(([0], np.flatnonzero(owner[1:] != owner[:-1]) + 1))
    return np.maximum.reduceat(counts, first)


def closest_ref_len(cand_len: int, refs: Sequence[str]) -> int:
    """Length of the reference closest in length to the candidate; ties go to the shorter (spec 4.4, 5.4)."""
    return min((abs(len(ref) - cand_len), len(ref)) for ref in refs)[1]


# --------------------------------------------------------------------------- BLEU statistics


class BleuStats(NamedTuple):
    """One question's BLEU sufficient statistics (a named tuple: cheap to build by the ten thousand).

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
    return BleuStats(tuple(clipped_matches(cand, refs, max_n)), guess_counts(length, max_n), length,
                     closest_ref_len(length, refs))


@functools.lru_cache(maxsize=4096)
def guess_counts(length: int, max_n: int = MAX_ORDER) -> tuple[int, ...]:
    """Number of candidate n-grams of each order: ``max(0, length - n + 1)``."""
    return tuple(length - n + 1 if length >= n else 0 for n in range(1, max_n + 1))


def char_bleu_stats_batch(pairs: Sequence[MatchItem], max_n: int = MAX_ORDER) -> list[BleuStats]:
    """:func:`char_bleu_stats` for many ``(cand, refs)`` pairs (refs non-empty), counted in one batch."""
    matches = batch_clipped_matches(pairs, max_n)
    return [
        BleuStats(tuple(m), guess_counts(len(cand), max_n), len(cand), closest_ref_len(len(cand), refs))
        for (cand, refs), m in zip(pairs, matches, strict=True)
    ]


@dataclass(slots=True)
class BleuTotals:
    """Sums of :class:`BleuStats` over a set of questions."""

    correct: list[float]
    guess: list[float]
    test_len: int
    ref_len: int
    count: int


def sum_bleu_stats(stats: Iterable[BleuStats], max_n: int = MAX_ORDER) -> BleuTotals:
    items = list(stats)
    if not items:
        return BleuTotals([0.0] * max_n, [0.0] * max_n, 0, 0, 0)
    correct = [sum(column) for column in zip(*(item.correct for item in items), strict=True)]
    guess = [sum(column) for column in zip(*(item.guess for item in items), strict=True)]
    return BleuTotals(correct, guess, sum(item.test_len for item in items), sum(item.ref_len for item in items),
                      len(items))


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
