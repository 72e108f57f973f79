"""Rank groups, rank intervals and interval coverage of the paired bootstrap (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.significance import paired_bootstrap, rank_groups, weighted_mean_statistic


def _answers(rng: np.random.Generator, rate: float, questions: int) -> np.ndarray:
    return (rng.random(questions) < rate).astype(np.float64)


def test_identical_systems_share_a_group_and_a_rank_interval() -> None:
    rng = np.random.default_rng(1)
    same = _answers(rng, 0.6, 300)
    scores = np.stack([same, same, _answers(rng, 0.2, 300)])
    result = paired_bootstrap(scores, names=["a", "b", "weak"], samples=500, seed=3)
    ranked = rank_groups(result, ["a", "b", "weak"])
    assert [r.group for r in ranked] == [1, 1, 3]
    assert ranked[1].p_above == 1.0  # at least as good as its twin in every resample
    assert (ranked[0].rank_low, ranked[0].rank_high) == (1, 1)  # ties share rank 1
    assert (ranked[1].rank_low, ranked[1].rank_high) == (1, 1)
    assert (ranked[2].rank_low, ranked[2].rank_high) == (3, 3)


def test_a_system_better_on_every_question_is_not_tied_with_the_next() -> None:
    rng = np.random.default_rng(2)
    base = rng.random(200) * 0.5
    scores = np.stack([base + 0.2, base])  # better by 0.2 on every question
    result = paired_bootstrap(scores, names=["better", "base"], samples=500, seed=0)
    ranked = rank_groups(result)
    assert [r.name for r in ranked] == ["better", "base"]
    assert ranked[1].p_above == pytest.approx(1 / 501)
    assert [r.group for r in ranked] == [1, 2]
    assert [(r.rank_low, r.rank_high) for r in ranked] == [(1, 1), (2, 2)]


def test_groups_chain_down_the_order_and_follow_the_given_order() -> None:
    rng = np.random.default_rng(4)
    truth = [0.70, 0.69, 0.68, 0.40]
    scores = np.stack([_answers(rng, t, 400) for t in truth])
    names = ["s1", "s2", "s3", "s4"]
    result = paired_bootstrap(scores, names=names, samples=400, seed=0)
    order = [s.name for s in result.ranked()]
    ranked = rank_groups(result, order)
    assert ranked[-1].name == "s4" and ranked[-1].group == 4  # far below: a group of its own
    assert ranked[0].group == 1 and ranked[1].group == 1  # 1 point apart on 400 questions: a tie
    assert all(r.rank_low <= r.position <= r.rank_high or r.name != "s4" for r in ranked)
    with pytest.raises(ValueError):
        rank_groups(result, ["s1", "s2"])


def test_reproducible_with_the_seed() -> None:
    rng = np.random.default_rng(5)
    scores = np.stack([_answers(rng, 0.5, 150) for _ in range(4)])
    first = rank_groups(paired_bootstrap(scores, samples=300, seed=11))
    again = rank_groups(paired_bootstrap(scores, samples=300, seed=11))
    assert first == again


def test_intervals_cover_the_true_value_at_about_the_nominal_rate() -> None:
    """Over independent test sets drawn from a known population, the 95% percentile interval
    holds the population's mean in about 95% of them (a bootstrap percentile interval runs a
    little narrow on small samples, so 90-99% passes; 300 trials give a standard error of 1.3%)."""
    trials, covered = 300, 0
    rng = np.random.default_rng(12)
    truth = 0.62
    for trial in range(trials):
        test_set = _answers(rng, truth, 250)
        result = paired_bootstrap(test_set[None, :], samples=400, seed=trial)
        covered += result.systems[0].ci_low <= truth <= result.systems[0].ci_high
    assert 0.90 <= covered / trials <= 0.99


def test_stratified_intervals_cover_the_macro_average() -> None:
    trials, covered = 200, 0
    rng = np.random.default_rng(13)
    rates, sizes = (0.8, 0.5, 0.3), (120, 200, 80)
    truth = sum(rates) / len(rates)
    strata = [label for label, size in enumerate(sizes) for _ in range(size)]
    for trial in range(trials):
        test_set = np.concatenate([_answers(rng, r, n) for r, n in zip(rates, sizes)])
        result = paired_bootstrap(test_set[None, :], samples=400, seed=trial, strata=strata)
        covered += result.systems[0].ci_low <= truth <= result.systems[0].ci_high
    assert 0.90 <= covered / trials <= 0.99


def test_weighted_mean_leaves_out_questions_of_weight_zero() -> None:
    values = np.array([[1.0, 0.0, 0.5, 0.9]])
    weights = np.array([[1.0, 1.0, 1.0, 0.0]])
    stats = np.stack([values * weights, weights], axis=2)
    result = paired_bootstrap(stats, samples=50, seed=0, statistic=weighted_mean_statistic)
    assert result.systems[0].score == pytest.approx(0.5)


def test_each_stratum_gets_its_own_interval_from_the_same_resamples() -> None:
    """Strata draw in order of first appearance from one stream, so the first stratum's interval
    is exactly that of a bootstrap of its questions alone with the same seed."""
    rng = np.random.default_rng(14)
    scores = np.stack([_answers(rng, 0.6, 300), _answers(rng, 0.5, 300)])
    strata = ["a"] * 120 + ["b"] * 180
    both = paired_bootstrap(scores, samples=300, seed=9, strata=strata)
    alone = paired_bootstrap(scores[:, :120], samples=300, seed=9)
    for system, single in zip(both.systems, alone.systems):
        assert system.strata_ci["a"] == pytest.approx((single.ci_low, single.ci_high))
        low, high = system.strata_ci["b"]
        assert low <= system.strata["b"] <= high
