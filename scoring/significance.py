"""Paired bootstrap resampling over questions (Koehn 2004), for many systems at once.

Every resample draws the test questions with replacement, the **same**
questions for every system (that is what makes it paired), and recomputes each
system's score on it.  From ``samples`` resamples we report, per system:

* ``score``: the observed score on the real test set;
* a **percentile confidence interval** at ``level`` (numpy's default, linearly
  interpolated quantiles of the resampled scores);
* a one-sided **p-value against the leader** (the best observed system; ties
  go to the first one listed): ``p = (1 + k) / (1 + samples)`` where ``k`` is
  the number of resamples in which the system scores at least as well as the
  leader.  Koehn's own statistic is ``k / samples`` (the leader "wins" in
  ``1 - k/samples`` of the resamples); the ``+1`` correction (Davison &
  Hinkley 1997, North et al. 2002) counts the observed test set as one of the
  samples, so p is never 0 (no bootstrap can support a smaller p than
  ``1/(samples+1)``) and two identical systems get exactly 1;
* whether the system is in the **top group**: the leader, and every system
  whose p-value is at least ``alpha`` (not significantly worse than the leader).

Stratified (macro) scores: with ``strata`` (a dataset label per question) each
resample draws, **within every stratum independently**, as many questions as
that stratum has, computes the per-stratum score and averages the strata with
equal weights, as the MRQA macro average does.  Per-stratum sizes therefore
never change between resamples.

Corpus-level metrics: ``statistic`` turns the **sum** over a resample of
per-question statistic vectors into a score, e.g. corpus BLEU from n-gram
match and candidate counts and lengths (:func:`coco_bleu4` for DuReader,
:func:`mrc2018_bleu4` for MRC2018; the CLI reads the per-example records'
``bleu_correct``, ``bleu_guess``, ``test_len`` and ``ref_len``).  The
default statistic is the mean of one per-question score.

How it is computed: a resample is a count vector (how often each question was
drawn); the resampled sums of every system are ``counts @ stats``, one matrix
product per chunk of resamples, so there is no Python loop over resamples and
memory stays bounded (``chunk_elements`` counts per chunk).  The stream of
random numbers is consumed stratum by stratum (in order of first appearance),
and within a stratum resample by resample, each drawing ``n`` indices with
``Generator.integers(0, n)``; so results depend on the seed only, never on
the chunk size, and a plain loop that draws in the same order reproduces them
(see the tests).  For the mean the comparison with the leader is made on the
resampled mean of the per-question *differences*, so questions on which two
systems agree contribute exact zeros and ties are exact.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from scoring.cli import add_common_options
from scoring.errors import InputFormatError, ScoringError, UndefinedMetricError
from scoring.io import _ignore, load_json
from scoring.result import EvalResult

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# statistic(sums, n): sums has shape (..., K), the per-question statistic vectors summed
# over a resample of n questions; returns the score, shape (...).
Statistic = Callable[[FloatArray, int], FloatArray]

MissingPolicy = Literal["error", "zero"]

DEFAULT_SAMPLES = 1000
# 2**20 counts per chunk: ~24 MB of index, count and float buffers whatever the test set size.
DEFAULT_CHUNK_ELEMENTS = 1 << 20


def mean_statistic(sums: FloatArray, n: int) -> FloatArray:
    """The mean of a per-question score (K = 1)."""
    return sums[..., 0] / n


def weighted_mean_statistic(sums: FloatArray, n: int) -> FloatArray:
    """The mean of a score over the questions that count (K = 2: score x weight, weight).

    QuAC's F1 leaves out the questions whose human F1 is too low (weight 0), so the score of a
    resample is a ratio, not a plain mean.  A resample without any counted question is undefined
    (NaN), which the caller must rule out (see :func:`paired_bootstrap`).
    """
    del n
    with np.errstate(invalid="ignore", divide="ignore"):
        result: FloatArray = sums[..., 0] / sums[..., 1]
    return result


# Layout of the per-question statistic vector the BLEU statistics expect: the DuReader and
# MRC2018 per-example fields bleu_correct (4), bleu_guess (4), test_len, ref_len, in that order.
BLEU4_STATS: tuple[str, ...] = (
    "match_1", "match_2", "match_3", "match_4",
    "candidate_1", "candidate_2", "candidate_3", "candidate_4",
    "candidate_length", "reference_length",
)
BLEU_RECORD_FIELDS: tuple[str, ...] = ("bleu_correct", "bleu_guess", "test_len", "ref_len")

# coco-caption's pseudo-smoothing constants (spec 4.4).
_COCO_TINY = 1e-15
_COCO_SMALL = 1e-9


def coco_bleu4(sums: FloatArray, n: int) -> FloatArray:
    """DuReader's corpus BLEU-4 (coco-caption, option ``closest``; spec 4.4) from summed statistics.

    ``prod((match_k + 1e-15) / (candidate_k + 1e-9))^(1/4)``, times
    ``exp(1 - 1/ratio)`` when ``ratio = (c + 1e-15) / (r + 1e-9) < 1``.
    Defined for every resample.
    """
    del n  # corpus BLEU depends on the sums only
    precision = (sums[..., 0:4] + _COCO_TINY) / (sums[..., 4:8] + _COCO_SMALL)
    bleu = np.prod(precision, axis=-1) ** 0.25
    ratio = (sums[..., 8] + _COCO_TINY) / (sums[..., 9] + _COCO_SMALL)
    result: FloatArray = np.where(ratio < 1.0, bleu * np.exp(1.0 - 1.0 / np.maximum(ratio, _COCO_TINY)), bleu)
    return result


def mrc2018_bleu4(sums: FloatArray, n: int) -> FloatArray:
    """The MRC2018 corpus BLEU-4 (spec 5.4) from summed statistics laid out as :data:`BLEU4_STATS`.

    ``BLEU = (p1 p2 p3 p4)^(1/4) * exp(min(1 - r/c, 0))`` with ``p_n = match_n /
    candidate_n`` and no smoothing.  Where the official script would divide by
    zero (an order with no candidate n-gram, or no candidate at all) the score
    is 0, as in the LIC2019 variant (spec 5.7 b): a bootstrap must not stop
    because one resample drew only very short answers.
    """
    del n
    match = sums[..., 0:4]
    candidate = sums[..., 4:8]
    safe_candidate = np.where(candidate > 0, candidate, 1.0)
    precision = np.where(candidate > 0, match / safe_candidate, 0.0)
    geometric = np.prod(precision, axis=-1) ** 0.25
    c = sums[..., 8]
    r = sums[..., 9]
    bp = np.where(c > 0, np.exp(np.minimum(1.0 - r / np.where(c > 0, c, 1.0), 0.0)), 0.0)
    result: FloatArray = geometric * bp
    return result


STATISTICS: dict[str, Statistic] = {
    "mean": mean_statistic,
    "dureader_bleu4": coco_bleu4,
    "mrc2018_bleu4": mrc2018_bleu4,
}


def bleu_vector(record: Mapping[str, Any]) -> list[float] | None:
    """A DuReader/MRC2018 per-example record's BLEU statistics as one vector; None if not BLEU-scored.

    Records whose BLEU fields are null (questions outside the BLEU set, e.g.
    non-entity questions of the entity task) are not part of the corpus BLEU.
    """
    values = [record.get(name) for name in BLEU_RECORD_FIELDS]
    if any(v is None for v in values):
        return None
    correct, guess, test_len, ref_len = values
    if not isinstance(correct, list) or not isinstance(guess, list):
        raise TypeError("bleu_correct and bleu_guess should be lists")
    return [*correct, *guess, test_len, ref_len]


@dataclass(frozen=True)
class SystemSummary:
    """What the bootstrap says about one system."""

    name: str
    score: float  # observed score (macro average over strata when stratified)
    ci_low: float
    ci_high: float
    p_value: float | None  # one-sided, against the leader; None for the leader itself
    top_group: bool  # not significantly worse than the leader (p >= alpha), or the leader
    strata: dict[str, float] = field(default_factory=dict)  # observed score per stratum
    # The interval of each stratum's own score, from the same resamples (per-dataset columns).
    strata_ci: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "score": self.score,
            "ci": [self.ci_low, self.ci_high],
            "p_value": self.p_value,
            "top_group": self.top_group,
        }
        if self.strata:
            out["strata"] = dict(self.strata)
            out["strata_ci"] = {label: list(ci) for label, ci in self.strata_ci.items()}
        return out


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """The systems in input order, the settings, and the resampled scores (samples x systems)."""

    systems: tuple[SystemSummary, ...]
    leader: str
    samples: int
    seed: int | None
    level: float
    alpha: float
    higher_is_better: bool
    questions: int
    strata_sizes: dict[str, int]
    resampled: FloatArray

    @property
    def top_group(self) -> list[str]:
        return [s.name for s in self.ranked() if s.top_group]

    def ranked(self) -> list[SystemSummary]:
        """Systems best first by observed score (ties keep input order)."""
        sign = -1.0 if self.higher_is_better else 1.0
        return sorted(self.systems, key=lambda s: sign * s.score)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "samples": self.samples,
            "seed": self.seed,
            "level": self.level,
            "alpha": self.alpha,
            "higher_is_better": self.higher_is_better,
            "questions": self.questions,
        }
        if self.strata_sizes:
            out["strata"] = dict(self.strata_sizes)
        out["p_value"] = "one-sided vs leader: (1 + #resamples where system >= leader) / (1 + samples)"
        out["leader"] = self.leader
        out["top_group"] = self.top_group
        out["systems"] = [s.to_dict() for s in self.ranked()]
        return out


def strata_groups(strata: Sequence[Hashable] | npt.NDArray[Any] | None, questions: int) -> list[tuple[str, IntArray]]:
    """``(label, question indices)`` per stratum, in order of first appearance (one group if None)."""
    if strata is None:
        return [("", np.arange(questions, dtype=np.int64))]
    labels = list(strata)
    if len(labels) != questions:
        raise ValueError(f"strata has {len(labels)} labels for {questions} questions")
    members: dict[Hashable, list[int]] = {}
    for i, label in enumerate(labels):
        members.setdefault(label, []).append(i)
    return [(str(label), np.asarray(idx, dtype=np.int64)) for label, idx in members.items()]


def _chunk_rows(n: int, samples: int, chunk_elements: int) -> int:
    return max(1, min(samples, chunk_elements // max(n, 1)))


def _count_chunks(n: int, samples: int, rng: np.random.Generator,
                  chunk_elements: int) -> Iterator[tuple[int, IntArray]]:
    """Yield ``(start, counts)``: how often each of ``n`` questions is drawn, per resample."""
    rows = _chunk_rows(n, samples, chunk_elements)
    offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
    for start in range(0, samples, rows):
        b = min(rows, samples - start)
        idx = rng.integers(0, n, size=(b, n), dtype=np.int64)
        idx += offsets[:b]  # one bincount for the whole chunk: row r counts into [r*n, (r+1)*n)
        counts: IntArray = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)
        yield start, counts


def resample_counts(strata: Sequence[Hashable] | npt.NDArray[Any] | None, questions: int, *,
                    samples: int = DEFAULT_SAMPLES, seed: int | None = 0,
                    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS) -> IntArray:
    """The (samples x questions) count matrix :func:`paired_bootstrap` draws with these arguments.

    Meant for inspection and tests on small data (it materialises the whole matrix).
    """
    rng = np.random.default_rng(seed)
    out = np.zeros((samples, questions), dtype=np.int64)
    for _, idx in strata_groups(strata, questions):
        for start, counts in _count_chunks(len(idx), samples, rng, chunk_elements):
            out[start:start + counts.shape[0], idx] = counts
    return out


# OpenBLAS runs a matrix product on one thread when m*n*k <= 65536 * 4 (its SMP threshold).
# Under CPU contention (scoring containers beside the worker) its spinning threads made the
# bootstrap 5 to 10 times slower than one thread (measured: 38 s instead of 3.6 s for
# 10 systems x 100,000 questions), so the products are cut into blocks of questions below
# that size and accumulated.  Other BLAS libraries simply see many small products.
_BLAS_SINGLE_THREAD_WORK = 65536 * 4
_MIN_BLOCK = 64  # past this, fewer larger calls beat the thread-free guarantee


def _accumulate_product(counts: FloatArray, matrix: FloatArray, out: FloatArray) -> None:
    """``out[...] = counts @ matrix``, in question blocks small enough for single-threaded BLAS."""
    rows, n = counts.shape
    block = max(_MIN_BLOCK, _BLAS_SINGLE_THREAD_WORK // max(1, rows * matrix.shape[1]))
    if block >= n:
        np.matmul(counts, matrix, out=out)
        return
    out[...] = 0.0
    partial = np.empty_like(out)
    for start in range(0, n, block):
        np.matmul(counts[:, start:start + block], matrix[start:start + block], out=partial)
        out += partial


def _resampled_sums(matrix: FloatArray, samples: int, rng: np.random.Generator,
                    chunk_elements: int) -> FloatArray:
    """``counts @ matrix`` for every resample of the matrix's rows (questions)."""
    out = np.empty((samples, matrix.shape[1]), dtype=np.float64)
    for start, counts in _count_chunks(matrix.shape[0], samples, rng, chunk_elements):
        _accumulate_product(counts.astype(np.float64), matrix, out[start:start + counts.shape[0]])
    return out


def paired_bootstrap(
    scores: npt.ArrayLike,
    *,
    names: Sequence[str] | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int | None = 0,
    level: float = 0.95,
    alpha: float = 0.05,
    higher_is_better: bool = True,
    strata: Sequence[Hashable] | npt.NDArray[Any] | None = None,
    statistic: Statistic | None = None,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> BootstrapResult:
    """Paired bootstrap of ``scores[system, question]`` (see the module notes).

    With ``statistic``, ``scores`` may be ``(systems, questions, K)``: per-question
    statistic vectors whose resampled sums ``statistic(sums, n)`` maps to a score.
    """
    stats = np.asarray(scores, dtype=np.float64)
    if stats.ndim == 2:
        stats = stats[:, :, None]
    if stats.ndim != 3 or (statistic is None and stats.shape[2] != 1):
        raise ValueError("scores must be a (systems, questions) matrix, "
                         "or (systems, questions, K) statistic vectors with a statistic")
    n_systems, n_questions, k = stats.shape
    if n_systems == 0 or n_questions == 0:
        raise ValueError("need at least one system and one question")
    if not np.isfinite(stats).all():
        raise ValueError("scores contain NaN or infinity")
    if samples < 1:
        raise ValueError("samples must be at least 1")
    if not 0.0 < level < 1.0 or not 0.0 < alpha < 1.0:
        raise ValueError("level and alpha must be between 0 and 1")
    if chunk_elements < 1:
        raise ValueError("chunk_elements must be positive")
    labels = list(names) if names is not None else [f"system{i + 1}" for i in range(n_systems)]
    if len(labels) != n_systems:
        raise ValueError(f"{len(labels)} names for {n_systems} systems")
    is_mean = statistic is None
    fn = statistic if statistic is not None else mean_statistic

    groups = strata_groups(strata, n_questions)
    observed_by_stratum = np.stack(
        [np.asarray(fn(stats[:, idx, :].sum(axis=1), len(idx)), dtype=np.float64) for _, idx in groups], axis=1)
    observed = observed_by_stratum.mean(axis=1)
    bad = np.flatnonzero(~np.isfinite(observed))
    if bad.size:
        raise UndefinedMetricError(f"the statistic is undefined for system {labels[int(bad[0])]!r} on the test set")
    leader = int(np.argmax(observed) if higher_is_better else np.argmin(observed))

    rng = np.random.default_rng(seed)
    boot = np.zeros((samples, n_systems), dtype=np.float64)
    diff = np.zeros((samples, n_systems), dtype=np.float64)
    stratum_ci: list[FloatArray] = []
    for _, idx in groups:
        n = len(idx)
        block = stats[:, idx, :]
        columns = [block.transpose(1, 0, 2).reshape(n, n_systems * k)]
        if is_mean:  # per-question differences to the leader: exact zeros where they agree
            columns.append((block[:, :, 0] - block[leader, :, 0]).T)
        matrix = np.ascontiguousarray(np.concatenate(columns, axis=1))
        sums = _resampled_sums(matrix, samples, rng, chunk_elements)
        stratum_boot = fn(sums[:, :n_systems * k].reshape(samples, n_systems, k), n)
        boot += stratum_boot
        if strata is not None:
            stratum_ci.append(np.quantile(stratum_boot, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0))
        if is_mean:
            diff += sums[:, n_systems * k:] / n
    boot /= len(groups)
    if is_mean:
        diff /= len(groups)
    else:
        diff = boot - boot[:, leader:leader + 1]

    at_least_as_good = diff >= 0 if higher_is_better else diff <= 0
    wins = at_least_as_good.sum(axis=0)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    summaries = []
    for s in range(n_systems):
        p = None if s == leader else float((wins[s] + 1) / (samples + 1))
        summaries.append(SystemSummary(
            name=labels[s],
            score=float(observed[s]),
            ci_low=float(low[s]),
            ci_high=float(high[s]),
            p_value=p,
            top_group=p is None or p >= alpha,
            strata={label: float(observed_by_stratum[s, d]) for d, (label, _) in enumerate(groups)}
            if strata is not None else {},
            strata_ci={label: (float(stratum_ci[d][0, s]), float(stratum_ci[d][1, s]))
                       for d, (label, _) in enumerate(groups)} if strata is not None else {},
        ))
    return BootstrapResult(
        systems=tuple(summaries),
        leader=labels[leader],
        samples=samples,
        seed=seed,
        level=level,
        alpha=alpha,
        higher_is_better=higher_is_better,
        questions=n_questions,
        strata_sizes={label: len(idx) for label, idx in groups} if strata is not None else {},
        resampled=boot,
    )


# --- ranks and rank groups -----------------------------------------------------------------------

# Two resampled scores this close are equal: identical systems give identical columns, but a
# BLAS kernel may sum two identical columns in a different order (last bits differ).
_TIE = 1e-9


@dataclass(frozen=True)
class RankedSystem:
    """One system's place on a ranked board, from the resamples of a :class:`BootstrapResult`."""

    name: str
    position: int  # 1-based place in the order given (the board's order)
    p_above: float | None  # one-sided p against the system just above it; None for the first
    group: int  # position of the first system of its rank group
    rank_low: int  # 2.5th percentile of its rank over resamples (1 = best)
    rank_high: int  # 97.5th percentile


def rank_groups(result: BootstrapResult, order: Sequence[str] | None = None, *,
                alpha: float | None = None, level: float | None = None) -> list[RankedSystem]:
    """Rank groups and rank intervals for the systems of ``result``, in ``order`` (default: best first).

    Walking down the order, a system shares the group of the one just above it when it is not
    significantly worse than that one: the one-sided paired p-value
    ``(1 + #resamples where it scores at least as well) / (1 + samples)`` is at least ``alpha``.
    A group is a chain (its first and last members may differ significantly), as boards that
    mark "tied with #k" read it.  Its rank interval is the central ``level`` percentile range of
    its competition rank (1 + the number of systems scoring strictly better) over the resamples.
    """
    names = [s.name for s in result.systems]
    column = {name: i for i, name in enumerate(names)}
    wanted = list(order) if order is not None else [s.name for s in result.ranked()]
    if sorted(wanted) != sorted(names):
        raise ValueError("order must name every system once")
    alpha = result.alpha if alpha is None else alpha
    level = result.level if level is None else level
    sign = 1.0 if result.higher_is_better else -1.0
    boot = np.round(sign * result.resampled[:, [column[name] for name in wanted]] / _TIE) * _TIE
    # Competition rank per resample: 1 + how many score strictly better (ties share a rank).
    ranks = np.empty(boot.shape, dtype=np.int64)
    for r in range(boot.shape[0]):
        descending = np.sort(-boot[r])
        ranks[r] = np.searchsorted(descending, -boot[r], side="left") + 1
    tail = (1.0 - level) / 2.0
    low = np.quantile(ranks, tail, axis=0, method="lower")
    high = np.quantile(ranks, 1.0 - tail, axis=0, method="higher")
    out: list[RankedSystem] = []
    group = 1
    for i, name in enumerate(wanted):
        p_above: float | None = None
        if i:
            as_good = int((boot[:, i] >= boot[:, i - 1]).sum())
            p_above = (as_good + 1) / (result.samples + 1)
            if p_above < alpha:
                group = i + 1
        out.append(RankedSystem(name=name, position=i + 1, p_above=p_above, group=group,
                                rank_low=int(low[i]), rank_high=int(high[i])))
    return out


# --- aligning per-example records -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AlignedScores:
    """Per-question scores of several systems on the same questions, in the same order."""

    names: tuple[str, ...]
    ids: tuple[str, ...]
    scores: FloatArray  # (systems, questions), or (systems, questions, K) for statistic vectors
    strata: tuple[str, ...] | None  # one label per question when stratified
    filled: tuple[int, ...]  # per system: questions it lacked, scored 0 (missing="zero")


def align_per_example(
    systems: Mapping[str, Sequence[Any]],
    metric: str,
    *,
    stratify: str | None = None,
    missing: MissingPolicy = "error",
    vector: bool = False,
    sources: Mapping[str, str] | None = None,
    strict: bool = False,
    warn: Callable[[str], None] = _ignore,
) -> AlignedScores:
    """Build the aligned score matrix from per-example records (``EvalResult.per_example``).

    Each record is an object with an ``"id"`` and the ``metric`` (a number, or
    with ``vector`` a list of numbers); ``stratify`` names a label field such
    as ``"dataset"``.  The questions are aligned by id.  Systems must answer
    the same questions (``missing="error"``, the default: a clear error says
    which system lacks which ids), or, with ``missing="zero"``, a question a
    system lacks scores 0 for it (all-zero statistics), as the official
    scripts score a missing prediction.  ``sources`` maps system names to file
    names for error messages.  A repeated id keeps its last record with a
    warning, or is an error with ``strict``.
    """
    if missing not in ("error", "zero"):
        raise ValueError(f"missing must be 'error' or 'zero', not {missing!r}")
    if not systems:
        raise InputFormatError("no systems to compare")
    sources = sources or {}
    names = tuple(systems)
    read: list[_SystemRecords] = []
    for name in names:
        where = sources.get(name, f"system {name!r}")
        records = systems[name]
        if not isinstance(records, Sequence) or isinstance(records, (str, bytes)):
            raise InputFormatError("expected a list of per-example records", path=where)
        system = _read_fast(records, metric, vector, stratify) or _read_checked(records, metric, vector,
                                                                                 stratify, where)
        if vector and read and system.values.shape[1] != read[0].values.shape[1]:
            raise InputFormatError(f"field {metric!r} has {system.values.shape[1]} statistics, "
                                   f"expected {read[0].values.shape[1]}", path=where)
        read.append(system)

    # A repeated id keeps its last record and its first position.
    indexes = [{qid: i for i, qid in enumerate(system.ids)} for system in read]
    for name, system, index in zip(names, read, indexes):
        if len(index) != len(system.ids):
            _check_duplicates(system.ids, sources.get(name, f"system {name!r}"), strict, warn)
    ids = _aligned_ids(names, indexes, missing, sources)
    k = read[0].values.shape[1] if vector else 1
    matrix = np.zeros((len(names), len(ids), k), dtype=np.float64)
    strata: list[str | None] = [None] * len(ids)
    filled = []
    for s, (system, index) in enumerate(zip(read, indexes)):
        values = system.values if vector else system.values.reshape(-1, 1)
        if system.ids == ids:  # the usual case: same questions, same order, no repeats
            positions = np.arange(len(ids), dtype=np.int64)
            matrix[s] = values
            filled.append(0)
        else:
            positions = np.fromiter((index.get(qid, -1) for qid in ids), dtype=np.int64, count=len(ids))
            present = positions >= 0
            matrix[s, present] = values[positions[present]]
            filled.append(int(len(ids) - present.sum()))
        if system.labels is not None:
            _merge_labels(strata, system.labels, positions, ids, stratify or "",
                          sources.get(names[s], f"system {names[s]!r}"))
    scores = matrix if vector else matrix[:, :, 0]
    labels = tuple(label or "" for label in strata) if stratify is not None else None
    return AlignedScores(names=names, ids=tuple(ids), scores=scores, strata=labels, filled=tuple(filled))


@dataclass(frozen=True, eq=False)
class _SystemRecords:
    ids: list[str]
    values: FloatArray  # (records,) or (records, K)
    labels: list[str] | None


def _read_fast(records: Sequence[Any], metric: str, vector: bool, stratify: str | None) -> _SystemRecords | None:
    """Columns of well-formed records without per-record checks; None sends any doubt to the checked path."""
    if not records:
        return None
    try:
        ids = [record["id"] for record in records]
        values = [record[metric] for record in records]
        labels = [record[stratify] for record in records] if stratify is not None else None
    except (TypeError, KeyError, IndexError):
        return None
    if set(map(type, ids)) != {str} or (labels is not None and set(map(type, labels)) != {str}):
        return None
    numbers = {float, int, bool}
    if vector:
        if set(map(type, values)) != {list} or not set(map(type, (x for v in values for x in v))) <= numbers:
            return None
    elif not set(map(type, values)) <= numbers:
        return None
    try:  # a ragged list of lists fails here
        array = np.array(values, dtype=np.float64)
    except ValueError:
        return None
    if array.ndim != (2 if vector else 1) or (vector and array.shape[1] == 0) or not np.isfinite(array).all():
        return None
    return _SystemRecords(ids=ids, values=array, labels=labels)


def _read_checked(records: Sequence[Any], metric: str, vector: bool, stratify: str | None,
                  where: str) -> _SystemRecords:
    """Record by record, naming the first defect (file, record number or id, field)."""
    ids: list[str] = []
    values: list[Any] = []
    labels: list[str] = []
    width: int | None = None
    for number, record in enumerate(records, start=1):
        qid = _record_id(record, number, where)
        value = _record_value(record, metric, vector, where, qid)
        if vector:
            if width is None:
                width = len(value)
            elif len(value) != width:
                raise InputFormatError(f"field {metric!r} has {len(value)} statistics, expected {width}",
                                       path=where, qid=qid)
        ids.append(qid)
        values.append(value)
        if stratify is not None:
            labels.append(_record_label(record, stratify, where, qid))
    if not ids:
        raise InputFormatError("no per-example records", path=where)
    return _SystemRecords(ids=ids, values=np.array(values, dtype=np.float64),
                          labels=labels if stratify is not None else None)


def _record_id(record: Any, number: int, where: str) -> str:
    if not isinstance(record, dict):
        raise InputFormatError(f"record {number} should be an object, found {type(record).__name__}", path=where)
    qid = record.get("id")
    if isinstance(qid, bool) or not isinstance(qid, (str, int)):
        raise InputFormatError(f"record {number} needs a string field 'id'", path=where)
    return str(qid)


def _record_value(record: dict[str, Any], metric: str, vector: bool, where: str, qid: str) -> Any:
    if metric not in record:
        available = ", ".join(k for k in record if k != "id")
        raise InputFormatError(f"missing field {metric!r} (the record has: {available})", path=where, qid=qid)
    value = record[metric]
    if vector:
        if not isinstance(value, list) or not value or not all(_is_number(v) for v in value):
            raise InputFormatError(f"field {metric!r} should be a non-empty list of finite numbers",
                                   path=where, qid=qid)
        return [float(v) for v in value]
    if not _is_number(value):
        raise InputFormatError(f"field {metric!r} should be a finite number, found {value!r}", path=where, qid=qid)
    return float(value)


def _record_label(record: dict[str, Any], field_name: str, where: str, qid: str) -> str:
    if field_name not in record:
        raise InputFormatError(f"missing stratum field {field_name!r}", path=where, qid=qid)
    label = record[field_name]
    if not isinstance(label, (str, int, bool)):
        raise InputFormatError(f"stratum field {field_name!r} should be a string, found {type(label).__name__}",
                               path=where, qid=qid)
    return str(label)


def _is_number(value: Any) -> bool:
    # Booleans are accepted as 0/1 (exact match is sometimes recorded as a bool).
    return isinstance(value, (int, float)) and math.isfinite(float(value))


def _check_duplicates(ids: list[str], where: str, strict: bool, warn: Callable[[str], None]) -> None:
    if len(set(ids)) == len(ids):
        return
    seen: set[str] = set()
    for qid in ids:
        if qid in seen:
            if strict:
                raise InputFormatError("question id appears more than once", path=where, qid=qid)
            warn(f"{where}: id {qid!r} appears more than once; the last record is used")
        seen.add(qid)


def _merge_labels(strata: list[str | None], labels: list[str], positions: IntArray, ids: list[str],
                  field_name: str, where: str) -> None:
    """Fill the aligned stratum labels from one system, insisting that systems agree."""
    mine = [labels[p] if p >= 0 else None for p in positions.tolist()]
    if mine == strata:  # the usual case after the first system
        return
    for q, label in enumerate(mine):
        if label is None:
            continue
        known = strata[q]
        if known is None:
            strata[q] = label
        elif known != label:
            raise InputFormatError(f"{field_name!r} is {label!r} here but {known!r} in another system",
                                   path=where, qid=ids[q])


def _aligned_ids(names: tuple[str, ...], indexes: list[dict[str, int]], missing: MissingPolicy,
                 sources: Mapping[str, str]) -> list[str]:
    if missing == "zero":
        order: dict[str, None] = {}
        for index in indexes:
            order.update(dict.fromkeys(index))
        return list(order)
    reference = indexes[0]
    for name, index in zip(names[1:], indexes[1:]):
        if index.keys() == reference.keys():
            continue
        where = sources.get(name, f"system {name!r}")
        lacking = [q for q in reference if q not in index]
        extra = [q for q in index if q not in reference]
        parts = []
        if lacking:
            parts.append(f"lacks {len(lacking)} question(s) that {names[0]!r} has (e.g. {lacking[0]!r})")
        if extra:
            parts.append(f"has {len(extra)} question(s) that {names[0]!r} lacks (e.g. {extra[0]!r})")
        raise InputFormatError(
            f"system {name!r} {' and '.join(parts)}; systems must be scored on the same questions "
            "(or use missing-as-zero)", path=where)
    return list(reference)


def load_per_example(path: str) -> list[Any]:
    """A per-example file: the JSON list ``--per-example`` writes (or ``{"per_example": [...]}``)."""
    data = load_json(path)
    if isinstance(data, dict) and "per_example" in data:
        data = data["per_example"]
    if not isinstance(data, list):
        raise InputFormatError(f"expected a JSON list of per-example records, found {type(data).__name__}",
                               path=path)
    return data


# --- command line -----------------------------------------------------------------------------


def parse_system_args(specs: Sequence[str]) -> dict[str, str]:
    """``NAME=FILE`` arguments (a bare FILE is named by its file name)."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = os.path.basename(spec), spec
        if not name or not path:
            raise InputFormatError(f"expected NAME=FILE, got {spec!r}")
        if name in out:
            raise InputFormatError(f"system name {name!r} is given twice")
        out[name] = path
    return out


def register(subparsers: Any) -> None:

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "significance",
        help="paired bootstrap over questions: confidence intervals, p-values vs the leader, top group",
        description="Paired bootstrap resampling (Koehn 2004) over the per-example files that "
                    "--per-example writes. Scores are in the files' own units.",
    )
    parser.add_argument("systems", nargs="+", metavar="NAME=PER_EXAMPLE.json")
    parser.add_argument("--metric",
                        help="per-example field to compare (required for the mean); with a BLEU --statistic, "
                             f"a field holding the list {', '.join(BLEU4_STATS)} (default: the DuReader/MRC2018 "
                             f"fields {', '.join(BLEU_RECORD_FIELDS)})")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="bootstrap resamples (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level for the top group (default 0.05)")
    parser.add_argument("--stratify", metavar="FIELD",
                        help="resample within each value of this label (e.g. dataset) and macro-average")
    parser.add_argument("--lower-is-better", action="store_true")
    parser.add_argument("--missing", choices=("error", "zero"), default="error",
                        help="a question some system lacks: an error (default), or scored 0 for it")
    parser.add_argument("--statistic", choices=tuple(STATISTICS), default="mean",
                        help="mean of the per-question metric (default), or corpus BLEU-4 from per-question "
                             "n-gram statistics: dureader_bleu4 (coco-caption, spec 4.4) or mrc2018_bleu4 (spec 5.4)")
    add_common_options(parser, rounding=False)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> EvalResult:
    if args.samples < 1:
        raise ScoringError("--samples must be at least 1")
    if not 0.0 < args.level < 1.0 or not 0.0 < args.alpha < 1.0:
        raise ScoringError("--level and --alpha must be between 0 and 1")
    vector = args.statistic != "mean"
    if not vector and not args.metric:
        raise ScoringError("--metric is required (the per-example field to compare)")
    paths = parse_system_args(args.systems)
    warnings: list[str] = []
    loaded = {name: load_per_example(path) for name, path in paths.items()}
    metric = args.metric
    if vector and not metric:
        metric = _BLEU_FIELD
        loaded = {name: _with_bleu_vectors(records, paths[name]) for name, records in loaded.items()}
    aligned = align_per_example(loaded, metric, stratify=args.stratify, missing=args.missing,
                                vector=vector, sources=paths, strict=args.strict, warn=warnings.append)
    if vector and aligned.scores.shape[2] != len(BLEU4_STATS):
        raise InputFormatError(f"--statistic {args.statistic} needs {len(BLEU4_STATS)} statistics per question, "
                               f"found {aligned.scores.shape[2]}")
    for name, count in zip(aligned.names, aligned.filled):
        if count:
            warnings.append(f"{paths[name]}: {count} question(s) missing, scored 0")
    result = paired_bootstrap(
        aligned.scores,
        names=aligned.names,
        samples=args.samples,
        seed=args.seed,
        level=args.level,
        alpha=args.alpha,
        higher_is_better=not args.lower_is_better,
        strata=aligned.strata,
        statistic=None if not vector else STATISTICS[args.statistic],
    )
    metrics: dict[str, Any] = {"metric": metric, "statistic": args.statistic}
    metrics.update(result.to_dict())
    per_example = [{"id": s["name"], **s} for s in metrics["systems"]]
    return EvalResult(metrics=metrics, per_example=per_example, warnings=warnings)


_BLEU_FIELD = "+".join(BLEU_RECORD_FIELDS)


def _with_bleu_vectors(records: list[Any], path: str) -> list[Any]:
    """Records reduced to id, labels and one BLEU statistics vector; records outside the BLEU set dropped."""
    out = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise InputFormatError(f"record {number} should be an object, found {type(record).__name__}", path=path)
        try:
            vector = bleu_vector(record)
        except TypeError as exc:
            raise InputFormatError(str(exc), path=path, qid=str(record.get("id"))) from None
        if vector is not None:
            out.append({**record, _BLEU_FIELD: vector})
    if records and not out:
        raise InputFormatError(f"no record has the BLEU statistics {', '.join(BLEU_RECORD_FIELDS)} "
                               "(expected a DuReader or MRC2018 --per-example file, or name a field with --metric)",
                               path=path)
    return out
