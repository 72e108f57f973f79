"""DuReader baseline evaluation (spec 4): golden cases, the released demo data, edge cases and errors."""

from __future__ import annotations

import gc
import json
import math
import random
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scoring import charmetrics, dureader
from scoring.charmetrics import (
    BleuStats,
    batch_clipped_matches,
    char_bleu_stats,
    clipped_matches,
    coco_bleu,
    coco_rouge_l,
    strip_whitespace,
    sum_bleu_stats,
)
from scoring.errors import InputFormatError
from tests.builders.shared import shared_path
from tests.scoring.helpers import parametrize_golden, run_cli

REL = 1e-9


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def _cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, Any, str]:
    return run_cli(capsys, "dureader", *args)


def _write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _ref(qid: Any, answers: list[str], qtype: str = "DESCRIPTION", source: str = "search",
         yesno: list[str] | None = None, entities: list[list[str]] | None = None) -> dict[str, Any]:
    return {"question_id": qid, "question_type": qtype, "source": source, "answers": answers,
            "yesno_answers": yesno or [], "entity_answers": entities or [[]]}


def _pred(qid: Any, answers: list[str], qtype: str = "DESCRIPTION", yesno: list[str] | None = None,
          entities: list[list[str]] | None = None) -> dict[str, Any]:
    return {"question_id": qid, "question_type": qtype, "answers": answers,
            "yesno_answers": yesno or [], "entity_answers": entities or [[]]}


# --------------------------------------------------------------------------- golden cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_golden(metafunc, "golden_case", "dureader")


def _golden_args(case: Path) -> list[str]:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    args = [a for a in spec["official_arguments"] if a not in ("-m", "utils.dureader_eval")]
    return [a.replace("{CASE}", str(case)) for a in args]


def test_golden_case_unrounded(golden_case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _golden_args(golden_case)
    if (golden_case / "expected_error.json").exists():
        code, out, err = _cli(capsys, *args)
        assert code != 0 and out is None
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        return
    expected_path = golden_case / "expected_unrounded.json"
    if not expected_path.exists():
        expected_path = golden_case / "expected.json"
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    code, out, err = _cli(capsys, *args)
    if expected["errorCode"] != 0:
        # In-band error: we stop with one clear line, and --in-band-errors prints the official JSON.
        assert code == 1 and out is None and len(err.strip().splitlines()) == 1
        code, out, _ = _cli(capsys, *args, "--in-band-errors")
        assert code == 0 and out["errorCode"] == 1 and out["data"] == []
        return
    assert code == 0, err
    assert out["errorCode"] == 0 and out["errorMsg"] == "success"
    assert [(d["name"], d["type"]) for d in out["data"]] == [(d["name"], d["type"]) for d in expected["data"]]
    for ours, theirs in zip(out["data"], expected["data"], strict=True):
        assert _same(ours["value"], theirs["value"]), (ours, theirs)


def test_golden_case_official_rounding(golden_case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected_path = golden_case / "expected.json"
    if not expected_path.exists():
        pytest.skip("error case")
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    if expected["errorCode"] != 0:
        pytest.skip("in-band error case")
    code, out, _ = _cli(capsys, *_golden_args(golden_case), "--official-rounding")
    assert code == 0
    for ours, theirs in zip(out["data"], expected["data"], strict=True):
        assert _same(ours["value"], theirs["value"]), (ours, theirs)
        if not math.isnan(theirs["value"]):
            assert ours["value"] == theirs["value"]


# --------------------------------------------------------------------------- released demo data


def test_demo_dev_file_scored_against_itself_is_100() -> None:
    path = shared_path("data", "dureader-demo", "search.dev.json")
    preds, refs = dureader.load_raw_dureader(path)
    assert len(refs) == 100 and {q.source for q in refs.values()} == {"search"}
    for task in ("main", "all", "entity", "description"):
        data = dureader.evaluate_dureader(preds, refs, task).metrics["data"]
        for item in data:
            if item["type"] == "zhidao":
                continue  # no zhidao question: Bleu 0, Rouge NaN, as the official
            assert item["value"] == pytest.approx(100.0, rel=REL), (task, item)
    yesno = dureader.evaluate_dureader(preds, refs, "yesno").metrics["data"]
    assert {d["type"]: d["value"] for d in yesno if d["name"] == "Rouge-L"}["All"] == pytest.approx(100.0)


def test_raw_records_are_converted_with_source_and_default_fields() -> None:
    raw = {"question_id": 7, "question_type": "DESCRIPTION", "answers": ["a", "b"], "documents": []}
    ref = dureader.raw_to_reference(raw, source="zhidao")
    assert ref == {"question_id": 7, "question_type": "DESCRIPTION", "source": "zhidao", "answers": ["a", "b"],
                   "yesno_answers": [], "entity_answers": [[], []]}
    pred = dureader.raw_to_prediction({**raw, "entity_answers": [["x"], ["y"]], "yesno_answers": ["Yes"]})
    assert pred["entity_answers"] == [["x"]] and pred["yesno_answers"] == ["Yes"] and pred["answers"] == ["a", "b"]
    assert dureader.raw_to_reference({"question_id": 8, "question_type": "YES_NO"}, source="search")[
        "entity_answers"] == [[]]


def test_raw_source_comes_from_the_file_name(tmp_path: Path) -> None:
    raw = {"question_id": 1, "question_type": "ENTITY", "answers": ["北京"], "entity_answers": [["北京"]]}
    path = _write_lines(tmp_path / "zhidao.dev.json", [raw])
    preds, refs = dureader.load_raw_dureader(path)
    assert refs[1].source == "zhidao" and preds[1].answers == ["北京"]
    other = _write_lines(tmp_path / "dev.json", [raw])
    with pytest.raises(InputFormatError, match="source"):
        dureader.load_raw_dureader(other)
    assert dureader.load_raw_dureader(other, source="search")[1][1].source == "search"


# --------------------------------------------------------------------------- the arithmetic


def _naive_matches(cand: str, refs: list[str], n: int) -> int:
    def grams(s: str) -> Counter[str]:
        return Counter(s[i:i + n] for i in range(len(s) - n + 1))

    best: Counter[str] = Counter()
    for ref in refs:
        best |= grams(ref)
    return sum((grams(cand) & best).values())


def test_clipped_matches_equal_the_counter_definition_on_random_strings() -> None:
    rng = random.Random(4)
    for _ in range(2000):
        alphabet = rng.choice(["ab", "abc", "甲乙丙", "abcdefghij"])
        cand = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 15)))
        refs = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 15))) for _ in range(rng.randint(1, 3))]
        assert clipped_matches(cand, refs) == [_naive_matches(cand, refs, n) for n in range(1, 5)], (cand, refs)


@pytest.fixture
def numpy_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send every batch, however small, through the vectorised path, in tiny chunks."""
    monkeypatch.setattr(charmetrics, "_BATCH_MIN_ITEMS", 0)
    monkeypatch.setattr(charmetrics, "_MIN_CHUNK_ITEMS", 1)


@pytest.mark.parametrize("chunk", [1, 3, 16, 2048])
def test_batch_matches_equal_the_plain_function(
    numpy_everywhere: None, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(charmetrics, "_CHUNK_ITEMS", chunk)
    rng = random.Random(chunk)
    for _ in range(40):
        alphabet = rng.choice(["ab", "abc", "甲乙丙", "abcdefghij", "\x00\x01a\U0001f600\ud800", "x"])
        items = []
        for _ in range(rng.randint(0, 80)):
            cand = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 3, 4, 7, 20])))
            refs = ["".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 5, 12])))
                    for _ in range(rng.choice([0, 1, 2, 3, 9]))]
            items.append((cand, refs))
        assert batch_clipped_matches(items) == [clipped_matches(c, r) for c, r in items]


def test_batch_with_many_references_per_pair(numpy_everywhere: None) -> None:
    rng = random.Random(9)
    items = [("".join(rng.choice("甲乙丙丁") for _ in range(30)),
              ["".join(rng.choice("甲乙丙丁") for _ in range(rng.randint(0, 10))) for _ in range(40)])
             for _ in range(50)]
    assert batch_clipped_matches(items) == [clipped_matches(c, r) for c, r in items]


def test_batch_falls_back_when_the_alphabet_is_too_large_for_64_bit_keys(numpy_everywhere: None) -> None:
    # 70,000 distinct characters need 17 bits each: four of them and a slot exceed 64 bits.
    chars = [chr(0x10000 + i) for i in range(70_000)]
    items = [("".join(chars[i:i + 700]), ["".join(chars[i + 350:i + 1400])]) for i in range(0, 69_000, 690)]
    assert batch_clipped_matches(items) == [clipped_matches(c, r) for c, r in items]


def test_gc_is_paused_only_inside_the_block() -> None:
    assert gc.isenabled()
    with dureader.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_ngrams_are_counted_as_the_official_does() -> None:
    # "aaaa" has three "aa" 2-grams; str.count would say two.
    assert clipped_matches("aaaa", ["aaaa"]) == [4, 3, 2, 1]
    assert clipped_matches("aaaa", ["aa", "aaa"]) == [3, 2, 1, 0]


def test_whitespace_of_every_kind_is_dropped_and_latin_letters_are_characters() -> None:
    assert strip_whitespace("pan das\u00a0x\u3000y\tz\n") == "pandasxyz"
    stats = char_bleu_stats("pandas", ["pandas"])
    assert stats.correct == (6, 5, 4, 3) and stats.guess == (6, 5, 4, 3)


def test_closest_reference_length_prefers_the_shorter_on_ties() -> None:
    assert char_bleu_stats("abcd", ["ab", "abcdef"]).ref_len == 2
    assert char_bleu_stats("abcd", ["abcdef", "abc"]).ref_len == 3


def test_empty_corpus_bleu_is_zero_through_the_pseudo_smoothing() -> None:
    assert coco_bleu(sum_bleu_stats([])) == 0.0


def test_rouge_of_the_empty_candidate_uses_one_empty_token() -> None:
    assert coco_rouge_l("", ["abc"]) == 0.0
    # [''] against [''] is an LCS of 1: a perfect score (possible when another reference is non-empty).
    assert coco_rouge_l("", ["", "abc"]) == pytest.approx(1.0)
    assert coco_rouge_l("ab", [""]) == 0.0


def test_rouge_takes_the_best_precision_and_best_recall_from_different_references() -> None:
    # P is best against "abcxyz" (3/3), R against "ab" (2/2).
    p, r = 1.0, 1.0
    assert coco_rouge_l("abc", ["ab", "abcxyz"]) == pytest.approx((1 + 1.44) * p * r / (r + 1.44 * p))


# --------------------------------------------------------------------------- tasks


def test_task_names_are_lower_cased_and_underscores_dropped() -> None:
    assert dureader.normalize_task("Yes_No") == "yesno"
    assert dureader.normalize_task("MAIN") == "main"
    with pytest.raises(dureader.OfficialInBandError) as info:
        dureader.normalize_task("summary")
    assert info.value.official == "Illegal task name: summary"


def _eval(tmp_path: Path, refs: list[Any], preds: list[Any], task: str = "main") -> Any:
    r = dureader.load_dureader(_write_lines(tmp_path / "ref.json", refs), reference=True)
    p = dureader.load_dureader(_write_lines(tmp_path / "pred.json", preds), reference=False)
    return dureader.evaluate_dureader(p, r, task)


def test_yesno_pseudo_questions_pool_references_and_keep_the_first_predicted_answer(tmp_path: Path) -> None:
    refs = [_ref(1, ["甲乙丙丁", "戊己庚辛", "无标签"], "YES_NO", yesno=["Yes", "Yes"])]
    preds = [_pred(1, ["戊己庚辛", "甲乙丙丁"], "YES_NO", yesno=["Yes", "Yes"])]
    result = _eval(tmp_path, refs, preds, "yesno")
    ids = [r["id"] for r in result.per_example]
    assert ids == ["1_Yes"]  # No/Depends have no reference answer and are dropped
    record = result.per_example[0]
    assert record["question_id"] == 1 and record["yesno_label"] == "Yes" and record["rouge_l"] == pytest.approx(1.0)
    values = {(d["name"], d["type"]): d["value"] for d in result.metrics["data"]}
    assert values[("Rouge-L", "Yes")] == pytest.approx(100.0)
    assert math.isnan(values[("Rouge-L", "No")]) and values[("Bleu-4", "No")] == 0.0


def test_a_wrong_predicted_label_leaves_the_reference_label_with_an_empty_candidate(tmp_path: Path) -> None:
    refs = [_ref(1, ["可以"], "YES_NO", yesno=["Yes"])]
    preds = [_pred(1, ["可以"], "YES_NO", yesno=["No"])]
    result = _eval(tmp_path, refs, preds, "all")
    assert [(r["id"], r["rouge_l"]) for r in result.per_example] == [("1_Yes", 0.0)]


def test_main_scores_yes_no_questions_as_plain_text(tmp_path: Path) -> None:
    refs = [_ref(1, ["可以"], "YES_NO", yesno=["Yes"])]
    preds = [_pred(1, ["可以"], "YES_NO", yesno=["No"])]
    assert _eval(tmp_path, refs, preds, "main").per_example[0]["rouge_l"] == pytest.approx(1.0)


def test_questions_without_reference_answers_are_not_scored(tmp_path: Path) -> None:
    refs = [_ref(1, []), _ref(2, ["答案"]), _ref(3, [""])]
    result = _eval(tmp_path, refs, [_pred(2, ["答案"])])
    assert [r["id"] for r in result.per_example] == [2]


def test_a_whitespace_only_reference_is_kept_and_matches_an_empty_prediction(tmp_path: Path) -> None:
    # The official drops [''] before normalising, so ['  '] stays and becomes the empty token.
    result = _eval(tmp_path, [_ref(1, ["  "])], [_pred(1, [])])
    assert result.per_example[0]["rouge_l"] == pytest.approx(1.0)


def test_entity_prf_counts_every_reference_question(tmp_path: Path) -> None:
    refs = [
        _ref(1, ["甲和乙"], "ENTITY", entities=[["甲", "乙"], ["甲", "丙", "丁"]]),
        _ref(2, ["描述"], "DESCRIPTION", entities=[["戊"]]),
        _ref(3, ["实体"], "ENTITY", entities=[["己", "庚"], ["辛"]]),
    ]
    preds = [
        _pred(1, ["甲"], "ENTITY", entities=[["甲", "甲", "丙"]]),
        _pred(2, ["描述"], entities=[["戊"]]),
        _pred(3, ["x"], "ENTITY", entities=[["壬"]]),
    ]
    result = _eval(tmp_path, refs, preds, "entity")
    counts = {r["id"]: (r["entity_correct"], r["entity_predicted"], r["entity_gold"]) for r in result.per_example}
    # q1: local F1 0.4 against ["甲","乙"], 2/3 against ["甲","丙","丁"], which wins; the predicted
    # list counts as the set {甲, 丙}.  q3: nothing matches, so the shortest list ["辛"] is the gold.
    assert counts == {1: (2, 2, 3), 2: (1, 1, 1), 3: (0, 1, 1)}
    assert result.per_example[1]["rouge_l"] is None  # DESCRIPTION: not in entity BLEU/ROUGE
    values = {d["name"]: d["value"] for d in result.metrics["data"]}
    assert values["Precision"] == pytest.approx(75.0) and values["Recall"] == pytest.approx(60.0)
    assert dureader.aggregate_records(result.per_example)["F1"] == pytest.approx(values["F1"], rel=REL)


def test_no_correct_entity_gives_the_official_integer_zero(tmp_path: Path) -> None:
    result = _eval(tmp_path, [_ref(1, ["甲"], "ENTITY", entities=[["甲"]])], [_pred(1, ["乙"], "ENTITY")], "entity")
    values = {d["name"]: d["value"] for d in result.metrics["data"]}
    assert values["F1"] == 0 and type(values["F1"]) is int


def test_per_example_records_reproduce_every_source_and_type(tmp_path: Path) -> None:
    rng = random.Random(1)
    chars = "甲乙丙丁戊己庚辛壬癸"
    refs, preds = [], []
    for i in range(150):
        qtype = rng.choice(["DESCRIPTION", "ENTITY", "YES_NO"])
        answers = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 3))]
        yesno = [rng.choice(["Yes", "No", "Depends"]) for _ in answers] if qtype == "YES_NO" else []
        refs.append(_ref(i, answers, qtype, rng.choice(["search", "zhidao"]), yesno))
        preds.append(_pred(i, [answers[0][::-1]], qtype, yesno[:1]))
    for task in ("main", "all"):
        result = _eval(tmp_path, refs, preds, task)
        values = {(d["name"], d["type"]): d["value"] for d in result.metrics["data"]}
        for source in ("both", "search", "zhidao"):
            subset = [r for r in result.per_example if source == "both" or r["source"] == source]
            agg = dureader.aggregate_records(subset)
            assert agg["Bleu-4"] == pytest.approx(values[("Bleu-4", source)], rel=REL)
            assert agg["Rouge-L"] == pytest.approx(values[("Rouge-L", source)], rel=REL)
        by_type = dureader.breakdown_by_question_type(result.per_example)
        assert set(by_type) == {"DESCRIPTION", "ENTITY", "YES_NO"}
        desc = _eval(tmp_path, refs, preds, "description").metrics["data"]
        assert by_type["DESCRIPTION"]["Rouge-L"] == pytest.approx(desc[1]["value"], rel=REL)
        assert by_type["DESCRIPTION"]["Bleu-4"] == pytest.approx(desc[0]["value"], rel=REL)
    stats = [BleuStats.from_record(r) for r in result.per_example]
    assert all(len(s.correct) == 4 for s in stats)


def test_the_vectorised_and_plain_paths_give_the_same_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(2)
    chars = "甲乙丙丁戊己庚辛壬癸abc"
    refs, preds = [], []
    for i in range(200):
        answers = ["".join(rng.choice(chars) for _ in range(rng.randint(0, 25))) for _ in range(rng.randint(1, 3))]
        refs.append(_ref(i, answers, rng.choice(["DESCRIPTION", "ENTITY"]), rng.choice(["search", "zhidao"])))
        preds.append(_pred(i, [rng.choice(answers)[::-1] + rng.choice(chars)]))
    fast = _eval(tmp_path, refs, preds, "main")
    monkeypatch.setattr(charmetrics, "_BATCH_MIN_ITEMS", 10**9)
    plain = _eval(tmp_path, refs, preds, "main")
    assert fast.metrics == plain.metrics
    assert fast.per_example == plain.per_example


# --------------------------------------------------------------------------- command line


def test_cli_prints_the_official_structure_and_writes_per_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"]), _ref(2, ["明天下雨"], source="zhidao")])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["今天天气不错"]), _pred(2, ["明天下雨"])])
    out_path = tmp_path / "per.json"
    code, out, err = _cli(capsys, pred, ref, "Main", "--per-example", out_path)
    assert code == 0, err
    assert list(out) == ["data", "errorCode", "errorMsg"]
    assert [(d["name"], d["type"]) for d in out["data"]] == [
        ("Bleu-4", "both"), ("Bleu-4", "search"), ("Bleu-4", "zhidao"),
        ("Rouge-L", "both"), ("Rouge-L", "search"), ("Rouge-L", "zhidao")]
    records = json.loads(out_path.read_text(encoding="utf-8"))
    assert [r["id"] for r in records] == [1, 2]
    assert list(records[0])[:4] == ["id", "question_type", "source", "missing"]
    code, rounded, _ = _cli(capsys, pred, ref, "main", "--official-rounding")
    for a, b in zip(out["data"], rounded["data"], strict=True):
        assert b["value"] == round(a["value"], 2)


def test_cli_reads_a_zip_of_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"])])
    pred_zip = tmp_path / "pred.zip"
    with zipfile.ZipFile(pred_zip, "w") as zf:
        zf.writestr("part1.json", json.dumps(_pred(1, ["今天天气很好"]), ensure_ascii=False) + "\n")
    code, out, err = _cli(capsys, pred_zip, ref, "main")
    assert code == 0, err
    assert out["data"][3]["value"] == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("line", "official", "needle"),
    [
        ("{not json", "Every line of data should be legal json", "invalid JSON"),
        ("", "Every line of data should be legal json", "blank line"),
        ('{"question_type": "DESCRIPTION"}', "Missing 'question_id' field.", "question_id"),
        ('{"question_id": 9, "question_type": "X", "entity_answers": [[]], "answers": []}',
         "Missing 'yesno_answers' field. question_id: 9", "yesno_answers"),
        ('{"question_id": 9, "question_type": "X", "yesno_answers": [], "entity_answers": [], "answers": []}',
         "'entity_answers' field must be a list", "entity_answers"),
        ('{"question_id": 1, "question_type": "X", "yesno_answers": [], "entity_answers": [[]], "answers": []}',
         "Duplicate question_id: 1", "duplicate"),
    ],
)
def test_in_band_errors_name_the_line_and_can_be_printed_as_the_official_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, official: str, needle: str
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["答案"])])
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(_pred(1, ["答案"])) + "\n" + line + "\n" + json.dumps(_pred(3, ["x"])) + "\n",
                    encoding="utf-8")
    code, out, err = _cli(capsys, pred, ref, "main")
    assert code == 1 and out is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(pred) in lines[0] and "line 2" in lines[0] and needle in lines[0]
    code, out, err = _cli(capsys, pred, ref, "main", "--in-band-errors")
    assert code == 0 and out["errorCode"] == 1 and out["data"] == []
    assert out["errorMsg"].startswith(official)


@pytest.mark.parametrize(
    ("obj", "needle"),
    [
        ({"question_id": 1, "yesno_answers": [], "entity_answers": [[]], "answers": []}, "'question_type'"),
        ({"question_id": 1, "question_type": "X", "yesno_answers": [], "entity_answers": [[]]}, "'answers'"),
        ({"question_id": 1, "question_type": "X", "yesno_answers": [], "entity_answers": [[]], "answers": "abc"},
         "list of strings"),
        ({"question_id": [1], "question_type": "X", "yesno_answers": [], "entity_answers": [[]], "answers": []},
         "question_id"),
        ([1, 2], "JSON object"),
        (17, "JSON object"),
    ],
)
def test_inputs_the_official_crashes_on_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], obj: Any, needle: str
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["答案"])])
    pred = _write_lines(tmp_path / "pred.json", [obj])
    code, out, err = _cli(capsys, pred, ref, "main")
    assert code == 1 and out is None
    assert len(err.strip().splitlines()) == 1 and needle in err and "line 1" in err and "Traceback" not in err


def test_a_reference_without_source_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _ref(5, ["答案"])
    del bad["source"]
    ref = _write_lines(tmp_path / "ref.json", [bad])
    pred = _write_lines(tmp_path / "pred.json", [_pred(5, ["答案"])])
    code, _, err = _cli(capsys, pred, ref, "main")
    assert code == 1 and "'source'" in err and "id '5'" in err


def test_an_unknown_predicted_yes_no_label_is_the_official_missing_keys_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(4, ["可以"], "YES_NO", yesno=["Yes"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(4, ["可以"], "YES_NO", yesno=["yes"])])
    code, _, err = _cli(capsys, pred, ref, "all")
    assert code == 1 and "'yes'" in err and "id '4'" in err
    code, out, _ = _cli(capsys, pred, ref, "all", "--in-band-errors")
    assert out == {"errorMsg": "missing keys: set()", "errorCode": 1, "data": []}
    code, out, _ = _cli(capsys, pred, ref, "main")  # main never looks at labels
    assert code == 0


def test_several_predicted_entity_lists_are_an_in_band_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(4, ["甲"], "ENTITY", entities=[["甲"]])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(4, ["甲"], "ENTITY", entities=[["甲"], ["乙"]])])
    code, _, err = _cli(capsys, pred, ref, "entity")
    assert code == 1 and "exactly one entity list" in err
    _, out, _ = _cli(capsys, pred, ref, "entity", "--in-band-errors")
    assert out["errorMsg"] == "the number of entity list for question_id 4 is not 1."


def test_unknown_task_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["答案"])])
    code, _, err = _cli(capsys, ref, ref, "summary")
    assert code == 1 and "unknown task 'summary'" in err


def test_non_utf8_and_missing_files_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["答案"])])
    bad = tmp_path / "pred.json"
    bad.write_bytes(json.dumps(_pred(1, ["答案"])).encode() + b"\n\xff\xfe\n")
    code, _, err = _cli(capsys, bad, ref, "main")
    assert code == 1 and "UTF-8" in err and "line 2" in err
    code, _, err = _cli(capsys, tmp_path / "nope.json", ref, "main")
    assert code == 1 and "not found" in err


def test_an_empty_reference_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = tmp_path / "ref.json"
    ref.write_text("", encoding="utf-8")
    code, _, err = _cli(capsys, ref, ref, "main")
    assert code == 1 and "no question" in err


def test_missing_predictions_warn_and_strict_rejects_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["答案"]), _ref(2, ["另一个"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["答案"]), _pred(99, ["多余"])])
    code, out, err = _cli(capsys, pred, ref, "main")
    assert code == 0 and "1 of 2 reference questions have no prediction" in err and "99" in err
    code, out, err = _cli(capsys, pred, ref, "main", "--strict")
    assert code == 1 and out is None and "id '2'" in err
