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
from collections.abc import Iterable, Sequence

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


# Batch normalisation.  ``normalize_answer`` costs a few microseconds per call
# (four C passes plus call overhead); QuAC and CoQA normalise ~100,000 short
# strings per run.  Lower-casing and punctuation removal are per-character
# except for the Greek final sigma, whose context rule stops at NUL exactly as
# at a string's end, so they can run once over all strings joined by NUL.
# Deleting ASCII punctuation from UTF-8 bytes is exact: ASCII bytes never occur
# inside a multi-byte sequence.
_SEPARATOR = "\x00"
_PUNCT_BYTES = string.punctuation.encode("ascii")
_ARTICLE_WORDS = frozenset(("a", "an", "the"))


def answer_tokens_many(texts: Sequence[str]) -> list[list[str]]:
    """``[answer_tokens(t) for t in texts]``, computed several times faster.

    Article removal is done per token when every token consists of word
    characters (then ``\\b`` falls exactly on token edges, so the regex removes
    whole tokens ``a``/``an``/``the`` and nothing else); any other string goes
    through the regex itself.  Texts containing NUL are normalised one by one.
    """
    if not texts:
        return []
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != len(texts) - 1:
        return [answer_tokens(t) for t in texts]
    stripped = (
        joined.lower()
        .encode("utf-8", "surrogatepass")
        .translate(None, _PUNCT_BYTES)
        .decode("utf-8", "surrogatepass")
    )
    out: list[list[str]] = []
    append = out.append
    articles = _ARTICLE_WORDS
    for piece in stripped.split(_SEPARATOR):
        tokens = piece.split()
        if "".join(tokens).isalnum():
            if not articles.isdisjoint(tokens):
                tokens = [t for t in tokens if t not in articles]
        elif tokens:
            tokens = _ARTICLES.sub(" ", piece).split()
        append(tokens)
    return out


# ``_ARTICLES`` rewritten to start with a character class, which lets the regex
# engine skip to the next "a" or "t" instead of testing a boundary at every
# position (twice as fast on a long text); the look-behind restores the leading
# ``\b``.  Exactly one of "an"/"a" can be followed by a boundary, so the greedy
# ``n?`` matches what the alternation matched.
_ARTICLES_FAST = re.compile(r"[at](?<=\b[at])(?:(?<=t)he|(?<=a)n?)\b")


def normalize_many(texts: Sequence[str]) -> list[str]:
    """``[normalize_answer(t) for t in texts]``, computed in one batch.

    As :func:`answer_tokens_many`, but the article regex too runs once over
    all texts joined by NUL: NUL is not a word character, so ``\\b`` at a
    separator falls exactly where it falls at a string's edge.  Per text only
    the white-space collapse remains.
    """
    if not texts:
        return []
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != len(texts) - 1:
        return [normalize_answer(t) for t in texts]
    stripped = _ARTICLES_FAST.sub(
        " ",
        joined.lower()
        .encode("utf-8", "surrogatepass")
        .translate(None, _PUNCT_BYTES)
        .decode("utf-8", "surrogatepass"),
    )
    return [" ".join(piece.split()) for piece in stripped.split(_SEPARATOR)]


TokenKey = str | tuple[str, int]


def numbered(tokens: Sequence[str]) -> frozenset[TokenKey]:
    """The tokens as a set in which the k-th repeat of token t is ``(t, k)``.

    ``len(a & b)`` of two such sets is the size of the multiset intersection.
    """
    seen: dict[str, int] = {}
    keys: list[TokenKey] = []
    for token in tokens:
        k = seen[token] = seen.get(token, 0) + 1
        keys.append(token if k == 1 else (token, k))
    return frozenset(keys)


class TokenBag:
    """One normalised answer, ready to be compared with many others.

    ``tokens`` are the SQuAD tokens (``normalize_answer(s).split()``) and
    ``distinct`` their set.  The size of the multiset intersection of two
    bags (``sum((Counter(a) & Counter(b)).values())``) is
    ``len(a.distinct & b.distinct)`` unless *both* repeat a token; only then
    is each side's :meth:`extra` built (once): how many more times than once
    each repeated token occurs.  A token common to both sides adds
    ``min`` of its two counts, that is 1 plus the ``min`` of its two extras,
    and only tokens repeated on both sides have a non-zero ``min`` of extras.
    """

    __slots__ = ("tokens", "distinct", "repeats", "_numbered", "_extra")

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.distinct = frozenset(tokens)
        self.repeats = len(self.distinct) != len(tokens)
        self._numbered: frozenset[TokenKey] | None = None
        self._extra: dict[str, int] | None = None

    @classmethod
    def many(cls, texts: Sequence[str]) -> list[TokenBag]:
        """One bag per text, normalised in one batch (:func:`answer_tokens_many`)."""
        return [cls(tokens) for tokens in answer_tokens_many(texts)]

    @classmethod
    def by_text(cls, texts: Iterable[str]) -> dict[str, TokenBag]:
        """Every distinct string's bag, normalised once, in one batch (:meth:`many`)."""
        distinct = list(dict.fromkeys(texts))
        return dict(zip(distinct, cls.many(distinct)))

    def numbered(self) -> frozenset[TokenKey]:
        if self._numbered is None:
            self._numbered = numbered(self.tokens)
        return self._numbered

    def extra(self) -> dict[str, int]:
        """Each repeated token -> how many times it occurs after its first occurrence."""
        extra = self._extra
        if extra is None:
            # A plain loop: three times faster than Counter or numbered() on answer-sized lists.
            seen: set[str] = set()
            extra = {}
            for token in self.tokens:
                if token in seen:
                    extra[token] = extra.get(token, 0) + 1
                else:
                    seen.add(token)
            self._extra = extra
        return extra

    def overlap(self, other: TokenBag) -> int:
        """How many tokens the two share, counted as a multiset."""
        same = len(self.distinct & other.distinct)
        if self.repeats and other.repeats:
            mine = self.extra()
            theirs = other.extra()
            for token in mine.keys() & theirs.keys():
                same += min(mine[token], theirs[token])
        return same

    def f1_v1(self, gold: TokenBag) -> float:
        """``f1_score`` of evaluate-v1.1.py / QuAC: 0 when nothing overlaps (empty vs empty too).

        Symmetric in its two arguments even in floating point (doubling is
        exact; products and sums commute), so a pair needs computing once.
        """
        if self is gold:
            return 1.0 if self.tokens else 0.0
        # self.overlap(gold), inlined: this is the innermost loop of QuAC and CoQA.
        same = len(self.distinct & gold.distinct)
        if same == 0:
            return 0.0
        if self.repeats and gold.repeats:
            mine = self._extra if self._extra is not None else self.extra()
            theirs = gold._extra if gold._extra is not None else gold.extra()
            for token in mine.keys() & theirs.keys():
                same += min(mine[token], theirs[token])
        precision = 1.0 * same / len(self.tokens)
        recall = 1.0 * same / len(gold.tokens)
        return (2 * precision * recall) / (precision + recall)

    def f1_v2(self, gold: TokenBag) -> float:
        """``compute_f1`` of evaluate-v2.0.py / CoQA: if either side has no tokens, 1 iff neither has."""
        if not self.tokens or not gold.tokens:
            return float(not self.tokens and not gold.tokens)
        return self.f1_v1(gold)
