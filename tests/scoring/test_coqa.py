"""CoQA evaluate-v1.0.py (spec 7): golden cases, the real excerpt, a plain reference, quirks and bad inputs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from scoring import coqa
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.text import f1_v2, normalize_answer
from tests.builders.shared import shared_path
from tests.scoring.helpers import assert_one_line_error, parametrize_golden, run_cli

REL = 1e-9


def _close(a: Any, b: Any) -> bool:
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)
    return bool(a == b)


def _cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, Any, str]:
    return run_cli(capsys, "coqa", *args)


def _assert_same_scores(ours: dict[str, Any], expected: dict[str, Any]) -> None:
    assert list(ours) == list(expected)
    for bucket, cells in expected.items():
        assert list(ours[bucket]) == list(cells), bucket
        for key, value in cells.items():
            assert _close(ours[bucket][key], value), (bucket, key, ours[bucket][key], value)
            assert type(ours[bucket][key]) is type(value), (bucket, key)


# --------------------------------------------------------------------------- a plain reference
# evaluate-v1.0.py restated directly on top of the plain text functions: the
# leave-one-out over golds literally, then per-source sums.


def _ref_turn(golds: list[str], pred: str) -> tuple[float, float]:
    def em(a: str, b: str) -> int:
        return int(normalize_answer(a) == normalize_answer(b))

    if len(golds) == 1:
        return float(em(golds[0], pred)), float(f1_v2(pred, golds[0]))
    em_sum = f1_sum = 0.0
    for i in range(len(golds)):
        others = golds[:i] + golds[i + 1:]
        em_sum += max(em(a, pred) for a in others)
        f1_sum += max(f1_v2(pred, a) for a in others)
    return em_sum / len(golds), f1_sum / len(golds)


def _ref_eval(data: dict[str, Any], preds: list[dict[str, Any]] | None) -> dict[str, Any]:
    pred_map = {(p["id"], p["turn_id"]): p["answer"] for p in preds or []}
    gold: dict[tuple[str, int], list[str]] = {}
    source_of: dict[str, str] = {}
    for story in data["data"]:
        source_of[story["id"]] = story["source"]
        lists = [story["answers"], *story["additional_answers"].values()]
        for i, qa in enumerate(story["questions"]):
            gold[(story["id"], qa["turn_id"])] = [answers[i]["input_text"] for answers in lists]
    sums: dict[str, list[float]] = {s: [0.0, 0.0, 0] for s in coqa.IN_DOMAIN + coqa.OUT_DOMAIN}
    for key, golds in gold.items():
        if preds is None:  # human: each gold against the others
            em = f1 = 0.0
            for i, gold_i in enumerate(golds):
                others = golds[:i] + golds[i + 1:]
                em += max(int(normalize_answer(a) == normalize_answer(gold_i)) for a in others)
                f1 += max(f1_v2(gold_i, a) for a in others)
            em /= len(golds)
            f1 /= len(golds)
        elif key in pred_map:
            em, f1 = _ref_turn(golds, pred_map[key])
        else:
            em = f1 = 0.0
        bucket = sums[source_of[key[0]]]
        bucket[0] += em
        bucket[1] += f1
        bucket[2] += 1
    out: dict[str, Any] = {}
    for source in coqa.IN_DOMAIN + coqa.OUT_DOMAIN:
        em_t, f1_t, n = sums[source]
        out[coqa.DOMAIN_NAMES[source]] = {"em": em_t / max(1, n) * 100, "f1": f1_t / max(1, n) * 100, "turns": n}
    for name, group in (("in_domain", coqa.IN_DOMAIN), ("out_domain", coqa.OUT_DOMAIN),
                        ("overall", coqa.IN_DOMAIN + coqa.OUT_DOMAIN)):
        em_t = sum(sums[s][0] for s in group)
        f1_t = sum(sums[s][1] for s in group)
        n = int(sum(sums[s][2] for s in group))
        out[name] = {"em": em_t / max(1, n) * 100, "f1": f1_t / max(1, n) * 100, "turns": n}
    return out


def _evaluate(data: dict[str, Any], preds: list[dict[str, Any]], **kwargs: Any) -> Any:
    return coqa.evaluate_coqa(coqa.coqa_gold(data), coqa.coqa_predictions(preds), **kwargs)


# --------------------------------------------------------------------------- golden cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_golden(metafunc, "golden_case", "coqa")


def _golden_args(case: Path) -> list[str]:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    args = spec["official_arguments"][1:]  # drop "evaluate-v1.0.py"
    return [str(case / a) if (case / a).is_file() else a for a in args]


def _expected(case: Path, name: str) -> Any:
    return json.loads((case / name).read_text(encoding="utf-8"))


def test_golden_case_full_precision(golden_case: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    if (golden_case / "expected_error.json").exists():
        code, out, err = _cli(capsys, *_golden_args(golden_case))
        assert code == 1 and out is None and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        return
    per_example = tmp_path / "per_example.json"
    code, out, err = _cli(capsys, *_golden_args(golden_case), "--per-example", per_example)
    assert code == 0, err
    _assert_same_scores(out, _expected(golden_case, "expected_unrounded.json"))
    if (golden_case / "expected_per_example.json").exists():
        expected_records = _expected(golden_case, "expected_per_example.json")
        records = json.loads(per_example.read_text(encoding="utf-8"))
        assert len(records) == len(expected_records)
        for ours, theirs in zip(records, expected_records):
            assert set(ours) == set(theirs)
            for key, value in theirs.items():
                assert _close(ours[key], value), (theirs["id"], theirs["turn_id"], key)


def test_golden_case_official_rounding(golden_case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if (golden_case / "expected_error.json").exists():
        pytest.skip("error case")
    code, out, err = _cli(capsys, *_golden_args(golden_case), "--official-rounding")
    assert code == 0, err
    assert out == _expected(golden_case, "expected.json")  # rounded values compare exactly


def test_golden_case_via_python_api(golden_case: Path) -> None:
    if (golden_case / "expected_error.json").exists():
        pytest.skip("error case")
    args = _golden_args(golden_case)
    gold = coqa.load_coqa_dataset(args[args.index("--data-file") + 1])
    if "--human" in args:
        result = coqa.evaluate_coqa_human(gold)
    else:
        result = coqa.evaluate_coqa(gold, coqa.load_coqa_predictions(args[args.index("--pred-file") + 1]))
    _assert_same_scores(result.metrics, _expected(golden_case, "expected_unrounded.json"))


# --------------------------------------------------------------------------- the real excerpt


def _excerpt() -> dict[str, Any]:
    path = shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_excerpt_main_answers_as_predictions_match_a_plain_leave_one_out() -> None:
    data = _excerpt()
    preds = [{"id": s["id"], "turn_id": a["turn_id"], "answer": a["input_text"]}
             for s in data["data"] for a in s["answers"]]
    result = _evaluate(data, preds)
    overall = result.metrics["overall"]
    assert overall["turns"] == sum(len(s["questions"]) for s in data["data"])
    # The main answer is one of the four golds: every leave-one-out subset but
    # one still contains it, so each turn scores at least 3/4.
    assert 75.0 <= overall["em"] <= overall["f1"] <= 100.0
    assert all(r["f1"] >= 0.75 and not r["missing"] for r in result.per_example)
    _assert_same_scores(result.metrics, _ref_eval(data, preds))
    human = coqa.evaluate_coqa_human(coqa.coqa_gold(data))
    _assert_same_scores(human.metrics, _ref_eval(data, None))
    assert human.metrics["overall"]["f1"] < overall["f1"]


# --------------------------------------------------------------------------- random inputs vs the reference


WORDS = ["the", "a", "white", "kitten", "Cotton", "yes", "no", "unknown", "barn,", "Barn", "an", "", "!"]


def _random_case(rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stories = []
    preds = []
    for s in range(rng.randint(1, 5)):
        sid = f"story{s}"
        n = rng.randint(1, 6)
        extra = rng.choice([0, 1, 3, 3])

        def answer(t: int) -> dict[str, Any]:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))
            return {"input_text": text, "span_text": text, "turn_id": t}

        main_answers = [answer(t) for t in range(1, n + 1)]
        additional = {str(k): [a if rng.random() < 0.4 else answer(a["turn_id"]) for a in main_answers]
                      for k in range(extra)}
        stories.append({"source": rng.choice(coqa.IN_DOMAIN + coqa.OUT_DOMAIN), "id": sid,
                        "questions": [{"input_text": "q?", "turn_id": t} for t in range(1, n + 1)],
                        "answers": main_answers, "additional_answers": additional})
        for t in range(1, n + 1):
            if rng.random() < 0.85:
                preds.append({"id": sid, "turn_id": t,
                              "answer": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))})
    return {"version": "1.0", "data": stories}, preds


@pytest.mark.parametrize("seed", range(60))
def test_random_inputs_match_the_plain_reference(seed: int) -> None:
    rng = random.Random(seed)
    data, preds = _random_case(rng)
    result = _evaluate(data, preds)
    _assert_same_scores(result.metrics, _ref_eval(data, preds))
    rounded = _evaluate(data, preds, official_rounding=True)
    for bucket, cells in rounded.metrics.items():
        for key in ("em", "f1"):
            assert cells[key] == round(result.metrics[bucket][key], 1)
    if all(s["additional_answers"] for s in data["data"]):
        human = coqa.evaluate_coqa_human(coqa.coqa_gold(data))
        _assert_same_scores(human.metrics, _ref_eval(data, None))


# --------------------------------------------------------------------------- the quirks, one by one


def _story(sid: str, source: str, golds: list[list[str]], **extra: Any) -> dict[str, Any]:
    """A story whose turn t (1-based) has golds[t-1] (main answer first)."""
    n_additional = len(golds[0]) - 1
    return {
        "source": source, "id": sid,
        "questions": [{"input_text": "q?", "turn_id": t} for t in range(1, len(golds) + 1)],
        "answers": [{"input_text": g[0], "turn_id": t} for t, g in enumerate(golds, start=1)],
        "additional_answers": {str(k): [{"input_text": g[k + 1], "turn_id": t} for t, g in enumerate(golds, start=1)]
                               for k in range(n_additional)},
        **extra,
    }


def test_a_missing_prediction_scores_zero_but_counts() -> None:
    data = {"data": [_story("s1", "race", [["yes", "yes"], ["no", "no"]])]}
    result = _evaluate(data, [{"id": "s1", "turn_id": 1, "answer": "Yes."}])
    assert result.metrics["mid-high_school"] == {"em": 50.0, "f1": 50.0, "turns": 2}
    assert [r["missing"] for r in result.per_example] == [False, True]
    assert any("Missing prediction for s1 and turn_id: 2" in w for w in result.warnings)


def test_empty_answers_agree_with_each_other_as_in_squad_v2() -> None:
    data = {"data": [_story("s1", "cnn", [["the", "", "a"]])]}
    result = _evaluate(data, [{"id": "s1", "turn_id": 1, "answer": ""}])
    assert result.metrics["news"]["em"] == 100.0 and result.metrics["news"]["f1"] == 100.0


def test_predictions_for_unknown_turns_are_ignored_with_a_hint_about_types() -> None:
    data = {"data": [_story("s1", "cnn", [["yes"]])]}
    result = _evaluate(data, [{"id": "s1", "turn_id": "1", "answer": "yes"}])
    assert result.metrics["overall"]["em"] == 0.0
    assert any("match no (story id, turn id)" in w for w in result.warnings)


def test_a_story_without_additional_answers_is_scored_on_its_main_answers() -> None:
    story = _story("s1", "wikipedia", [["Paris"]])
    del story["additional_answers"]
    result = _evaluate({"data": [story]}, [{"id": "s1", "turn_id": 1, "answer": "paris"}])
    assert result.metrics["wikipedia"]["em"] == 100.0


def test_turn_id_mismatches_are_warnings_and_duplicate_turns_keep_the_last(tmp_path: Path) -> None:
    first = _story("s1", "mctest", [["red"]])
    second = _story("s1", "mctest", [["blue"]])
    first["questions"][0]["turn_id"] = 1
    second["answers"][0]["turn_id"] = 7
    gold = coqa.coqa_gold({"data": [first, second]})
    assert gold.turns == {("s1", 1): ["blue"]}
    assert any("turn_id 7" in w for w in gold.warnings)
    assert any("appear more than once" in w for w in gold.warnings)
    with pytest.raises(InputFormatError, match="appears more than once"):
        coqa.coqa_gold({"data": [first, second]}, strict=True)


def test_an_unknown_source_names_the_story() -> None:
    data = {"data": [_story("s1", "cnn", [["x"]]), _story("s2", "arxiv", [["y"]])]}
    with pytest.raises(InputFormatError, match=r"story 's2' has source 'arxiv'"):
        coqa.coqa_gold(data)


def test_human_performance_needs_two_golds_and_names_the_turn() -> None:
    data = {"data": [_story("s1", "cnn", [["a b", "a b"]]), _story("s2", "cnn", [["x", "x"], ["y"] * 2])]}
    data["data"][1]["additional_answers"]["0"].pop()
    with pytest.raises(InputFormatError, match="additional_answers\\['0'\\] has 1 entries for 2 questions"):
        coqa.coqa_gold(data)
    single = {"data": [_story("s1", "cnn", [["a b", "a b"]]), _story("s2", "cnn", [["x"]])]}
    with pytest.raises(UndefinedMetricError, match="story 's2' turn 1 has a single gold answer"):
        coqa.evaluate_coqa_human(coqa.coqa_gold(single))


# --------------------------------------------------------------------------- the command line


def _files(tmp_path: Path, data: Any, preds: Any) -> tuple[Path, Path]:
    data_file = tmp_path / "dev.json"
    data_file.write_text(json.dumps(data), encoding="utf-8")
    pred_file = tmp_path / "pred.json"
    pred_file.write_text(json.dumps(preds), encoding="utf-8")
    return data_file, pred_file


def _small(tmp_path: Path) -> tuple[Path, Path]:
    data = {"version": "1.0", "data": [_story("s1", "reddit", [["white", "white", "a white one"], ["no", "No", "no"]])]}
    return _files(tmp_path, data, [{"id": "s1", "turn_id": 1, "answer": "white"},
                                   {"id": "s1", "turn_id": 2, "answer": "yes"}])


def test_cli_prints_all_buckets_and_writes_the_out_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_file, pred_file = _small(tmp_path)
    out_file = tmp_path / "eval.json"
    per_example = tmp_path / "pe.json"
    code, out, _ = _cli(capsys, "--data-file", data_file, "--pred-file", pred_file, "-o", out_file, "-v",
                        "--per-example", per_example)
    assert code == 0
    assert list(out) == ["children_stories", "literature", "mid-high_school", "news", "wikipedia", "reddit",
                         "science", "in_domain", "out_domain", "overall"]
    assert out["reddit"]["turns"] == 2 and out["in_domain"] == {"em": 0.0, "f1": 0.0, "turns": 0}
    # turn 1: leave-one-out over ["white", "white", "a white one"] -> EM 1, F1 1; turn 2: 0.
    assert out["out_domain"]["em"] == 50.0 and out["out_domain"]["f1"] == 50.0
    assert json.loads(out_file.read_text(encoding="utf-8")) == out
    records = json.loads(per_example.read_text(encoding="utf-8"))
    assert records[0] == {"id": "s1", "turn_id": 1, "source": "reddit", "em": 1.0, "f1": 1.0, "missing": False}


def _assert_one_line_error(capsys: pytest.CaptureFixture[str], args: list[Any], *needles: str) -> None:
    assert_one_line_error(capsys, ["coqa", *args], *needles)


def test_human_and_pred_file_are_either_or(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_file, pred_file = _small(tmp_path)
    _assert_one_line_error(capsys, ["--data-file", data_file], "--pred-file", "--human")
    _assert_one_line_error(capsys, ["--data-file", data_file, "--pred-file", pred_file, "--human"], "either")
    code, out, _ = _cli(capsys, "--data-file", data_file, "--human")
    assert code == 0 and out["reddit"]["turns"] == 2


def test_bad_prediction_files_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_file, pred_file = _small(tmp_path)
    cases: list[tuple[bytes, tuple[str, ...]]] = [
        (b'[{"id": "s1", "turn_id": 1, "answer": "x"},\n {"id": ', ("line 2", "invalid JSON")),
        (b'{"s1": "x"}', ("JSON list",)),
        (b'[{"id": "s1", "turn_id": 1}]', ("entry 0", "'answer'")),
        (b'[{"id": "s1", "turn_id": 1, "answer": null}]', ("entry 0", "'s1'", "string")),
        (b'[{"id": ["s1"], "turn_id": 1, "answer": "x"}]', ("entry 0", "'id'")),
        (b'[5]', ("entry 0", "object")),
        (b'[{"id": "s1", "turn_id": 1, "answer": "caf\xe9"}]', ("UTF-8",)),
    ]
    for content, needles in cases:
        pred_file.write_bytes(content)
        _assert_one_line_error(capsys, ["--data-file", data_file, "--pred-file", pred_file], str(pred_file), *needles)


def test_duplicate_predictions_warn_and_strict_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_file, pred_file = _small(tmp_path)
    pred_file.write_text(json.dumps([{"id": "s1", "turn_id": 1, "answer": "black"},
                                     {"id": "s1", "turn_id": 1, "answer": "white"}]), encoding="utf-8")
    code, out, err = _cli(capsys, "--data-file", data_file, "--pred-file", pred_file)
    assert code == 0 and out["reddit"]["em"] == 50.0 and "predicted more than once" in err
    _assert_one_line_error(capsys, ["--data-file", data_file, "--pred-file", pred_file, "--strict"],
                           "entry 1", "more than once")


def test_bad_data_files_are_named_by_story(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_file, pred_file = _small(tmp_path)
    good = _story("s1", "reddit", [["white", "white"]])
    broken: list[tuple[Any, tuple[str, ...]]] = [
        ({"data": []}, ("no questions",)),
        ([], ("'data' list",)),
        ({"data": [{**good, "source": "forum"}]}, ("'s1'", "'forum'", "reddit")),
        ({"data": [{**good, "answers": []}]}, ("'s1'", "answers has 0 entries for 1 questions")),
        ({"data": [{**good, "answers": [{"input_text": 3, "turn_id": 1}]}]}, ("'s1'", "'input_text'")),
        ({"data": [{k: v for k, v in good.items() if k != "source"}]}, ("'s1'", "'source'")),
        ({"data": [{**good, "questions": [{"input_text": "q"}]}]}, ("'s1'", "'turn_id'")),
    ]
    for data, needles in broken:
        data_file.write_text(json.dumps(data), encoding="utf-8")
        _assert_one_line_error(capsys, ["--data-file", data_file, "--pred-file", pred_file], str(data_file), *needles)


def test_cli_human_on_a_single_gold_turn_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"data": [_story("s1", "cnn", [["a b"], ["c"]])]}
    data_file, _ = _files(tmp_path, data, [])
    _assert_one_line_error(capsys, ["--data-file", data_file, "--human"], str(data_file), "story 's1' turn 1",
                           "single gold")


def test_the_python_api_takes_the_loaded_json_as_well() -> None:
    data = {"data": [_story("s1", "science", [["x y", "x"]])]}
    preds = [{"id": "s1", "turn_id": 1, "answer": "x"}]
    result = coqa.evaluate_coqa(data, preds)
    assert result.metrics["science"] == {"em": 50.0, "f1": pytest.approx(100 * (2 / 3 + 1) / 2), "turns": 1}
    assert coqa.evaluate_coqa_human(data).metrics["science"]["em"] == 0.0
