"""MRC2018 competition metric with bonuses (spec 5): golden cases, demo data, bonuses and errors."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from scoring import charmetrics, dureader, mrc2018
from scoring.charmetrics import BleuTotals, mrc_bleu
from scoring.errors import UndefinedMetricError
from tests.builders.shared import shared_path
from tests.scoring.helpers import parametrize_golden, run_cli

REL = 1e-9


def _cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, Any, str]:
    return run_cli(capsys, "mrc2018", *args)


def _write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _ref(qid: Any, answers: list[str], qtype: str = "DESCRIPTION", yesno: list[str] | None = None,
         entities: list[list[str]] | None = None, source: str = "search") -> dict[str, Any]:
    return {"question_id": qid, "question_type": qtype, "source": source, "answers": answers,
            "yesno_answers": yesno or [], "entity_answers": entities or [[]]}


def _pred(qid: Any, answers: list[str], yesno: list[str] | None = None) -> dict[str, Any]:
    return {"question_id": qid, "answers": answers, "yesno_answers": yesno or []}


def _evaluate(tmp_path: Path, refs: list[Any], preds: list[Any], **kwargs: Any) -> Any:
    r = mrc2018.load_mrc2018(_write_lines(tmp_path / "ref.json", refs), reference=True)
    p = mrc2018.load_mrc2018(_write_lines(tmp_path / "pred.json", preds), reference=False)
    return mrc2018.evaluate_mrc2018(p, r, **kwargs)


# --------------------------------------------------------------------------- golden cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_golden(metafunc, "golden_case", "dureader_mrc2018")


def _golden_args(case: Path) -> list[str]:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    args = list(spec["official_arguments"][1:])  # drop mrc_eval.py
    return [str(case / a) if (case / a).is_file() else a for a in args]


def test_golden_case(golden_case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _golden_args(golden_case)
    if (golden_case / "expected_error.json").exists():
        code, out, err = _cli(capsys, *args)
        assert code != 0 and out is None
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
        return
    expected = json.loads((golden_case / "expected_unrounded.json").read_text(encoding="utf-8"))
    code, out, err = _cli(capsys, *args)
    assert code == 0, err
    assert list(out) == ["ROUGE-L", "BLEU-4"]
    for name, value in expected.items():
        assert out[name] == pytest.approx(value, rel=REL), name
    rounded = json.loads((golden_case / "expected.json").read_text(encoding="utf-8"))
    code, out, _ = _cli(capsys, *args, "--official-rounding")
    assert out == rounded


def test_all_candidates_shorter_than_four_characters_name_the_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["今天天"])])
    code, out, err = _cli(capsys, pred, ref)
    assert code == 1 and out is None and "4 or more characters" in err
    code, out, err = _cli(capsys, pred, ref, "--lic2019-guards")
    assert code == 0 and out["BLEU-4"] == 0.0 and out["ROUGE-L"] > 0


def test_all_empty_candidates_name_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"]), _ref(2, ["明天"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, [" "])])
    code, _, err = _cli(capsys, pred, ref)
    assert code == 1 and "every candidate answer is empty" in err
    code, out, _ = _cli(capsys, pred, ref, "--lic2019-guards")
    assert code == 0 and out == {"ROUGE-L": 0.0, "BLEU-4": 0.0}


# --------------------------------------------------------------------------- demo data


def test_demo_dev_file_scored_against_itself_is_100() -> None:
    path = shared_path("data", "dureader-demo", "search.dev.json")
    preds, refs = dureader.load_raw_dureader(path)
    p = {qid: _as_mrc(q, reference=False) for qid, q in preds.items()}
    r = {qid: _as_mrc(q, reference=True) for qid, q in refs.items()}
    result = mrc2018.evaluate_mrc2018(p, r)
    assert result.metrics == {"ROUGE-L": pytest.approx(100.0, rel=REL), "BLEU-4": pytest.approx(100.0, rel=REL)}
    assert len(result.per_example) == 99  # one question has no reference answer
    assert {r["bonus"] for r in result.per_example} == {None, "yesno", "entity"}


def _as_mrc(q: dureader.DuReaderQuestion, *, reference: bool) -> mrc2018.Mrc2018Question:
    obj = {"question_id": q.qid, "question_type": q.question_type, "source": q.source, "answers": q.answers,
           "yesno_answers": q.yesno_answers, "entity_answers": q.entity_answers}
    return mrc2018.question_from_line(obj, where="demo", line=q.line or 0, reference=reference)


# --------------------------------------------------------------------------- bonuses


def test_yes_no_bonus_pulls_precision_towards_one_and_needs_the_same_label(tmp_path: Path) -> None:
    refs = [_ref(1, ["可以喝，但要适量", "不可以"], "YES_NO", yesno=["Yes", "No"])]
    plain = _evaluate(tmp_path, refs, [_pred(1, ["可以喝的"])])
    right = _evaluate(tmp_path, refs, [_pred(1, ["可以喝的"], ["Yes"])])
    wrong = _evaluate(tmp_path, refs, [_pred(1, ["可以喝的"], ["Depends"])])
    assert right.per_example[0]["bonus"] == "yesno" and plain.per_example[0]["bonus"] is None
    assert right.per_example[0]["rouge_l"] > plain.per_example[0]["rouge_l"]
    assert wrong.per_example[0]["rouge_l"] == pytest.approx(plain.per_example[0]["rouge_l"])
    # The bonus adds the same matches to numerator and denominator: 3 of 4 unigrams match "可以喝的".
    assert right.per_example[0]["bleu_correct"][0] == 3 + 3 and right.per_example[0]["bleu_guess"][0] == 4 + 3
    assert wrong.per_example[0]["bleu_correct"] == plain.per_example[0]["bleu_correct"]


def test_entity_bonus_rouge_needs_the_whole_entity_but_bleu_counts_ngrams_inside_it(tmp_path: Path) -> None:
    refs = [_ref(1, ["主演是周若岚和陈牧"], "ENTITY", entities=[["周若岚", "陈牧"]])]
    result = _evaluate(tmp_path, refs, [_pred(1, ["周若和陈牧们"])])
    record = result.per_example[0]
    assert record["bonus"] == "entity"
    # BLEU: unigrams 周, 若, 陈, 牧 and bigrams 周若, 陈牧 lie inside an entity.
    base = _evaluate(tmp_path, refs, [_pred(1, ["周若和陈牧们"])], beta=0.0).per_example[0]
    assert [c - b for c, b in zip(record["bleu_correct"], base["bleu_correct"], strict=True)] == [4, 2, 0, 0]
    # ROUGE: only 陈牧 is contained whole: a bonus of 2 characters.
    lcs = 5.0  # 周若和陈牧 is a subsequence of the reference
    p, r = (lcs + 2) / (6 + 2), (lcs + 2) / (9 + 2)
    assert record["rouge_l"] == pytest.approx((1 + 1.44) * p * r / (r + 1.44 * p), rel=REL)


def test_yes_no_bonus_with_fewer_labels_than_answers_names_the_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["很长的答案内容"]),
                                               _ref(77, ["可以", "不行"], "YES_NO", yesno=["Yes"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["很长的答案内容"]), _pred(77, ["可以"], ["Yes"])])
    code, out, err = _cli(capsys, pred, ref)
    assert code == 1 and out is None and "id '77'" in err and "labels" in err
    # Without a predicted label the bonus code (and the crash) is never reached.
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["很长的答案内容"]), _pred(77, ["可以"])])
    code, out, _ = _cli(capsys, pred, ref)
    assert code == 0


def test_alpha_and_beta_weights_and_their_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["可以喝，但要适量"], "YES_NO", yesno=["Yes"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["可以喝的啊"], ["Yes"])])
    _, one, _ = _cli(capsys, pred, ref)
    _, two, _ = _cli(capsys, pred, ref, "--alpha", "2")
    _, zero, _ = _cli(capsys, pred, ref, "--alpha", "0", "--beta", "5")
    assert two["ROUGE-L"] > one["ROUGE-L"] > zero["ROUGE-L"]
    code, _, err = _cli(capsys, pred, ref, "--alpha", "-1")
    assert code == 1 and "--alpha" in err


def test_questions_without_reference_answers_are_skipped_and_none_left_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _evaluate(tmp_path, [_ref(1, []), _ref(2, ["答案内容很长"])], [_pred(2, ["答案内容很长"])])
    assert [r["id"] for r in result.per_example] == [2]
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, [])])
    code, _, err = _cli(capsys, ref, ref)
    assert code == 1 and "no reference question has an answer" in err


def test_null_answers_count_as_no_answer_as_in_the_official(tmp_path: Path) -> None:
    refs = [_ref(1, ["答案内容很长"]), {**_ref(2, []), "answers": None}, _ref(3, ["另一个答案"])]
    preds = [{"question_id": 1, "answers": None}, _pred(3, ["另一个答案"])]
    result = _evaluate(tmp_path, refs, preds)
    assert [r["id"] for r in result.per_example] == [1, 3] and result.per_example[0]["rouge_l"] == 0.0


def test_mrc_bleu_without_smoothing() -> None:
    totals = BleuTotals([4.0, 3.0, 2.0, 1.0], [4.0, 3.0, 2.0, 1.0], 4, 8, 1)
    assert mrc_bleu(totals) == pytest.approx(math.exp(1 - 8 / 4))
    with pytest.raises(UndefinedMetricError):
        mrc_bleu(BleuTotals([1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], 1, 1, 1))
    assert mrc_bleu(BleuTotals([1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], 1, 1, 1), lic2019_guards=True) == 0.0


# --------------------------------------------------------------------------- per-example records


def test_per_example_records_aggregate_to_the_corpus_values_and_break_down_by_type(tmp_path: Path) -> None:
    rng = random.Random(3)
    chars = "甲乙丙丁戊己庚辛壬癸"
    refs, preds = [], []
    for i in range(80):
        qtype = rng.choice(["DESCRIPTION", "ENTITY", "YES_NO"])
        answers = ["".join(rng.choice(chars) for _ in range(rng.randint(4, 12))) for _ in range(rng.randint(1, 3))]
        yesno = [rng.choice(["Yes", "No", "Depends"]) for _ in answers] if qtype == "YES_NO" else []
        entities = [[a[:2]] for a in answers] if qtype == "ENTITY" else [[] for _ in answers]
        refs.append(_ref(i, answers, qtype, yesno, entities))
        preds.append(_pred(i, [answers[-1][1:] + rng.choice(chars)], yesno[:1]))
    result = _evaluate(tmp_path, refs, preds, alpha=0.5, beta=2.0)
    again = mrc2018.aggregate_records(result.per_example)
    assert again["ROUGE-L"] == pytest.approx(result.metrics["ROUGE-L"], rel=REL)
    assert again["BLEU-4"] == pytest.approx(result.metrics["BLEU-4"], rel=REL)
    by_type = mrc2018.breakdown_by_question_type(result.per_example)
    assert set(by_type) == {"DESCRIPTION", "ENTITY", "YES_NO"}
    only_entity = _evaluate(tmp_path, [r for r in refs if r["question_type"] == "ENTITY"], preds,
                            alpha=0.5, beta=2.0)
    assert by_type["ENTITY"]["BLEU-4"] == pytest.approx(only_entity.metrics["BLEU-4"], rel=REL)
    assert by_type["ENTITY"]["ROUGE-L"] == pytest.approx(only_entity.metrics["ROUGE-L"], rel=REL)


def test_the_vectorised_and_plain_paths_give_the_same_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(8)
    chars = "甲乙丙丁戊己庚辛壬癸"
    refs, preds = [], []
    for i in range(200):
        qtype = rng.choice(["DESCRIPTION", "ENTITY", "YES_NO"])
        answers = ["".join(rng.choice(chars) for _ in range(rng.randint(4, 20))) for _ in range(rng.randint(1, 3))]
        yesno = [rng.choice(["Yes", "No"]) for _ in answers] if qtype == "YES_NO" else []
        entities = [[a[1:3], a[-2:]] for a in answers] if qtype == "ENTITY" else [[] for _ in answers]
        refs.append(_ref(i, answers, qtype, yesno, entities))
        preds.append(_pred(i, [rng.choice(answers)[2:] + rng.choice(chars)], yesno[-1:]))
    fast = _evaluate(tmp_path, refs, preds, alpha=0.7, beta=1.5)
    monkeypatch.setattr(charmetrics, "_BATCH_MIN_ITEMS", 10**9)
    plain = _evaluate(tmp_path, refs, preds, alpha=0.7, beta=1.5)
    assert fast.metrics == plain.metrics and fast.per_example == plain.per_example
    single = [mrc2018.bleu_stats_with_bonus(
        p["answers"][0], r["answers"], yn_label=(p["yesno_answers"] or [None])[0] if r["question_type"] == "YES_NO"
        else None, yn_refs=r["yesno_answers"],
        entities={e for g in r["entity_answers"] for e in g} or None if r["question_type"] == "ENTITY" else None,
        alpha=0.7, beta=1.5) for p, r in zip(preds, refs, strict=True)]
    assert [list(s.correct) for s in single] == [rec["bleu_correct"] for rec in fast.per_example]


def test_cli_writes_per_example_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref("q1", ["今天天气很好"], source="zhidao")])
    pred = _write_lines(tmp_path / "pred.json", [_pred("q1", ["今天天气 很好"])])
    out_path = tmp_path / "per.json"
    code, out, _ = _cli(capsys, pred, ref, "--per-example", out_path)
    assert code == 0 and out == {"ROUGE-L": pytest.approx(100.0), "BLEU-4": pytest.approx(100.0)}
    (record,) = json.loads(out_path.read_text(encoding="utf-8"))
    assert record["id"] == "q1" and record["source"] == "zhidao" and record["test_len"] == 6
    assert record["bleu_correct"] == [6, 5, 4, 3] and record["ref_len"] == 6


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"question_id": 1, "answers": ["a"]}\n{bad\n', "invalid JSON"),
        ('{"question_id": 1, "answers": ["a"]}\n\n', "blank line"),
        ('{"answers": ["a"]}\n', "'question_id'"),
        ('{"question_id": 1}\n', "'answers'"),
        ('{"question_id": 1, "answers": [1]}\n', "list of strings"),
        ('{"question_id": 1, "answers": ["a"], "yesno_answers": "Yes"}\n', "'yesno_answers'"),
        ('{"question_id": 1, "answers": ["a"]}\n{"question_id": 1, "answers": ["b"]}\n', "duplicate"),
        ('["question_id"]\n', "JSON object"),
    ],
)
def test_bad_prediction_files_are_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"])])
    pred = tmp_path / "pred.json"
    pred.write_text(text, encoding="utf-8")
    code, out, err = _cli(capsys, pred, ref)
    assert code == 1 and out is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(pred) in lines[0] and needle in lines[0] and "line" in lines[0]


@pytest.mark.parametrize("missing", ["source", "question_type", "answers"])
def test_reference_fields_the_official_reads_are_required(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    obj = _ref(5, ["今天天气很好"])
    del obj[missing]
    ref = _write_lines(tmp_path / "ref.json", [obj])
    pred = _write_lines(tmp_path / "pred.json", [_pred(5, ["今天天气很好"])])
    code, _, err = _cli(capsys, pred, ref)
    assert code == 1 and f"'{missing}'" in err and "id '5'" in err


def test_reference_entities_must_be_lists_of_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [{**_ref(5, ["今天天气很好"], "ENTITY"), "entity_answers": ["今天"]}])
    pred = _write_lines(tmp_path / "pred.json", [_pred(5, ["今天天气很好"])])
    code, _, err = _cli(capsys, pred, ref)
    assert code == 1 and "list of lists of strings" in err


def test_non_utf8_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"])])
    pred = tmp_path / "pred.json"
    pred.write_bytes('{"question_id": 1, "answers": ["今天"]}\n'.encode("gbk"))
    code, _, err = _cli(capsys, pred, ref)
    assert code == 1 and "UTF-8" in err and "line 1" in err


def test_strict_rejects_missing_predictions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _write_lines(tmp_path / "ref.json", [_ref(1, ["今天天气很好"]), _ref(2, ["明天天气很好"])])
    pred = _write_lines(tmp_path / "pred.json", [_pred(1, ["今天天气很好"])])
    code, _, err = _cli(capsys, pred, ref)
    assert code == 0 and "1 of 2 reference questions have no prediction" in err
    code, out, err = _cli(capsys, pred, ref, "--strict")
    assert code == 1 and out is None and "id '2'" in err
