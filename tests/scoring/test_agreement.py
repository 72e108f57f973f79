"""scoring.agreement equals the reference packages (krippendorff, sklearn, scipy) and the textbook."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from scoring.agreement import (
    LEVELS,
    AgreementRow,
    Level,
    Weights,
    agreement_table,
    cohen_kappa,
    kendall_tau_b,
    krippendorff_alpha,
    mean_interval,
    pearson,
)
from scoring.significance import resample_counts

NAN = math.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: 4 observers
# (rows) x 12 units, missing values as NaN, and the alphas the paper reports.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]
TEXTBOOK_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def _units(reliability: list[list[float]]) -> list[list[float | None]]:
    """Judges x units (the package's layout) to units x judge slots, None for missing."""
    return [[None if math.isnan(v) else float(v) for v in column] for column in zip(*reliability)]


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_of_krippendorffs_own_example(level: Level) -> None:
    alpha = krippendorff_alpha(_units(TEXTBOOK), level=level)
    assert alpha is not None
    assert round(alpha, 3) == TEXTBOOK_ALPHA[level]
    assert alpha == pytest.approx(krippendorff.alpha(reliability_data=TEXTBOOK, level_of_measurement=level),
                                  abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(8))
def test_alpha_equals_the_krippendorff_package_with_missing_values(level: Level, seed: int) -> None:
    rng = np.random.default_rng(seed)
    judges, items = int(rng.integers(2, 6)), int(rng.integers(5, 60))
    truth = rng.integers(1, 6, size=items)
    ratings = np.clip(truth[None, :] + rng.integers(-1, 2, size=(judges, items)), 1, 5).astype(float)
    ratings[rng.random(ratings.shape) < 0.3] = np.nan
    domain = [1.0, 2.0, 3.0, 4.0, 5.0]
    ours = krippendorff_alpha(_units(ratings.tolist()), level=level, values=domain)
    theirs = krippendorff.alpha(reliability_data=ratings, level_of_measurement=level, value_domain=domain)
    if math.isnan(theirs):
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_alpha_is_none_when_undefined() -> None:
    assert krippendorff_alpha([]) is None
    assert krippendorff_alpha([[3, None], [None, 4]]) is None  # no unit has two values
    assert krippendorff_alpha([[3, 3], [3, 3, 3]], level="interval") is None  # one value only
    assert krippendorff_alpha([[1, 2], [2, 1]], level="nominal") == pytest.approx(-0.5)


def test_alpha_rejects_a_value_off_the_scale() -> None:
    with pytest.raises(ValueError, match="not one of the scale"):
        krippendorff_alpha([[1, 7]], values=[1, 2, 3, 4, 5])


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", range(6))
def test_kappa_equals_sklearn(weights: Weights, seed: int) -> None:
    rng = np.random.default_rng(seed)
    first = rng.integers(1, 6, size=40)
    second = np.clip(first + rng.integers(-2, 3, size=40), 1, 5)
    ours = cohen_kappa(first.tolist(), second.tolist(), weights=weights)
    assert ours == pytest.approx(cohen_kappa_score(first, second, weights=weights), abs=1e-12)
    labels = [1, 2, 3, 4, 5, 6]  # an unused label changes the weighted kappa's positions, not the plain one
    assert cohen_kappa(first.tolist(), second.tolist(), weights=weights, labels=labels) == pytest.approx(
        cohen_kappa_score(first, second, weights=weights, labels=labels), abs=1e-12)


def test_kappa_is_none_when_undefined() -> None:
    assert cohen_kappa([], []) is None
    assert cohen_kappa([2, 2, 2], [2, 2, 2]) is None  # one label: no disagreement possible
    with pytest.raises(ValueError, match="same length"):
        cohen_kappa([1, 2], [1])


@pytest.mark.parametrize("seed", range(6))
def test_pearson_and_kendall_equal_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=25).astype(float)  # integers: ties for tau-b
    y = x + rng.normal(0, 2, size=25).round()
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_correlations_are_none_when_undefined() -> None:
    for fn in (pearson, kendall_tau_b):
        assert fn([1.0], [2.0]) is None
        assert fn([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
        assert fn([1.0, NAN, 2.0], [3.0, 4.0, NAN]) is None  # one finite pair
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_mean_interval_is_seeded_contains_the_mean_and_resamples_as_significance() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(1, 6, size=60).astype(float).tolist()
    first = mean_interval(values, samples=500, seed=7)
    assert first == mean_interval(values, samples=500, seed=7)
    assert first is not None and first != mean_interval(values, samples=500, seed=8)
    assert first.low <= first.mean <= first.high and first.low < first.high
    assert first.mean == pytest.approx(np.mean(values)) and (first.n, first.samples, first.seed) == (60, 500, 7)
    # The same draws as scoring.significance: count vectors from the same seed give the same interval.
    counts = resample_counts(None, 60, samples=500, seed=7)
    means = counts @ np.asarray(values) / 60
    assert (first.low, first.high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)
    assert mean_interval([]) is None
    assert mean_interval([4.0]) == mean_interval([4.0]) and mean_interval([4.0]).low == 4.0  # type: ignore[union-attr]


def test_agreement_table_groups_then_overall() -> None:
    items = [("yes_no", [1, 1]), ("yes_no", [2, 3]), ("yes_no", [5, 4]),
             ("entity", [1, 2, 2]), ("entity", [4, 5]), ("entity", [3, 3])]
    rows = agreement_table(items, values=[1, 2, 3, 4, 5])
    assert [r.group for r in rows] == ["yes_no", "entity", "overall"]
    assert [r.items for r in rows] == [3, 3, 6]
    yes_no, entity, overall = rows
    assert yes_no.pearson == pytest.approx(stats.pearsonr([1, 2, 5], [1, 3, 4]).statistic)
    assert yes_no.kappa == pytest.approx(cohen_kappa_score([1, 2, 5], [1, 3, 4], labels=[1, 2, 3, 4, 5]))
    assert entity.kappa is None and overall.kappa is None  # an item with three judgments
    assert entity.pearson == pytest.approx(stats.pearsonr([1, 4, 3], [2, 5, 3]).statistic)
    reliability: list[list[float]] = [[1, 2, 5, 1, 4, 3], [1, 3, 4, 2, 5, 3], [NAN, NAN, NAN, 2, NAN, NAN]]
    assert overall.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=reliability, level_of_measurement="ordinal",
                           value_domain=[1, 2, 3, 4, 5]), abs=1e-12)
    assert agreement_table([]) == [AgreementRow("overall", 0, None, None, None)]
