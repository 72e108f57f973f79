"""Paired bootstrap: known properties, agreement with a naive loop, stratification, alignment, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from scoring.charmetrics import BleuTotals, coco_bleu, mrc_bleu
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.significance import (
    BLEU4_STATS,
    _count_chunks,
    align_per_example,
    coco_bleu4,
    mrc2018_bleu4,
    paired_bootstrap,
    resample_counts,
)
from tests.scoring.helpers import run_cli_text_on_error as run_cli

FloatArray = npt.NDArray[np.float64]


def random_scores(systems: int = 3, questions: int = 200, seed: int = 7) -> FloatArray:
    rng = np.random.default_rng(seed)
    base = rng.random(questions)
    return np.clip(base[None, :] + rng.normal(0.0, 0.1, (systems, questions)), 0.0, 1.0)


def naive_bootstrap(scores: FloatArray, samples: int, seed: int, strata: list[str] | None = None) -> FloatArray:
    """Koehn's loop, drawing from the same random stream: stratum by stratum, resample by resample."""
    rng = np.random.default_rng(seed)
    labels = strata if strata is not None else [""] * scores.shape[1]
    groups: dict[str, list[int]] = {}
    for q, label in enumerate(labels):
        groups.setdefault(label, []).append(q)
    out = np.zeros((samples, scores.shape[0]))
    for members in groups.values():
        block = scores[:, members]
        for b in range(samples):
            drawn = rng.integers(0, len(members), size=len(members), dtype=np.int64)
            out[b] += block[:, drawn].mean(axis=1)
    return out / len(groups)


# --- known properties ---


def test_identical_systems_have_p_one_and_share_the_top_group() -> None:
    x = random_scores(1)[0]
    result = paired_bootstrap(np.stack([x, x, x * 0.5]), names=["a", "b", "c"], samples=500)
    a, b, c = result.systems
    assert result.leader == "a"  # observed tie: the first system leads
    assert a.p_value is None and b.p_value == 1.0
    assert a.top_group and b.top_group and not c.top_group
    assert result.top_group == ["a", "b"]
    assert a.ci_low == b.ci_low and a.ci_high == b.ci_high


def test_a_system_worse_on_every_question_gets_the_smallest_p() -> None:
    x = random_scores(1)[0]
    result = paired_bootstrap(np.stack([x - 0.01, x]), names=["worse", "better"], samples=999)
    assert result.leader == "better"
    assert result.systems[0].p_value == pytest.approx(1 / 1000, rel=1e-12)
    assert not result.systems[0].top_group


def test_a_tiny_difference_on_a_few_questions_is_not_significant() -> None:
    x = random_scores(1, questions=500)[0]
    y = x.copy()
    y[:3] += 0.05
    result = paired_bootstrap(np.stack([x, y]), samples=1000)
    assert result.leader == "system2"
    assert result.systems[0].p_value is not None and result.systems[0].p_value > 0.05
    assert result.top_group == ["system2", "system1"]


def test_p_counts_ties_as_at_least_as_good() -> None:
    # The systems differ on one question only: resamples that miss it are exact ties.
    x = np.zeros(10)
    y = x.copy()
    y[0] = 1.0
    result = paired_bootstrap(np.stack([x, y]), samples=2000, seed=3)
    counts = resample_counts(None, 10, samples=2000, seed=3)
    ties = int((counts[:, 0] == 0).sum())
    assert result.systems[0].p_value == pytest.approx((ties + 1) / 2001, rel=1e-12)
    assert 0.3 < ties / 2000 < 0.4  # (9/10)^10 ~ 0.35


def test_confidence_intervals_contain_the_observed_mean() -> None:
    scores = random_scores(4, 300)
    result = paired_bootstrap(scores, samples=1000, level=0.9)
    for s, summary in enumerate(result.systems):
        assert summary.score == pytest.approx(scores[s].mean(), rel=1e-12)
        assert summary.ci_low < summary.score < summary.ci_high
    wide = paired_bootstrap(scores, samples=1000, level=0.99)
    assert all(w.ci_low <= n.ci_low and w.ci_high >= n.ci_high for w, n in zip(wide.systems, result.systems))


def test_percentile_interval_is_numpys_quantile_of_the_resamples() -> None:
    scores = random_scores(2, 50)
    result = paired_bootstrap(scores, samples=400, level=0.8)
    low, high = np.quantile(result.resampled, [0.1, 0.9], axis=0)
    assert [s.ci_low for s in result.systems] == list(low)
    assert [s.ci_high for s in result.systems] == list(high)


def test_lower_is_better() -> None:
    x = random_scores(1)[0]
    result = paired_bootstrap(np.stack([x, x + 0.1]), names=["low", "high"], samples=200, higher_is_better=False)
    assert result.leader == "low"
    assert result.systems[1].p_value == pytest.approx(1 / 201, rel=1e-12)
    assert [s.name for s in result.ranked()] == ["low", "high"]


def test_a_single_system_has_an_interval_and_no_p_value() -> None:
    result = paired_bootstrap(random_scores(1), samples=100)
    assert result.leader == "system1" and result.systems[0].p_value is None and result.top_group == ["system1"]


# --- reproducibility and the vectorised computation ---


def test_same_seed_same_result_different_seed_different_result() -> None:
    scores = random_scores()
    a = paired_bootstrap(scores, samples=300, seed=11)
    b = paired_bootstrap(scores, samples=300, seed=11)
    c = paired_bootstrap(scores, samples=300, seed=12)
    assert np.array_equal(a.resampled, b.resampled) and a.systems == b.systems
    assert not np.array_equal(a.resampled, c.resampled)


@pytest.mark.parametrize("chunk_elements", [1, 7, 200, 1000, 10**9])
def test_results_do_not_depend_on_the_chunk_size(chunk_elements: int) -> None:
    scores = random_scores(3, 100)
    strata = ["a"] * 30 + ["b"] * 70
    reference = paired_bootstrap(scores, samples=50, seed=5, strata=strata)
    chunked = paired_bootstrap(scores, samples=50, seed=5, strata=strata, chunk_elements=chunk_elements)
    np.testing.assert_allclose(chunked.resampled, reference.resampled, rtol=1e-12)
    assert [s.p_value for s in chunked.systems] == [s.p_value for s in reference.systems]


def test_vectorised_bootstrap_equals_a_naive_loop() -> None:
    scores = random_scores(3, 40)
    result = paired_bootstrap(scores, samples=200, seed=9)
    naive = naive_bootstrap(scores, 200, 9)
    np.testing.assert_allclose(result.resampled, naive, rtol=1e-12)
    leader = int(np.argmax(scores.mean(axis=1)))
    for s, summary in enumerate(result.systems):
        if s != leader:
            wins = int((naive[:, s] >= naive[:, leader] - 1e-12).sum())
            assert summary.p_value == pytest.approx((wins + 1) / 201, rel=1e-12)


def test_vectorised_stratified_bootstrap_equals_a_naive_loop() -> None:
    scores = random_scores(2, 45)
    strata = ["x", "y", "z"] * 15
    result = paired_bootstrap(scores, samples=100, seed=4, strata=strata)
    np.testing.assert_allclose(result.resampled, naive_bootstrap(scores, 100, 4, strata), rtol=1e-12)


def test_chunks_stay_within_the_memory_bound() -> None:
    rng = np.random.default_rng(0)
    chunks = list(_count_chunks(1000, 100, rng, chunk_elements=25_000))
    assert [start for start, _ in chunks] == [0, 25, 50, 75]
    assert all(counts.size <= 25_000 for _, counts in chunks)
    assert all((counts.sum(axis=1) == 1000).all() for _, counts in chunks)


# --- stratification ---


def test_stratified_resamples_keep_every_stratum_size() -> None:
    strata = ["a", "b", "a", "c", "b", "a", "a"]
    counts = resample_counts(strata, 7, samples=300, seed=2)
    assert counts.shape == (300, 7)
    for label, size in (("a", 4), ("b", 2), ("c", 1)):
        members = [i for i, s in enumerate(strata) if s == label]
        assert (counts[:, members].sum(axis=1) == size).all()
    assert (counts[:, 3] == 1).all()  # a stratum of one question is always drawn once


def test_stratified_score_is_the_macro_average_of_the_strata() -> None:
    # Stratum "big" has 3 questions, "small" 1: the macro average weighs them equally.
    scores = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    result = paired_bootstrap(scores, names=["s", "t"], samples=100, strata=["big", "big", "big", "small"])
    s, t = result.systems
    assert s.score == 0.5 and t.score == 0.5
    assert s.strata == {"big": 1.0, "small": 0.0}
    assert result.strata_sizes == {"big": 3, "small": 1}
    # With these scores the per-stratum means never change, so every resample is the same.
    assert np.all(result.resampled == 0.5)
    assert t.p_value == 1.0 and t.top_group


def test_stratified_and_pooled_bootstraps_differ() -> None:
    scores = random_scores(2, 60)
    strata = ["a"] * 10 + ["b"] * 50
    pooled = paired_bootstrap(scores, samples=100)
    macro = paired_bootstrap(scores, samples=100, strata=strata)
    assert macro.systems[0].score == pytest.approx((scores[0, :10].mean() + scores[0, 10:].mean()) / 2, rel=1e-12)
    assert pooled.systems[0].score != pytest.approx(macro.systems[0].score, rel=1e-6)


# --- corpus-level statistics ---


def bleu_stats(rng: np.random.Generator, questions: int, boost: float) -> FloatArray:
    candidate = rng.integers(5, 30, size=questions).astype(float)
    grams = np.stack([np.maximum(candidate - n, 0) for n in range(4)], axis=1)
    match = np.floor(grams * np.clip(rng.random((questions, 1)) + boost, 0, 1))
    reference = candidate + rng.integers(-3, 4, size=questions)
    return np.concatenate([match, grams, candidate[:, None], reference[:, None]], axis=1)


def test_bleu_bootstrap_uses_corpus_sums() -> None:
    rng = np.random.default_rng(1)
    stats = np.stack([bleu_stats(rng, 80, 0.0), bleu_stats(rng, 80, 0.3)])
    result = paired_bootstrap(stats, names=["a", "b"], samples=300, seed=8, statistic=mrc2018_bleu4)
    for s, summary in enumerate(result.systems):
        total = stats[s].sum(axis=0)
        p = total[0:4] / total[4:8]
        expected = float(np.prod(p) ** 0.25 * np.exp(min(1 - total[9] / total[8], 0.0)))
        assert summary.score == pytest.approx(expected, rel=1e-12)
    assert result.leader == "b"
    # The naive loop: corpus BLEU of each resample's summed statistics.
    loop_rng = np.random.default_rng(8)
    for b in range(300):
        drawn = loop_rng.integers(0, 80, size=80, dtype=np.int64)
        for s in range(2):
            assert result.resampled[b, s] == pytest.approx(float(mrc2018_bleu4(stats[s, drawn].sum(axis=0), 80)),
                                                           rel=1e-12)


def test_bleu_statistic_scores_degenerate_resamples_zero() -> None:
    sums = np.array([[1.0, 0, 0, 0, 3, 2, 1, 0, 3, 3],  # no 4-gram candidate
                     [0.0, 0, 0, 0, 0, 0, 0, 0, 0, 4],  # no candidate at all
                     [4.0, 3, 2, 1, 4, 3, 2, 1, 4, 8]])  # perfect precision, BP = exp(-1)
    np.testing.assert_allclose(mrc2018_bleu4(sums, 1), [0.0, 0.0, np.exp(-1.0)], rtol=1e-12)
    assert len(BLEU4_STATS) == 10


def as_totals(row: FloatArray) -> BleuTotals:
    return BleuTotals(list(row[0:4]), list(row[4:8]), int(row[8]), int(row[9]), 1)


def test_bleu_statistics_agree_with_the_scorers_corpus_bleu() -> None:
    rng = np.random.default_rng(5)
    sums = np.stack([bleu_stats(rng, 40, boost).sum(axis=0) for boost in (0.0, 0.1, 0.5)])
    sums = np.concatenate([sums, [[3.0, 1, 0, 0, 5, 4, 3, 2, 5, 9], [0.0, 0, 0, 0, 0, 0, 0, 0, 0, 4]]])
    for row in sums:
        assert float(coco_bleu4(row, 1)) == pytest.approx(coco_bleu(as_totals(row)), rel=1e-12, abs=1e-300)
        assert float(mrc2018_bleu4(row, 1)) == pytest.approx(mrc_bleu(as_totals(row), lic2019_guards=True),
                                                            rel=1e-12)


def test_an_undefined_statistic_on_the_test_set_is_an_error() -> None:
    def broken(sums: FloatArray, n: int) -> FloatArray:
        result: FloatArray = sums[..., 0] / 0.0
        return result

    with np.errstate(divide="ignore", invalid="ignore"), pytest.raises(UndefinedMetricError):
        paired_bootstrap(np.zeros((2, 3, 1)), samples=10, statistic=broken)


@pytest.mark.parametrize(
    ("kwargs", "scores"),
    [
        ({}, np.zeros(3)),
        ({}, np.zeros((2, 3, 2))),
        ({}, np.zeros((0, 3))),
        ({}, np.array([[0.0, np.nan]])),
        ({"samples": 0}, np.zeros((1, 3))),
        ({"level": 1.0}, np.zeros((1, 3))),
        ({"alpha": 0.0}, np.zeros((1, 3))),
        ({"names": ["a", "b"]}, np.zeros((1, 3))),
        ({"strata": ["a"]}, np.zeros((1, 3))),
        ({"chunk_elements": 0}, np.zeros((1, 3))),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], scores: FloatArray) -> None:
    with pytest.raises(ValueError):
        paired_bootstrap(scores, **kwargs)


# --- aligning per-example records ---


def test_records_are_aligned_by_id() -> None:
    systems = {
        "a": [{"id": "q1", "f1": 1.0, "dataset": "X"}, {"id": "q2", "f1": 0.5, "dataset": "Y"}],
        "b": [{"id": "q2", "f1": 0.25, "dataset": "Y"}, {"id": "q1", "f1": True, "dataset": "X"}],
    }
    aligned = align_per_example(systems, "f1", stratify="dataset")
    assert aligned.names == ("a", "b") and aligned.ids == ("q1", "q2")
    np.testing.assert_array_equal(aligned.scores, [[1.0, 0.5], [1.0, 0.25]])
    assert aligned.strata == ("X", "Y") and aligned.filled == (0, 0)


def test_different_question_sets_are_a_clear_error() -> None:
    systems = {"a": [{"id": "q1", "f1": 1.0}, {"id": "q2", "f1": 0.5}], "b": [{"id": "q1", "f1": 0.0},
                                                                           {"id": "q3", "f1": 0.0}]}
    with pytest.raises(InputFormatError) as exc:
        align_per_example(systems, "f1", sources={"b": "b.json"})
    message = str(exc.value)
    assert message.startswith("b.json: ")
    assert "lacks 1 question(s) that 'a' has (e.g. 'q2')" in message
    assert "has 1 question(s) that 'a' lacks (e.g. 'q3')" in message


def test_missing_as_zero_fills_the_union() -> None:
    systems = {"a": [{"id": "q1", "f1": 1.0}, {"id": "q2", "f1": 0.5}], "b": [{"id": "q3", "f1": 0.75}]}
    aligned = align_per_example(systems, "f1", missing="zero")
    assert aligned.ids == ("q1", "q2", "q3")
    np.testing.assert_array_equal(aligned.scores, [[1.0, 0.5, 0.0], [0.0, 0.0, 0.75]])
    assert aligned.filled == (1, 2)


def test_repeated_ids_keep_the_last_record_or_fail_in_strict_mode() -> None:
    systems = {"a": [{"id": "q1", "f1": 1.0}, {"id": "q1", "f1": 0.5}]}
    warnings: list[str] = []
    aligned = align_per_example(systems, "f1", warn=warnings.append)
    assert aligned.scores.tolist() == [[0.5]] and "'q1' appears more than once" in warnings[0]
    with pytest.raises(InputFormatError, match="more than once"):
        align_per_example(systems, "f1", strict=True)


def test_vector_statistics_are_aligned() -> None:
    systems = {"a": [{"id": "q1", "s": [1, 2]}, {"id": "q2", "s": [3, 4]}], "b": [{"id": "q2", "s": [5, 6]},
                                                                              {"id": "q1", "s": [7, 8]}]}
    aligned = align_per_example(systems, "s", vector=True)
    assert aligned.scores.shape == (2, 2, 2)
    np.testing.assert_array_equal(aligned.scores[1], [[7, 8], [5, 6]])
    with pytest.raises(InputFormatError, match="has 1 statistics, expected 2"):
        align_per_example({"a": [{"id": "q1", "s": [1, 2]}, {"id": "q2", "s": [3]}]}, "s", vector=True)


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([{"f1": 1.0}], "record 1 needs a string field 'id'"),
        ([3], "record 1 should be an object"),
        ([{"id": "q1", "em": 1.0}], "missing field 'f1' (the record has: em)"),
        ([{"id": "q1", "f1": "1"}], "field 'f1' should be a finite number"),
        ([{"id": "q1", "f1": None}], "field 'f1' should be a finite number"),
        ([{"id": "q1", "f1": float("nan")}], "field 'f1' should be a finite number"),
        ([], "no per-example records"),
    ],
)
def test_bad_records(records: list[Any], expected: str) -> None:
    with pytest.raises(InputFormatError) as exc:
        align_per_example({"sys": records}, "f1", sources={"sys": "sys.json"})
    assert "sys.json" in str(exc.value) and expected in str(exc.value)


def test_conflicting_stratum_labels_are_an_error() -> None:
    systems = {"a": [{"id": "q1", "f1": 1.0, "dataset": "X"}], "b": [{"id": "q1", "f1": 1.0, "dataset": "Y"}]}
    with pytest.raises(InputFormatError, match="'dataset' is 'Y' here but 'X' in another system"):
        align_per_example(systems, "f1", stratify="dataset")
    with pytest.raises(InputFormatError, match="missing stratum field 'source'"):
        align_per_example(systems, "f1", stratify="source")


# --- command line ---


def write_per_example(tmp_path: Path, name: str, values: list[float], datasets: list[str] | None = None) -> str:
    records = [{"id": f"q{i}", "f1": v} for i, v in enumerate(values)]
    if datasets:
        for record, dataset in zip(records, datasets):
            record["dataset"] = dataset
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return str(path)


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = random_scores(3, 120)
    paths = [write_per_example(tmp_path, n, list(scores[i])) for i, n in enumerate("abc")]
    out_path = tmp_path / "summary.json"
    code, out, err = run_cli(["significance", "--metric", "f1", "--samples", "300", "--seed", "2",
                              "--per-example", str(out_path), *(f"{n}={p}" for n, p in zip("abc", paths))], capsys)
    assert code == 0 and err == ""
    expected = paired_bootstrap(scores, names=list("abc"), samples=300, seed=2)
    assert out["leader"] == expected.leader and out["questions"] == 120 and out["samples"] == 300
    assert out["top_group"] == expected.top_group
    by_name = {s["name"]: s for s in out["systems"]}
    for summary in expected.systems:
        assert by_name[summary.name]["score"] == pytest.approx(summary.score, rel=1e-12)
        assert by_name[summary.name]["ci"] == pytest.approx([summary.ci_low, summary.ci_high], rel=1e-12)
        assert by_name[summary.name]["p_value"] == summary.p_value
    assert [s["score"] for s in out["systems"]] == sorted((s["score"] for s in out["systems"]), reverse=True)
    assert json.loads(out_path.read_text())[0]["id"] == out["systems"][0]["name"]


def test_cli_stratified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    datasets = ["SQuAD", "NewsQA"] * 20
    a = write_per_example(tmp_path, "a", [1.0, 0.0] * 20, datasets)
    b = write_per_example(tmp_path, "b", [0.0, 0.5] * 20, datasets)
    code, out, _ = run_cli(["significance", "--metric", "f1", "--stratify", "dataset", "--samples", "100",
                            f"A={a}", f"B={b}"], capsys)
    assert code == 0
    assert out["strata"] == {"SQuAD": 20, "NewsQA": 20}
    assert out["leader"] == "A" and out["systems"][0]["strata"] == {"SQuAD": 1.0, "NewsQA": 0.0}
    assert out["systems"][1]["score"] == 0.25


def test_cli_missing_as_zero_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_per_example(tmp_path, "a", [1.0, 0.0, 1.0])
    b = write_per_example(tmp_path, "b", [1.0, 0.0])
    code, _, err = run_cli(["significance", "--metric", "f1", f"A={a}", f"B={b}"], capsys)
    assert code == 1 and "lacks 1 question(s)" in err and err.count("\n") == 1
    code, out, err = run_cli(["significance", "--metric", "f1", "--missing", "zero", "--samples", "50",
                              f"A={a}", f"B={b}"], capsys)
    assert code == 0 and f"{b}: 1 question(s) missing, scored 0" in err


def test_cli_bleu_statistic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    for name, boost in (("a", 0.0), ("b", 0.2)):
        stats = bleu_stats(rng, 30, boost)
        (tmp_path / f"{name}.json").write_text(json.dumps([{"id": f"q{i}", "bleu": list(row)}
                                                           for i, row in enumerate(stats)]))
    code, out, _ = run_cli(["significance", "--metric", "bleu", "--statistic", "mrc2018_bleu4", "--samples", "100",
                            f"A={tmp_path / 'a.json'}", f"B={tmp_path / 'b.json'}"], capsys)
    assert code == 0 and out["statistic"] == "mrc2018_bleu4" and out["leader"] == "B"
    (tmp_path / "c.json").write_text(json.dumps([{"id": f"q{i}", "bleu": [1, 2]} for i in range(30)]))
    code, _, err = run_cli(["significance", "--metric", "bleu", "--statistic", "mrc2018_bleu4",
                            f"C={tmp_path / 'c.json'}"], capsys)
    assert code == 1 and "needs 10 statistics per question, found 2" in err


def test_cli_bleu_from_dureader_per_example_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(4)
    stats = {name: bleu_stats(rng, 25, boost) for name, boost in (("a", 0.0), ("b", 0.3))}
    for name, rows in stats.items():
        records: list[dict[str, Any]] = [
            {"id": f"q{i}", "source": "search", "rouge_l": 0.5, "bleu_correct": list(row[0:4]),
             "bleu_guess": list(row[4:8]), "test_len": int(row[8]), "ref_len": int(row[9])}
            for i, row in enumerate(rows)]
        # A question outside the BLEU set (entity task) has null statistics and is left out.
        records.append({"id": "other", "bleu_correct": None, "bleu_guess": None, "test_len": None, "ref_len": None})
        (tmp_path / f"{name}.json").write_text(json.dumps(records))
    code, out, err = run_cli(["significance", "--statistic", "dureader_bleu4", "--samples", "50",
                              f"A={tmp_path / 'a.json'}", f"B={tmp_path / 'b.json'}"], capsys)
    assert code == 0, err
    assert out["questions"] == 25 and out["leader"] == "B"
    score = {s["name"]: s["score"] for s in out["systems"]}
    assert score["A"] == pytest.approx(coco_bleu(as_totals(stats["a"].sum(axis=0))), rel=1e-12)
    code, _, err = run_cli(["significance", "--statistic", "dureader_bleu4", f"X={tmp_path / 'a.json'}",
                            f"Y={write_per_example(tmp_path, 'f1', [1.0])}"], capsys)
    assert code == 1 and "no record has the BLEU statistics" in err
    code, _, err = run_cli(["significance", f"X={tmp_path / 'a.json'}"], capsys)
    assert code == 1 and "--metric is required" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"[{\"id\": \"q1\", ", "invalid JSON"),
        (b"\xff", "not valid UTF-8"),
        (b"{\"q1\": 1}", "expected a JSON list of per-example records"),
        (b"[{\"id\": \"q1\", \"em\": 1}]", "id 'q1': missing field 'f1'"),
    ],
)
def test_cli_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    code, out, err = run_cli(["significance", "--metric", "f1", f"X={bad}"], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert str(bad) in err and expected in err and "Traceback" not in err


def test_cli_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_per_example(tmp_path, "a", [1.0])
    code, _, err = run_cli(["significance", "--metric", "f1", f"A={a}", f"A={a}"], capsys)
    assert code == 1 and "system name 'A' is given twice" in err
    code, _, err = run_cli(["significance", "--metric", "f1", "--samples", "0", f"A={a}"], capsys)
    assert code == 1 and "--samples" in err
    code, _, err = run_cli(["significance", "--metric", "f1", "--level", "95", f"A={a}"], capsys)
    assert code == 1 and "--level" in err
    code, _, err = run_cli(["significance", "--metric", "f1", f"A={tmp_path / 'none.json'}"], capsys)
    assert code == 1 and "file not found" in err
    code, out, _ = run_cli(["significance", "--metric", "f1", "--samples", "10", a], capsys)
    assert code == 0 and out["leader"] == "a.json"  # a bare FILE is named by its file name
