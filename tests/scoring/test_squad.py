"""SQuAD v1.1 and v2.0 (spec 1-2): golden cases, the real dev sets, a plain reference, quirks, bad inputs."""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scoring.cli import main
from scoring.errors import InputFormatError, ScoringError, UndefinedMetricError
from scoring.io import load_prediction_map
from scoring.result import EvalResult
from scoring.squad import (
    CachedScorer,
    evaluate_squad_v1,
    evaluate_squad_v2,
    find_best_thresh,
    load_na_probs,
    load_squad_dataset,
)
from scoring.text import f1_v1, f1_v2, normalize_answer
from tests.builders.shared import shared_path
from tests.scoring.helpers import parametrize_golden
from tests.scoring.helpers import run_cli as _cli

REL = 1e-9


def _close(a: Any, b: Any) -> bool:
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, (int, float)):
        return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)
    return bool(a == b)


def _write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _dataset(*qas: tuple[str, list[str]], version: str = "1.1") -> dict[str, Any]:
    return {
        "version": version,
        "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [
            {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in answers]}
            for qid, answers in qas
        ]}]}],
    }


def _assert_error_line(code: int, err: str, *needles: str) -> None:
    assert code == 1
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[-1]


# --------------------------------------------------------------------------- golden cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_golden(metafunc, "v1_case", "squad_v1")
    parametrize_golden(metafunc, "v2_case", "squad_v2")


def _run_golden(case: Path, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                tmp_path: Path) -> None:
    spec = json.loads((case / "case.json").read_text())
    monkeypatch.chdir(case)
    per_example = tmp_path / "per_example.json"
    code, out, err = _cli(capsys, command, *spec["official_arguments"][1:], "--per-example", per_example)
    if (case / "expected_error.json").exists():
        # The official script crashed; we must fail with one clear line, never a number.
        _assert_error_line(code, err)
        return
    assert code == 0, err
    expected = json.loads((case / "expected.json").read_text())
    assert list(out) == list(expected)
    for key, value in expected.items():
        assert _close(out[key], value), (key, out[key], value)
    expected_rows = case / "expected_per_example.json"
    if expected_rows.exists():
        rows = json.loads(per_example.read_text())
        wanted = json.loads(expected_rows.read_text())
        assert [r["id"] for r in rows] == [w["id"] for w in wanted]
        for row, want in zip(rows, wanted, strict=True):
            for key, value in want.items():
                assert _close(row[key], value), (row["id"], key, row[key], value)


@pytest.mark.shared
def test_squad_v1_golden_case(v1_case: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                              tmp_path: Path) -> None:
    _run_golden(v1_case, "squad1", capsys, monkeypatch, tmp_path)


@pytest.mark.shared
def test_squad_v2_golden_case(v2_case: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                              tmp_path: Path) -> None:
    _run_golden(v2_case, "squad2", capsys, monkeypatch, tmp_path)


@pytest.mark.shared
def test_squad_v2_golden_case_via_python_api(v2_case: Path) -> None:
    args = json.loads((v2_case / "case.json").read_text())["official_arguments"][1:]

    def run() -> EvalResult:
        na_probs = load_na_probs(v2_case / args[args.index("-n") + 1]) if "-n" in args else None
        thresh = float(args[args.index("-t") + 1]) if "-t" in args else 1.0
        return evaluate_squad_v2(load_squad_dataset(v2_case / args[0]), load_prediction_map(v2_case / args[1]),
                                 na_probs, na_prob_thresh=thresh)

    if (v2_case / "expected_error.json").exists():
        with pytest.raises(ScoringError):
            run()
        return
    result = run()
    expected = json.loads((v2_case / "expected.json").read_text())
    assert all(_close(result.metrics[k], v) for k, v in expected.items())


# --------------------------------------------------------------------------- the real dev sets


def _first_gold_predictions(dataset: dict[str, Any]) -> dict[str, str]:
    return {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "")
            for article in dataset["data"] for p in article["paragraphs"] for qa in p["qas"]}


@pytest.mark.shared
def test_real_squad_v1_dev_scored_with_its_first_golds_is_perfect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = shared_path("data", "squad-v1.1", "dev-v1.1.json")
    pred = _write(tmp_path / "pred.json", _first_gold_predictions(json.loads(path.read_text())))
    start = time.perf_counter()
    code, out, _ = _cli(capsys, "squad1", path, pred)
    assert time.perf_counter() - start < 10
    assert code == 0
    assert out == {"exact_match": 100.0, "f1": 100.0}


@pytest.mark.shared
def test_real_squad_v2_dev_scored_with_first_golds_and_abstentions_is_perfect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = shared_path("data", "squad-v2.0", "dev-v2.0.json")
    preds = _first_gold_predictions(json.loads(path.read_text()))
    pred = _write(tmp_path / "pred.json", preds)
    na = _write(tmp_path / "na.json", {qid: 0.0 if text else 1.0 for qid, text in preds.items()})
    code, out, _ = _cli(capsys, "squad2", path, pred, "-n", na, "-t", "0.5")
    assert code == 0
    assert out["exact"] == out["f1"] == out["HasAns_exact"] == out["NoAns_f1"] == 100.0
    assert out["total"] == 6078 and out["NoAns_total"] == 3168
    assert out["best_exact"] == 100.0 and out["best_exact_thresh"] == 0.0


# --------------------------------------------------------------------------- a plain reference
# The official functions restated directly on the plain text helpers, to check
# the batch normalisation, multisets and caches on random inputs.


def _ref_v1(dataset: dict[str, Any], preds: dict[str, str]) -> dict[str, float]:
    em = f1 = 0.0
    total = 0
    for article in dataset["data"]:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                total += 1
                if qa["id"] not in preds:
                    continue
                golds = [a["text"] for a in qa["answers"]]
                pred = preds[qa["id"]]
                em += max(normalize_answer(pred) == normalize_answer(g) for g in golds)
                f1 += max(f1_v1(pred, g) for g in golds)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}


def _ref_v2_raw(dataset: dict[str, Any], preds: dict[str, str]) -> tuple[dict[str, int], dict[str, float]]:
    exact: dict[str, int] = {}
    f1: dict[str, float] = {}
    for article in dataset["data"]:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
                pred = preds[qa["id"]]
                exact[qa["id"]] = max(int(normalize_answer(g) == normalize_answer(pred)) for g in golds)
                f1[qa["id"]] = max(f1_v2(pred, g) for g in golds)
    return exact, f1


WORDS = ["the", "a", "an", "The", "cat", "dog", "Cat.", "dog,", "1,204", "3.5%", "well-known", "\u201cq\u201d",
         "\u2014", "\u0130", "S\u00e3o", "", " ", ".", "an apple", "x\u00a0y", "\u03a3\u039f\u03a3", "cat cat", "\x00"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))


def test_v1_matches_the_plain_reference_on_random_inputs() -> None:
    rng = random.Random(7)
    for _ in range(300):
        qids = [f"q{rng.randint(0, 8)}" for _ in range(rng.randint(1, 10))]
        data = _dataset(*[(q, [_text(rng) for _ in range(rng.randint(1, 3))]) for q in qids])
        preds = {q: _text(rng) for q in set(qids) if rng.random() < 0.8}
        got = evaluate_squad_v1(data, preds).metrics
        want = _ref_v1(data, preds)
        assert all(_close(got[k], want[k]) for k in want), (data, preds)


def test_v2_raw_scores_match_the_plain_reference_on_random_inputs() -> None:
    rng = random.Random(8)
    for _ in range(300):
        qids = [f"q{i}" for i in range(rng.randint(1, 10))]
        data = _dataset(*[(q, [_text(rng) for _ in range(rng.choice([0, 0, 1, 2]))]) for q in qids])
        preds = {q: _text(rng) if rng.random() < 0.6 else "" for q in qids}
        rows = evaluate_squad_v2(data, preds).per_example
        exact, f1 = _ref_v2_raw(data, preds)
        assert [r["exact_raw"] for r in rows] == [exact[q] for q in qids]
        assert all(_close(r["f1_raw"], f1[q]) for r, q in zip(rows, qids, strict=True))


def test_cached_scorer_agrees_with_the_one_string_functions() -> None:
    rng = random.Random(9)
    scorer = CachedScorer()
    for _ in range(2000):
        pred, golds = _text(rng), [_text(rng) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.5:
            scorer.prime([pred, *golds])
        em, f1 = scorer.best_v1(pred, golds)
        assert em == max(normalize_answer(pred) == normalize_answer(g) for g in golds)
        assert f1 == pytest.approx(max(f1_v1(pred, g) for g in golds), rel=1e-12)


def test_repeated_tokens_are_counted_as_a_multiset() -> None:
    assert CachedScorer().best_v1("cat cat dog", ["cat dog dog"]) == pytest.approx((0, 2 / 3))
    assert CachedScorer().best_v1("cat cat", ["cat dog"]) == pytest.approx((0, 0.5))
    assert CachedScorer().best_v1("cat dog", ["cat cat cat"]) == pytest.approx((0, 0.4))


# --------------------------------------------------------------------------- v1.1 behaviour


def test_v1_scores_every_occurrence_of_a_repeated_qid_and_warns() -> None:
    data = _dataset(("q1", ["cat"]), ("q1", ["dog"]))
    result = evaluate_squad_v1(data, {"q1": "cat"})
    assert result.metrics == {"exact_match": 50.0, "f1": 50.0}
    assert any("repeated question id" in w for w in result.warnings)


def test_v1_missing_predictions_score_zero_with_one_notice_each_up_to_a_limit() -> None:
    data = _dataset(*[(f"q{i}", ["cat"]) for i in range(30)])
    result = evaluate_squad_v1(data, {"q0": "cat"})
    assert result.metrics["exact_match"] == pytest.approx(100 / 30)
    assert result.warnings[0] == "Unanswered question q1 will receive score 0."
    assert result.warnings[-1] == "... and 9 more unanswered questions (each scores 0)"
    assert result.per_example[1] == {"id": "q1", "exact_match": 0, "f1": 0.0, "missing": True}


def test_v1_warns_about_a_missing_or_different_version() -> None:
    data = _dataset(("q1", ["cat"]), version="1.0")
    assert "Evaluation expects v-1.1, but got dataset with v-1.0" in evaluate_squad_v1(data, {"q1": "cat"}).warnings
    del data["version"]
    assert any("no 'version'" in w for w in evaluate_squad_v1(data, {"q1": "cat"}).warnings)


def test_v1_question_without_answers_is_an_error_only_when_scored() -> None:
    data = _dataset(("q1", ["cat"]), ("q2", []))
    assert evaluate_squad_v1(data, {"q1": "cat"}).metrics["exact_match"] == 50.0
    with pytest.raises(InputFormatError, match="at least one gold answer") as info:
        evaluate_squad_v1(data, {"q1": "cat", "q2": "dog"})
    assert info.value.qid == "q2"


def test_empty_dataset_is_undefined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UndefinedMetricError):
        evaluate_squad_v1({"version": "1.1", "data": []}, {})
    with pytest.raises(UndefinedMetricError):
        evaluate_squad_v2({"data": []}, {})
    ds = _write(tmp_path / "d.json", {"version": "1.1", "data": []})
    pred = _write(tmp_path / "p.json", {})
    code, out, err = _cli(capsys, "squad1", ds, pred)
    _assert_error_line(code, err, "no questions")
    assert out is None


# --------------------------------------------------------------------------- v2.0 behaviour


def test_v2_missing_prediction_is_an_error_naming_the_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(*[(f"q{i}", ["cat"] if i % 2 else []) for i in range(8)], version="v2.0"))
    pred = _write(tmp_path / "p.json", {"q0": "", "q1": "cat", "q5": "cat"})
    code, out, err = _cli(capsys, "squad2", ds, pred)
    _assert_error_line(code, err, "p.json", "'q2'", "5 of 8 questions have no prediction", "--missing-as-empty")
    assert out is None


def test_missing_as_empty_scores_exactly_like_an_explicit_abstention() -> None:
    rng = random.Random(3)
    for _ in range(200):
        qids = [f"q{i}" for i in range(rng.randint(1, 8))]
        data = _dataset(*[(q, [_text(rng) for _ in range(rng.choice([0, 1, 2]))]) for q in qids], version="v2.0")
        preds = {q: _text(rng) for q in qids if rng.random() < 0.6}
        filled = {q: preds.get(q, "") for q in qids}
        thresh = rng.choice([1.0, 0.5, -1.0])
        lenient = evaluate_squad_v2(data, preds, na_prob_thresh=thresh, missing_as_empty=True)
        explicit = evaluate_squad_v2(data, filled, na_prob_thresh=thresh)
        assert lenient.metrics == explicit.metrics
        assert [r["missing"] for r in lenient.per_example] == [q not in preds for q in qids]


def test_missing_as_empty_takes_na_prob_1_when_the_na_prob_file_lacks_the_question_too() -> None:
    data = _dataset(("q1", ["cat"]), ("q2", []), ("q3", []), version="v2.0")
    result = evaluate_squad_v2(data, {"q1": "cat", "q2": "dog"}, {"q1": 0.1, "q2": 0.9},
                               na_prob_thresh=0.5, missing_as_empty=True)
    assert result.per_example[2]["na_prob"] == 1.0 and result.per_example[2]["missing"]
    assert result.metrics["exact"] == 100.0  # q2 thresholded to an abstention, q3 abstained
    # Without the threshold q2's "dog" is a wrong answer; abstaining on q2 and q3 is best.
    assert result.metrics["best_exact"] == 100.0 and result.metrics["best_exact_thresh"] == 0.1


def test_na_prob_file_must_cover_every_scored_question(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["cat"]), ("q2", []), version="v2.0"))
    pred = _write(tmp_path / "p.json", {"q1": "cat", "q2": ""})
    na = _write(tmp_path / "na.json", {"q1": 0.3})
    code, _, err = _cli(capsys, "squad2", ds, pred, "-n", na)
    _assert_error_line(code, err, "na.json", "'q2'", "no-answer probability")
    _write(na, {"q1": 0.3, "q2": "high"})
    code, _, err = _cli(capsys, "squad2", ds, pred, "-n", na)
    _assert_error_line(code, err, "na.json", "'q2'", "should be a number")


def test_threshold_applies_without_na_prob_file_as_the_official_zero_probabilities() -> None:
    # Without -n every probability is 0.0, so only a negative threshold abstains everywhere.
    data = _dataset(("q1", ["cat"]), ("q2", []), version="v2.0")
    preds = {"q1": "cat", "q2": "dog"}
    assert evaluate_squad_v2(data, preds).metrics["exact"] == 50.0
    assert evaluate_squad_v2(data, preds, na_prob_thresh=-0.5).metrics["exact"] == 50.0
    assert evaluate_squad_v2(data, preds, na_prob_thresh=-0.5).per_example[1]["exact"] == 1.0


def test_best_threshold_does_not_group_ties_and_keeps_file_order() -> None:
    has_ans = {"a": True, "b": False, "c": True}
    scores = {"a": 1.0, "b": 0.0, "c": 1.0}
    preds = {"a": "x", "b": "y", "c": "z"}
    # a and b tie at 0.5.  In file order a (+1) is counted before b (-1), so the best
    # (3 of 3) is reached in the middle of the tie; grouped, the tie would net 0.
    # The threshold is one of the given probabilities, so it is compared exactly; the score approximately.
    best, thresh = find_best_thresh(preds, scores, {"a": 0.5, "b": 0.5, "c": 0.1}, has_ans)
    assert best == pytest.approx(100.0) and thresh == 0.5
    # The same probabilities in the other file order: b first, and the best stays at c.
    best, thresh = find_best_thresh(preds, scores, {"b": 0.5, "a": 0.5, "c": 0.1}, has_ans)
    assert best == pytest.approx(200 / 3) and thresh == 0.1
    # cur starts at the number of unanswerable questions (1), denominator len(scores).
    best, thresh = find_best_thresh(preds, scores, {"b": 0.2, "a": 0.5, "c": 0.6}, has_ans)
    assert best == pytest.approx(200 / 3) and thresh == 0.6


def test_best_threshold_counts_a_blank_answer_as_an_answer() -> None:
    # " " scores EM 1 on an unanswerable question but is truthy in find_best_thresh (spec 2.6).
    data = _dataset(("q1", []), version="v2.0")
    result = evaluate_squad_v2(data, {"q1": " "}, {"q1": 0.2})
    assert result.metrics["exact"] == 100.0
    assert result.metrics["best_exact"] == 100.0 and result.metrics["best_exact_thresh"] == 0.0


def test_v2_repeated_qid_keeps_the_last_answers_and_strict_rejects_it() -> None:
    data = _dataset(("q1", ["cat"]), ("q2", ["dog"]), ("q1", []), version="v2.0")
    result = evaluate_squad_v2(data, {"q1": "", "q2": "dog"})
    assert result.metrics["total"] == 2 and result.metrics["exact"] == 100.0
    assert [r["id"] for r in result.per_example] == ["q1", "q2"]
    with pytest.raises(InputFormatError, match=r"qas\[2\]: question id already used at .*qas\[0\]"):
        evaluate_squad_v2(data, {"q1": "", "q2": "dog"}, strict=True)


def test_v2_per_example_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["the cat"]), ("q2", []), version="v2.0"))
    pred = _write(tmp_path / "p.json", {"q1": "cat", "q2": "dog"})
    na = _write(tmp_path / "na.json", {"q1": 0.2, "q2": 0.8})
    rows_path = tmp_path / "rows.json"
    code, out, _ = _cli(capsys, "squad2", ds, pred, "-n", na, "-t", "0.5", "--per-example", rows_path)
    assert code == 0
    assert json.loads(rows_path.read_text()) == [
        {"id": "q1", "has_ans": True, "exact_raw": 1, "f1_raw": 1.0, "missing": False,
         "exact": 1, "f1": 1.0, "na_prob": 0.2},
        {"id": "q2", "has_ans": False, "exact_raw": 0, "f1_raw": 0.0, "missing": False,
         "exact": 1.0, "f1": 1.0, "na_prob": 0.8},
    ]
    assert out["NoAns_exact"] == 100.0


# --------------------------------------------------------------------------- command line


def test_official_rounding_changes_nothing_because_the_scripts_do_not_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["b c d"]), ("q2", ["x y z"]), ("q3", ["q"])))
    pred = _write(tmp_path / "p.json", {"q1": "b c", "q2": "x", "q3": "q"})
    _, plain, _ = _cli(capsys, "squad1", ds, pred)
    _, rounded, _ = _cli(capsys, "squad1", ds, pred, "--official-rounding")
    assert plain == rounded and plain["f1"] == pytest.approx(100 * (0.8 + 0.5 + 1) / 3)
    _, plain2, _ = _cli(capsys, "squad2", ds, pred)
    _, rounded2, _ = _cli(capsys, "squad2", ds, pred, "--official-rounding")
    assert plain2 == rounded2


def test_out_file_and_ignored_options_of_the_official_v2_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["cat"]), version="v2.0"))
    pred = _write(tmp_path / "p.json", {"q1": "cat"})
    out_file = tmp_path / "eval.json"
    code, out, err = _cli(capsys, "squad2", ds, pred, "-o", out_file, "-p", tmp_path / "img", "-v")
    assert code == 0
    assert json.loads(out_file.read_text()) == out == {
        "exact": 100.0, "f1": 100.0, "total": 1, "HasAns_exact": 100.0, "HasAns_f1": 100.0, "HasAns_total": 1}
    assert "--out-image-dir" in err and not (tmp_path / "img").exists()


def test_duplicate_prediction_keys_warn_and_strict_rejects_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["cat"])))
    pred = tmp_path / "p.json"
    pred.write_text('{"q1": "dog", "q1": "cat"}', encoding="utf-8")
    code, out, err = _cli(capsys, "squad1", ds, pred)
    assert code == 0 and out["exact_match"] == 100.0 and "appears more than once" in err
    code, out, err = _cli(capsys, "squad1", ds, pred, "--strict")
    _assert_error_line(code, err, "p.json", "'q1'", "more than once")


def test_strict_rejects_a_repeated_dataset_qid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["cat"]), ("q1", ["dog"])))
    pred = _write(tmp_path / "p.json", {"q1": "cat"})
    code, _, err = _cli(capsys, "squad1", ds, pred, "--strict")
    _assert_error_line(code, err, "d.json", "'q1'", "qas[1]", "already used")


@pytest.mark.parametrize(
    ("dataset_text", "needles"),
    [
        ('{"version": "1.1", "data": [', ("d.json", "line 1", "invalid JSON")),
        ('{"version": "1.1",\n "data": {}}', ("d.json", "'data' list")),
        ('[1, 2]', ("d.json", "found list")),
        ('{"data": [{"paragraphs": [{"qas": [{"question": "?"}]}]}]}', ("data[0].paragraphs[0].qas[0]", "string 'id'")),
        ('{"data": [{"paragraphs": [{"qas": [{"id": "q1", "answers": "cat"}]}]}]}', ("'q1'", "'answers'")),
        ('{"data": [{"paragraphs": [{"qas": [{"id": "q1", "answers": [{"text": 3}]}]}]}]}', ("'q1'", "string 'text'")),
        ('{"data": [{"paragraphs": [{"qas": [{"id": 7, "answers": []}]}]}]}', ("qas[0]", "string 'id'")),
        ('{"data": [{"title": "no paragraphs"}]}', ("data[0]", "'paragraphs'")),
    ],
)
def test_bad_datasets_are_one_clear_line(dataset_text: str, needles: tuple[str, ...], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    ds = tmp_path / "d.json"
    ds.write_text(dataset_text, encoding="utf-8")
    pred = _write(tmp_path / "p.json", {"q1": "cat"})
    for command in ("squad1", "squad2"):
        code, out, err = _cli(capsys, command, ds, pred)
        _assert_error_line(code, err, *needles)
        assert out is None


def test_bad_prediction_files_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _write(tmp_path / "d.json", _dataset(("q1", ["cat"])))
    pred = tmp_path / "p.json"
    pred.write_bytes(b'{"q1": "caf\xe9"}')
    code, _, err = _cli(capsys, "squad1", ds, pred)
    _assert_error_line(code, err, "p.json", "UTF-8")
    _write(pred, {"q1": ["cat"]})
    code, _, err = _cli(capsys, "squad2", ds, pred)
    _assert_error_line(code, err, "p.json", "'q1'", "should be a string")
    _write(pred, ["cat"])
    code, _, err = _cli(capsys, "squad1", ds, pred)
    _assert_error_line(code, err, "p.json", "JSON object")
    code, _, err = _cli(capsys, "squad1", ds, tmp_path / "absent.json")
    _assert_error_line(code, err, "absent.json", "not found")


def test_v1_prediction_for_an_unknown_id_is_ignored_even_if_malformed() -> None:
    result = evaluate_squad_v1(_dataset(("q1", ["cat"])), {"q1": "cat", "zz": ["junk"]})
    assert result.metrics["exact_match"] == 100.0


def test_help_documents_the_missing_prediction_policy(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["squad2", "--help"])
    text = capsys.readouterr().out
    assert "--missing-as-empty" in text and "KeyError" in text and "--official-rounding" in text


def test_gold_counter_helpers_match_counter_semantics() -> None:
    # The multiset trick must equal the official Counter intersection.
    rng = random.Random(4)
    tokens = ["a1", "b2", "c3"]
    for _ in range(500):
        pred = " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 5)))
        gold = " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 5)))
        same = sum((Counter(pred.split()) & Counter(gold.split())).values())
        want = 0.0 if not same else 2 * (same / len(pred.split())) * (same / len(gold.split())) / (
            same / len(pred.split()) + same / len(gold.split()))
        assert CachedScorer().overlap_f1(pred, gold) == pytest.approx(want, rel=1e-12)
