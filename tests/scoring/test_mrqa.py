"""MRQA 2019 (spec 3): golden cases, the real SQuAD dev file, macro-average ranking, hiding answers, bad inputs."""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from scoring.cli import main
from scoring.errors import InputFormatError, ScoringError, UndefinedMetricError
from scoring.io import iter_json_lines, load_prediction_map
from scoring.mrqa import (
    evaluate_mrqa,
    evaluate_mrqa_macro,
    iter_stripped_lines,
    load_mrqa_gold,
    macro_average,
    strip_answers,
)
from scoring.text import f1_v1, normalize_answer
from tests.builders.shared import shared_path
from tests.scoring.helpers import parametrize_golden
from tests.scoring.helpers import run_cli as _cli

REL = 1e-9


def _close(a: Any, b: Any) -> bool:
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, (int, float)):
        return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)
    return bool(a == b)


def _assert_error_line(code: int, err: str, *needles: str) -> None:
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in last


def _context(cid: str, *qas: tuple[str, list[str]]) -> dict[str, Any]:
    return {
        "id": cid,
        "context": "The ferry Tern was launched in 1956.",
        "context_tokens": [["The", 0], ["ferry", 4]],
        "qas": [
            {"qid": qid, "question": f"question {qid}?", "question_tokens": [["question", 0]], "answers": answers,
             "detected_answers": [{"text": a, "char_spans": [[0, 2]], "token_spans": [[0, 0]]} for a in answers],
             "id": qid}
            for qid, answers in qas
        ],
    }


def _write_mrqa(path: Path, lines: list[Any], *, gz: bool = True) -> Path:
    text = "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def _write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


HEADER = {"header": {"dataset": "Tavi", "split": "dev"}}


# --------------------------------------------------------------------------- golden cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_golden(metafunc, "golden_case", "mrqa")


@pytest.mark.shared
def test_golden_case(golden_case: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                     tmp_path: Path) -> None:
    spec = json.loads((golden_case / "case.json").read_text())
    monkeypatch.chdir(golden_case)
    per_example = tmp_path / "rows.json"
    code, out, err = _cli(capsys, "mrqa", *spec["official_arguments"][1:], "--per-example", per_example)
    if (golden_case / "expected_error.json").exists():
        _assert_error_line(code, err)
        return
    assert code == 0, err
    expected = json.loads((golden_case / "expected.json").read_text())
    assert list(out) == list(expected)
    assert all(_close(out[k], v) for k, v in expected.items()), (out, expected)
    rows = json.loads(per_example.read_text())
    wanted = json.loads((golden_case / "expected_per_example.json").read_text())
    assert [r["id"] for r in rows] == [w["id"] for w in wanted]
    for row, want in zip(rows, wanted, strict=True):
        assert row["dataset"] == "SynthQA" or "header" not in row
        for key, value in want.items():
            assert _close(row[key], value), (row["id"], key, row[key], value)
        if row["missing"] and "--skip-no-answer" in spec["official_arguments"]:
            assert "exact_match" not in row  # left out of the denominator, so no score


@pytest.mark.shared
def test_real_squad_dev_scored_with_its_first_golds_is_perfect(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    path = shared_path("data", "mrqa-squad-dev", "SQuAD.jsonl.gz")
    gold = load_mrqa_gold(path, strict=True)
    assert gold.dataset == "SQuAD" and len(gold.questions) == 10507
    pred = _write(tmp_path / "pred.json", {qid: q.answers[0] for qid, q in gold.questions.items()})
    code, out, _ = _cli(capsys, "mrqa", path, pred)
    assert code == 0
    assert out == {"exact_match": 100.0, "f1": 100.0}


# --------------------------------------------------------------------------- a plain reference


WORDS = ["the", "a", "Tern", "tern.", "1,956", "ferry", "\u201cq\u201d", "S\u00e3o", "", " ", "cat cat", "x\u00a0y"]


def test_evaluation_matches_the_plain_reference_on_random_inputs() -> None:
    rng = random.Random(5)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))

    for _ in range(300):
        golds = {f"q{i}": [text() for _ in range(rng.randint(1, 3))] for i in range(rng.randint(1, 8))}
        preds = {q: text() for q in golds if rng.random() < 0.8}
        skip = rng.random() < 0.5
        em = f1 = 0.0
        total = 0
        for qid, answers in golds.items():
            if qid not in preds:
                total += 0 if skip else 1
                continue
            total += 1
            em += max(normalize_answer(preds[qid]) == normalize_answer(a) for a in answers)
            f1 += max(f1_v1(preds[qid], a) for a in answers)
        if total == 0:
            with pytest.raises(UndefinedMetricError):
                evaluate_mrqa(golds, preds, skip_no_answer=skip)
            continue
        got = evaluate_mrqa(golds, preds, skip_no_answer=skip).metrics
        assert _close(got["exact_match"], 100.0 * em / total) and _close(got["f1"], 100.0 * f1 / total)


# --------------------------------------------------------------------------- reading the gold file


def test_header_is_skipped_only_on_the_first_line_and_names_the_dataset(tmp_path: Path) -> None:
    path = _write_mrqa(tmp_path / "x.jsonl.gz", [HEADER, _context("c1", ("q1", ["Tern"]))])
    gold = load_mrqa_gold(path)
    assert gold.dataset == "Tavi" and gold.header == HEADER
    assert gold.questions["q1"].context_id == "c1" and gold.questions["q1"].line == 2
    assert gold.answers == {"q1": ["Tern"]}
    late = _write_mrqa(tmp_path / "late.jsonl.gz", [_context("c1", ("q1", ["Tern"])), HEADER])
    with pytest.raises(InputFormatError, match="only the first line may be a header") as info:
        load_mrqa_gold(late)
    assert info.value.line == 2


def test_a_file_without_header_is_named_after_the_file_and_may_be_plain_text(tmp_path: Path) -> None:
    path = _write_mrqa(tmp_path / "NewsQA.jsonl", [_context("c1", ("q1", ["Tern"]))], gz=False)
    gold = load_mrqa_gold(path)
    assert gold.dataset == "NewsQA" and gold.header is None
    assert evaluate_mrqa(gold, {"q1": "tern"}).per_example == [
        {"id": "q1", "exact_match": 1, "f1": 1.0, "missing": False, "dataset": "NewsQA"}]


def test_a_repeated_qid_overwrites_the_golds_and_strict_names_both_lines(tmp_path: Path) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [
        HEADER, _context("c1", ("q1", ["Tern"]), ("q2", ["1956"])), _context("c2", ("q1", ["Gull"]))])
    gold = load_mrqa_gold(path)
    assert list(gold.questions) == ["q1", "q2"]  # first-occurrence order, as the official dict
    assert gold.questions["q1"].answers == ["Gull"] and gold.questions["q1"].context_id == "c2"
    result = evaluate_mrqa(gold, {"q1": "Tern", "q2": "1956"})
    assert result.metrics["exact_match"] == 50.0
    assert any("lines 2 and 3" in w for w in result.warnings)
    with pytest.raises(InputFormatError, match="already seen on line 2") as info:
        load_mrqa_gold(path, strict=True)
    assert info.value.line == 3 and info.value.qid == "q1"


@pytest.mark.parametrize(
    ("line", "needles"),
    [
        ({"id": "c1", "qas": [{"qid": "q1", "answers": "Tern"}]}, ("line 2", "'q1'", "list of strings")),
        ({"id": "c1", "qas": [{"qid": "q1", "answers": [{"text": "Tern"}]}]}, ("line 2", "list of strings")),
        ({"id": "c1", "qas": [{"question": "?", "answers": []}]}, ("line 2", "string 'qid'")),
        ({"id": "c1", "context": "no qas"}, ("line 2", "'qas' list")),
        (["not", "an", "object"], ("line 2", "'qas' list")),
    ],
)
def test_bad_gold_lines_are_one_clear_line(line: Any, needles: tuple[str, ...], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, line])
    pred = _write(tmp_path / "p.json", {"q1": "Tern"})
    code, out, err = _cli(capsys, "mrqa", path, pred)
    _assert_error_line(code, err, "d.jsonl.gz", *needles)
    assert out is None


def test_bad_json_and_bad_bytes_name_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"header": {}}\n{"id": "c1", "qas": [}\n'))
    pred = _write(tmp_path / "p.json", {"q1": "Tern"})
    code, _, err = _cli(capsys, "mrqa", path, pred)
    _assert_error_line(code, err, "d.jsonl.gz", "line 2", "invalid JSON")
    path.write_bytes(gzip.compress(b'{"header": {}}\n{"id": "caf\xe9", "qas": []}\n'))
    code, _, err = _cli(capsys, "mrqa", path, pred)
    _assert_error_line(code, err, "line 2", "UTF-8")
    path.write_bytes(b"\x1f\x8b\x08garbage")
    code, _, err = _cli(capsys, "mrqa", path, pred)
    _assert_error_line(code, err, "gzip")


# --------------------------------------------------------------------------- evaluation


def test_missing_predictions_count_zero_or_are_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, _context("c1", ("q1", ["Tern"]), ("q2", ["1956"]))])
    pred = _write(tmp_path / "p.json", {"q1": "the Tern", "zz": "ignored"})
    code, out, err = _cli(capsys, "mrqa", path, pred)
    assert code == 0 and out == {"exact_match": 50.0, "f1": 50.0}
    assert "Unanswered question q2 will receive score 0." in err
    code, out, err = _cli(capsys, "mrqa", path, pred, "--skip-no-answer")
    assert code == 0 and out == {"exact_match": 100.0, "f1": 100.0}
    empty = _write(tmp_path / "empty.json", {})
    code, out, err = _cli(capsys, "mrqa", path, empty, "--skip-no-answer")
    _assert_error_line(code, err, "nothing to score")


def test_a_scored_question_needs_a_gold_and_a_string_prediction(tmp_path: Path) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, _context("c1", ("q1", []), ("q2", ["x"]))])
    gold = load_mrqa_gold(path)
    assert evaluate_mrqa(gold, {"q2": "x"}).metrics["exact_match"] == 50.0
    with pytest.raises(InputFormatError, match="no gold answer") as info:
        evaluate_mrqa(gold, {"q1": "x"})
    assert info.value.qid == "q1"
    with pytest.raises(InputFormatError, match="should be a string"):
        evaluate_mrqa(gold, {"q2": 3})


def test_duplicate_prediction_keys_keep_the_last_and_strict_rejects(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, _context("c1", ("q1", ["Tern"]))])
    pred = tmp_path / "p.json"
    pred.write_text('{"q1": "Gull", "q1": "Tern"}', encoding="utf-8")
    code, out, _ = _cli(capsys, "mrqa", path, pred)
    assert code == 0 and out["exact_match"] == 100.0
    code, _, err = _cli(capsys, "mrqa", path, pred, "--strict")
    _assert_error_line(code, err, "'q1'", "more than once")


def test_official_rounding_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, _context("c1", ("q1", ["b c d"]), ("q2", ["x"]), ("q3", ["y"]))])
    pred = _write(tmp_path / "p.json", {"q1": "b c", "q2": "x", "q3": "z"})
    _, plain, _ = _cli(capsys, "mrqa", path, pred)
    _, rounded, _ = _cli(capsys, "mrqa", path, pred, "--official-rounding")
    assert plain == rounded and plain["f1"] == pytest.approx(100 * 1.8 / 3)


# --------------------------------------------------------------------------- macro-average ranking


def test_macro_average_weights_each_dataset_equally() -> None:
    scores = {"A": {"f1": 80.0, "exact_match": 70.0}, "B": {"f1": 60.0, "exact_match": 40.0}}
    assert macro_average(scores) == 70.0
    assert macro_average(scores, "exact_match") == 55.0
    with pytest.raises(InputFormatError, match="dataset 'B' has no 'em' score"):
        macro_average({"A": {"em": 1.0}, "B": {"f1": 2.0}}, "em")
    with pytest.raises(InputFormatError, match="'A' has a 'f1' score that is null"):
        macro_average({"A": {"f1": None}})  # type: ignore[dict-item]
    with pytest.raises(UndefinedMetricError):
        macro_average({})


@pytest.mark.shared
def test_macro_average_reproduces_the_mrqa_2019_hidden_test_ranking() -> None:
    board = json.loads(shared_path("data", "mrqa-results", "ood-test-results.json").read_text())
    entries = {e["submission"]["description"]: e["scores"] for e in board["leaderboard"]}
    dnet = entries["D-NET (Baidu)"]
    per_dataset = {key[:-3]: {"f1": value} for key, value in dnet.items() if key.endswith("_f1")}
    assert len(per_dataset) == 12
    assert round(macro_average(per_dataset), 1) == 72.5  # the overview paper's number


def test_macro_command_scores_each_pair_and_averages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write_mrqa(tmp_path / "a.jsonl.gz", [{"header": {"dataset": "A"}}, _context("c", ("q1", ["x"]), ("q2", ["y"]))])
    b = _write_mrqa(tmp_path / "B.jsonl.gz", [_context("c", ("r1", ["b c d"]))])
    pa = _write(tmp_path / "pa.json", {"q1": "x", "q2": "z"})
    pb = _write(tmp_path / "pb.json", {"r1": "b c"})
    rows = tmp_path / "rows.json"
    code, out, _ = _cli(capsys, "mrqa-macro", a, pa, b, pb, "--per-example", rows)
    assert code == 0
    assert out["datasets"] == {"A": {"exact_match": 50.0, "f1": 50.0},
                               "B": {"exact_match": 0.0, "f1": pytest.approx(80.0)}}
    assert out["macro_average"] == {"exact_match": 25.0, "f1": pytest.approx(65.0)}
    assert [(r["id"], r["dataset"]) for r in json.loads(rows.read_text())] == [("q1", "A"), ("q2", "A"), ("r1", "B")]


def test_macro_command_rejects_an_odd_file_count_and_a_repeated_dataset_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _write_mrqa(tmp_path / "a.jsonl.gz", [HEADER, _context("c", ("q1", ["x"]))])
    b = _write_mrqa(tmp_path / "b.jsonl.gz", [HEADER, _context("c", ("q2", ["x"]))])
    p = _write(tmp_path / "p.json", {"q1": "x", "q2": "x"})
    code, _, err = _cli(capsys, "mrqa-macro", a, p, b)
    _assert_error_line(code, err, "odd number", "b.jsonl.gz")
    code, _, err = _cli(capsys, "mrqa-macro", a, p, b, p)
    _assert_error_line(code, err, "b.jsonl.gz", "'Tavi'", "two files")
    with pytest.raises(SystemExit):
        main(["mrqa-macro", "--help"])
    assert "macro_average" in capsys.readouterr().out


def test_macro_python_api() -> None:
    with pytest.raises(UndefinedMetricError):
        evaluate_mrqa_macro([])


# --------------------------------------------------------------------------- hiding the answers


def test_stripped_file_keeps_what_a_system_reads_and_no_answer(tmp_path: Path) -> None:
    src = _write_mrqa(tmp_path / "d.jsonl.gz", [
        HEADER,
        _context("c1", ("q1", ["Tern", "the ferry Tern"]), ("q2", ["1956"])),
        _context("c2", ("q3", ["launched in 1956"])),
    ])
    out = tmp_path / "hidden.jsonl.gz"
    assert strip_answers(src, out) == 3
    raw = gzip.decompress(out.read_bytes()).decode("utf-8")
    lines = [json.loads(line) for line in raw.splitlines()]
    assert lines[0] == HEADER
    original = [obj for _, obj in iter_json_lines(src)]
    for before, after in zip(original[1:], lines[1:], strict=True):
        assert after["context"] == before["context"] and after["context_tokens"] == before["context_tokens"]
        for qa_before, qa_after in zip(before["qas"], after["qas"], strict=True):
            # The source's own question "id" is not needed to answer (and would name a sealed source).
            assert qa_after == {k: qa_before[k] for k in ("qid", "question", "question_tokens")}
            # No gold string survives anywhere in the question records.
            assert not any(gold in json.dumps(qa_after) for gold in qa_before["answers"])
    with pytest.raises(InputFormatError, match="'answers'"):
        load_mrqa_gold(out)


def test_stripping_is_deterministic_and_plain_output_is_not_gzipped(tmp_path: Path) -> None:
    src = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, _context("c1", ("q1", ["Tern"]))])
    strip_answers(src, tmp_path / "one.jsonl.gz")
    strip_answers(src, tmp_path / "two.jsonl.gz")
    assert (tmp_path / "one.jsonl.gz").read_bytes() == (tmp_path / "two.jsonl.gz").read_bytes()
    strip_answers(src, tmp_path / "plain.jsonl")
    assert (tmp_path / "plain.jsonl").read_text(encoding="utf-8").splitlines() == list(iter_stripped_lines(src))


@pytest.mark.shared
def test_stripping_the_real_files_removes_every_answer_field(tmp_path: Path) -> None:
    for name in ("SQuAD.jsonl.gz", "HotpotQA.jsonl.gz", "DROP.jsonl.gz"):
        src = shared_path("data", "mrqa-mini", name)
        out = tmp_path / name
        strip_answers(src, out)
        gold = load_mrqa_gold(src)
        stripped = [obj for _, obj in iter_json_lines(out)]
        assert stripped[0] == next(iter_json_lines(src))[1]  # the header
        qas = [qa for obj in stripped[1:] for qa in obj["qas"]]
        assert [qa["qid"] for qa in qas] == list(gold.questions)
        for qa in qas:
            assert not any("answer" in key or "span" in key for key in qa)


def test_loaded_predictions_work_with_the_python_api(tmp_path: Path) -> None:
    path = _write_mrqa(tmp_path / "d.jsonl.gz", [HEADER, _context("c1", ("q1", ["Tern"]))])
    pred = _write(tmp_path / "p.json", {"q1": "tern"})
    result = evaluate_mrqa(load_mrqa_gold(path), load_prediction_map(pred))
    assert result.metrics == {"exact_match": 100.0, "f1": 100.0}
    with pytest.raises(ScoringError):
        evaluate_mrqa({}, {})
    with pytest.raises(InputFormatError, match="list of strings"):
        evaluate_mrqa({"q1": ["x", 3]}, {"q1": "x"})  # type: ignore[list-item]
