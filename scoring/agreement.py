"""Agreement between judges and rank correlation: the numbers of a human evaluation round.

* :func:`krippendorff_alpha`: Krippendorff's alpha by the coincidence-matrix method (Krippendorff
  2011, "Computing Krippendorff's alpha-reliability"), for nominal, ordinal, interval and ratio
  data, with missing values.  A unit (item) counts with the ``m_u >= 2`` values it has; each
  ordered pair of values from different judges of the unit adds ``1 / (m_u - 1)`` to the
  coincidence ``o_ck``; ``alpha = 1 - (n - 1) * sum(o_ck d_ck) / sum(n_c n_k d_ck)``.  The
  ordinal distance of ``c`` and ``k`` is ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2`` over the
  scale's values in order, so values the scale has but nobody used weigh nothing.
* :func:`cohen_kappa`: Cohen's kappa of two judges, unweighted or with linear / quadratic
  weights on the labels' positions (as ``sklearn.metrics.cohen_kappa_score``).
* :func:`pearson` (the one metaeval uses) and :func:`kendall_tau_b` (ties corrected).
* :func:`mean_interval`: a seeded percentile bootstrap of a mean over questions, drawn by
  :func:`scoring.significance.paired_bootstrap` (one "system"), so a round's human score and a
  board's bootstrap intervals come from the same resampling.
* :func:`agreement_table`: the paper's Table 1 (Yang et al. 2018) with alpha and kappa beside
  the judges' Pearson, per question type and overall.

Undefined statistics are ``None``, never NaN nor a division by zero: too few pairable values, a
constant side, or no disagreement possible (every value the same).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from scoring.significance import paired_bootstrap

FloatArray = npt.NDArray[np.float64]
Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
Weights = Literal[None, "linear", "quadratic"]
# One judged item: its group (e.g. question type) and its scores in judgment order.
JudgedItem = tuple[str, Sequence[float]]
OVERALL = "overall"


# --------------------------------------------------------------------------- Krippendorff's alpha


def _distances(values: FloatArray, counts: FloatArray, level: Level) -> FloatArray:
    """The squared distance ``d_ck`` between the (sorted) values, for the level of measurement."""
    c = values[:, None]
    k = values[None, :]
    if level == "nominal":
        differ: FloatArray = (c != k).astype(np.float64)
        return differ
    if level == "interval":
        out: FloatArray = (c - k) ** 2
        return out
    if level == "ratio":
        total = c + k
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(total == 0, 0.0, (c - k) / np.where(total == 0, 1.0, total))
        out = ratio ** 2
        return out
    # ordinal: the sum of the counts from c to k (both included), less half of the two ends
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    i = np.arange(len(values))
    lo = np.minimum(i[:, None], i[None, :])
    hi = np.maximum(i[:, None], i[None, :])
    between = cumulative[hi + 1] - cumulative[lo]
    out = (between - (counts[:, None] + counts[None, :]) / 2.0) ** 2
    return out


def krippendorff_alpha(units: Sequence[Sequence[float | None]], *, level: Level = "ordinal",
                       values: Sequence[float] | None = None) -> float | None:
    """Krippendorff's alpha of ``units`` (one row per item, one entry per judge slot, None = missing).

    ``values``: the scale's possible values (default: those seen); a value outside them is an
    error.  None when undefined: fewer than 2 pairable values, or one value only (no
    disagreement possible).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    rows: list[list[float]] = []
    for unit in units:
        present = [float(v) for v in unit if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if any(not math.isfinite(v) for v in present):
            raise ValueError("ratings must be finite numbers or None")
        if len(present) >= 2:  # a unit with one value has no pair: it does not count
            rows.append(present)
    seen = sorted({v for row in rows for v in row})
    if values is not None:
        scale = sorted({float(v) for v in values})
        outside = [v for v in seen if v not in set(scale)]
        if outside:
            raise ValueError(f"rating {outside[0]:g} is not one of the scale's values")
    else:
        scale = seen
    if len(seen) < 1:
        return None
    index = {v: i for i, v in enumerate(scale)}
    size = len(scale)
    coincidence = np.zeros((size, size), dtype=np.float64)
    for row in rows:
        per_value = np.zeros(size, dtype=np.float64)
        for v in row:
            per_value[index[v]] += 1.0
        # ordered pairs of values from different judges: n_c n_k, less the self-pairs on the diagonal
        pairs = np.outer(per_value, per_value) - np.diag(per_value)
        coincidence += pairs / (len(row) - 1)
    counts = coincidence.sum(axis=1)
    n = float(counts.sum())
    if n < 2:
        return None
    delta = _distances(np.asarray(scale, dtype=np.float64), counts, level)
    observed = float((coincidence * delta).sum())
    expected = float((np.outer(counts, counts) * delta).sum())
    if expected <= 0.0:
        return None
    return 1.0 - (n - 1.0) * observed / expected


# --------------------------------------------------------------------------- Cohen's kappa


def _label_order(first: Sequence[Hashable], second: Sequence[Hashable]) -> list[Hashable]:
    seen = list(dict.fromkeys([*first, *second]))
    try:
        return sorted(seen)  # type: ignore[type-var]  # sortable labels sort, as sklearn's np.unique does
    except TypeError:
        return seen


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable], *,
                weights: Weights = None, labels: Sequence[Hashable] | None = None) -> float | None:
    """Cohen's kappa of two judges' labels on the same items (None when undefined).

    ``labels``: the scale in order (weights use positions in it; items with a label outside it
    are left out, as sklearn does); default: the labels seen, sorted.
    """
    if len(first) != len(second):
        raise ValueError(f"cohen_kappa needs two sequences of the same length ({len(first)} vs {len(second)})")
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"unknown weights {weights!r}; expected None, 'linear' or 'quadratic'")
    order = list(dict.fromkeys(labels)) if labels is not None else _label_order(first, second)
    index = {label: i for i, label in enumerate(order)}
    size = len(order)
    confusion = np.zeros((size, size), dtype=np.float64)
    for a, b in zip(first, second):
        if a in index and b in index:
            confusion[index[a], index[b]] += 1.0
    total = float(confusion.sum())
    if total == 0.0:
        return None
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / total
    i = np.arange(size)
    if weights is None:
        w = (i[:, None] != i[None, :]).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i[:, None] - i[None, :]).astype(np.float64)
    else:
        w = ((i[:, None] - i[None, :]) ** 2).astype(np.float64)
    disagreement_expected = float((w * expected).sum())
    if disagreement_expected <= 0.0:
        return None
    return 1.0 - float((w * confusion).sum()) / disagreement_expected


# --------------------------------------------------------------------------- correlations


def row_pearson(x: FloatArray, y: FloatArray) -> FloatArray:
    """Pearson's r of each row pair; NaN where a row is constant (r is undefined there)."""
    constant = (x.max(axis=-1) == x.min(axis=-1)) | (y.max(axis=-1) == y.min(axis=-1))
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    r = np.clip(r, -1.0, 1.0)  # rounding can step just outside
    r[constant] = np.nan
    out: FloatArray = r
    return out


def _finite_pairs(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray,
                  name: str) -> tuple[FloatArray, FloatArray]:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"{name} needs two sequences of the same length")
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


def pearson(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float | None:
    """Pearson's r over the pairs where both values are finite; None when undefined (n < 2 or a constant side)."""
    a, b = _finite_pairs(x, y, "pearson")
    if a.size < 2:
        return None
    r = float(row_pearson(a[None, :], b[None, :])[0])
    return None if math.isnan(r) else r


def kendall_tau_b(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float | None:
    """Kendall's tau-b over the finite pairs (ties corrected); None when n < 2 or a side is constant."""
    a, b = _finite_pairs(x, y, "kendall_tau_b")
    if a.size < 2:
        return None
    upper = np.triu_indices(a.size, k=1)  # rankings are small (systems): the O(n^2) pairs are fine
    sx = np.sign(a[:, None] - a[None, :])[upper]
    sy = np.sign(b[:, None] - b[None, :])[upper]
    untied_x = float(np.count_nonzero(sx))
    untied_y = float(np.count_nonzero(sy))
    if untied_x == 0.0 or untied_y == 0.0:
        return None
    tau = float((sx * sy).sum()) / math.sqrt(untied_x * untied_y)
    return max(-1.0, min(1.0, tau))


# --------------------------------------------------------------------------- bootstrap of a mean


@dataclass(frozen=True)
class Interval:
    """A mean with its percentile bootstrap interval over ``n`` questions."""

    mean: float
    low: float
    high: float
    n: int
    samples: int
    seed: int


def mean_interval(values: Sequence[float], *, samples: int = 1000, seed: int = 0,
                  confidence: float = 0.95) -> Interval | None:
    """The mean of ``values`` (one per question) and its seeded percentile bootstrap interval.

    Drawn by :func:`scoring.significance.paired_bootstrap` (questions with replacement,
    ``Generator.integers``, numpy's linear quantiles).  None when there is no finite value.
    """
    if samples < 1:
        raise ValueError("samples must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    finite = [float(v) for v in values if math.isfinite(float(v))]
    if not finite:
        return None
    result = paired_bootstrap([finite], samples=samples, seed=seed, level=confidence)
    summary = result.systems[0]
    # The interval of a mean always contains it; clamp the last-bit rounding of the quantiles.
    return Interval(mean=summary.score, low=min(summary.ci_low, summary.score),
                    high=max(summary.ci_high, summary.score), n=len(finite), samples=samples, seed=seed)


# --------------------------------------------------------------------------- Table 1


@dataclass(frozen=True)
class AgreementRow:
    """Agreement between judges on one group of items (or ``overall``)."""

    group: str
    items: int
    pearson: float | None
    alpha: float | None
    kappa: float | None


def _agreement_row(group: str, items: Sequence[JudgedItem], level: Level, values: Sequence[float] | None,
                   kappa_weights: Weights) -> AgreementRow:
    paired = [scores for _, scores in items if len(scores) >= 2]
    r = pearson([s[0] for s in paired], [s[1] for s in paired]) if paired else None
    alpha = krippendorff_alpha([list(scores) for _, scores in items], level=level, values=values)
    kappa = None
    if items and all(len(scores) == 2 for _, scores in items):
        kappa = cohen_kappa([s[0] for _, s in items], [s[1] for _, s in items], weights=kappa_weights,
                            labels=list(values) if values is not None else None)
    return AgreementRow(group=group, items=len(items), pearson=r, alpha=alpha, kappa=kappa)


def agreement_table(items: Sequence[JudgedItem], *, level: Level = "ordinal",
                    values: Sequence[float] | None = None, kappa_weights: Weights = None) -> list[AgreementRow]:
    """One :class:`AgreementRow` per group (in order of first appearance), then ``overall``.

    ``pearson``: the first vs the second judgment of the items that have two (Yang et al.'s
    Table 1); ``alpha`` over all judgments; ``kappa`` (Cohen's, ``kappa_weights``) only where
    every item of the row has exactly two judgments, else None.
    """
    groups: dict[str, list[JudgedItem]] = {}
    for group, scores in items:
        groups.setdefault(group, []).append((group, scores))
    rows = [_agreement_row(g, members, level, values, kappa_weights) for g, members in groups.items()]
    rows.append(_agreement_row(OVERALL, list(items), level, values, kappa_weights))
    return rows
