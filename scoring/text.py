"""Answer normalisation and token overlap shared by SQuAD, MRQA, QuAC and CoQA.

Every function reproduces the official ``normalize_answer`` / ``f1_score``
exactly (see metrics-spec.md 1.2-1.3 and 2.1): ASCII punctuation is deleted,
not replaced by a space; articles are removed as whole words with Unicode
``\\b``; white space is any Unicode white space.  The implementations are
faster than the originals (``str.translate`` instead of a per-character
generator, token counters built once per string) but compute the same values.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, drop articles, collapse white space (in that order)."""
    return " ".join(_ARTICLES.sub(" ", s.lower().translate(_PUNCT_TABLE)).split())


def answer_tokens(s: str) -> list[str]:
    """SQuAD v1.1 tokens: ``normalize_answer(s).split()``."""
    return normalize_answer(s).split()


def answer_tokens_v2(s: str) -> list[str]:
    """SQuAD v2.0 ``get_tokens``: no tokens for a falsy *raw* string, else the v1.1 tokens."""
    if not s:
        return []
    return normalize_answer(s).split()


def overlap_f1(pred: Counter[str], pred_len: int, gold: Counter[str], gold_len: int) -> float:
    """SQuAD token F1 from precomputed counters; 0 when nothing overlaps (v1.1 semantics)."""
    if pred_len == 0 or gold_len == 0:
        return 0.0
    same = sum((pred & gold).values())
    if same == 0:
        return 0.0
    precision = same / pred_len
    recall = same / gold_len
    return (2 * precision * recall) / (precision + recall)


def f1_v1(prediction: str, ground_truth: str) -> float:
    """``f1_score`` of evaluate-v1.1.py / MRQA / QuAC: empty against empty is 0."""
    p = answer_tokens(prediction)
    g = answer_tokens(ground_truth)
    return overlap_f1(Counter(p), len(p), Counter(g), len(g))


def f1_v2(prediction: str, ground_truth: str) -> float:
    """``compute_f1`` of evaluate-v2.0.py / CoQA: if either side has no tokens, 1 iff both have none."""
    p = answer_tokens_v2(prediction)
    g = answer_tokens_v2(ground_truth)
    if not p or not g:
        return float(p == g)
    return overlap_f1(Counter(p), len(p), Counter(g), len(g))


def exact_match(prediction: str, ground_truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(ground_truth)


class NormalizedAnswer:
    """One string normalised once: its normal form, tokens and token counter.

    Scoring a prediction against several golds (and golds against each other,
    for leave-one-out) reuses these instead of normalising again.
    """

    __slots__ = ("raw", "norm", "tokens", "counts")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.norm = normalize_answer(raw)
        self.tokens = self.norm.split()
        self.counts = Counter(self.tokens)

    def f1_v1(self, gold: NormalizedAnswer) -> float:
        return overlap_f1(self.counts, len(self.tokens), gold.counts, len(gold.tokens))

    def f1_v2(self, gold: NormalizedAnswer) -> float:
        # v2.0 get_tokens: a falsy raw string has no tokens; a non-empty raw string
        # that normalises to "" also has none, so token emptiness decides both.
        if not self.tokens or not gold.tokens:
            return float(not self.tokens and not gold.tokens)
        return overlap_f1(self.counts, len(self.tokens), gold.counts, len(gold.tokens))


def max_em_f1_v1(prediction: str, golds: Sequence[str]) -> tuple[int, float]:
    """Max EM and max F1 over golds, each maximised separately (metric_max_over_ground_truths)."""
    pred = NormalizedAnswer(prediction)
    best_em = 0
    best_f1 = 0.0
    for g in golds:
        gold = NormalizedAnswer(g)
        if gold.norm == pred.norm:
            best_em = 1
        f1 = pred.f1_v1(gold)
        if f1 > best_f1:
            best_f1 = f1
    return best_em, best_f1
