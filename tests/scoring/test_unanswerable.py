"""Unanswerable-question detection by level (Nakanishi et al. 2018): a hand-computed fixture, rules, bad inputs.

The fixture ``data/unans_levels.json`` has three answerable questions and five
unanswerable ones with level labels in the three accepted spellings; its
expected numbers are worked out by hand in the comments below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scoring.cli import main
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.squad import evaluate_squad_v2, load_squad_dataset
from scoring.unanswerable import LEVEL_FIELDS, evaluate_unanswerable
from tests.builders.shared import shared_path
from tests.scoring.helpers import run_cli as _cli

DATA = Path(__file__).parent / "data"
DATASET = DATA / "unans_levels.json"
PRED = DATA / "unans_pred.json"
NA_PROB = DATA / "unans_na_prob.json"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _dataset(*qas: dict[str, Any]) -> dict[str, Any]:
    return {"data": [{"paragraphs": [{"context": "c", "qas": list(qas)}]}]}


def _qa(qid: str, *answers: str, **extra: Any) -> dict[str, Any]:
    return {"id": qid, "question": "?", "answers": [{"text": a, "answer_start": 0} for a in answers], **extra}


def test_fixture_scores_as_computed_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "unanswerable", DATASET, PRED)
    assert code == 0
    # Detection: a1 yes, a2 no ("" on an answerable one), a3 yes, u1 yes, u2 no ("1956"),
    # u3 yes, u4 no ("the" is an answer, though it scores EM 1 as in SQuAD 2.0), u5 yes.
    # F1 of "the ferry" against "ferry company" is 2/3.
    assert out == {
        "total": 8, "detection_accuracy": 62.5,
        "answerable_total": 3, "answerable_detection_accuracy": pytest.approx(200 / 3),
        "answerable_exact": pytest.approx(100 / 3), "answerable_f1": pytest.approx(100 * (5 / 3) / 3),
        "unanswerable_total": 5, "unanswerable_detection_accuracy": 60.0,
        "exact": 62.5, "f1": pytest.approx(100 * (17 / 3) / 8),
        # Balanced sets (seed 0): LEVEL1 draws a1 and a3 (both detected: 3 of 4 right), LEVEL2 and
        # "3" draw a2 (predicted "": LEVEL2 1 of 2, "3" 0 of 2).
        "levels": {
            "3": {"total": 1, "detection_accuracy": 0.0, "answerable_total": 0, "unanswerable_total": 1,
                  "unanswerable_detection_accuracy": 0.0, "exact": 100.0, "f1": 100.0,
                  "balanced_total": 2, "balanced_detection_accuracy": 0.0},
            "LEVEL1": {"total": 2, "detection_accuracy": 50.0, "answerable_total": 0, "unanswerable_total": 2,
                       "unanswerable_detection_accuracy": 50.0, "exact": 50.0, "f1": 50.0,
                       "balanced_total": 4, "balanced_detection_accuracy": 75.0},
            "LEVEL2": {"total": 1, "detection_accuracy": 100.0, "answerable_total": 0, "unanswerable_total": 1,
                       "unanswerable_detection_accuracy": 100.0, "exact": 100.0, "f1": 100.0,
                       "balanced_total": 2, "balanced_detection_accuracy": 50.0},
        },
    }


def test_no_answer_probabilities_above_the_threshold_mean_unanswerable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "unanswerable", DATASET, PRED, "-n", NA_PROB, "-t", "0.5")
    assert code == 0
    # Now a3 (0.7), u2 (0.6) and u4 (0.9) are predicted unanswerable as well.
    assert out["detection_accuracy"] == 75.0
    assert out["answerable_detection_accuracy"] == pytest.approx(100 / 3)
    assert out["unanswerable_detection_accuracy"] == 100.0
    assert out["answerable_exact"] == out["answerable_f1"] == pytest.approx(100 / 3)
    assert out["levels"]["LEVEL1"]["detection_accuracy"] == 100.0


def test_exact_and_f1_are_squad2s_thresholded_scores() -> None:
    dataset, preds, na = load_squad_dataset(DATASET), _load(PRED), _load(NA_PROB)
    for thresh in (1.0, 0.5, 0.0):
        ours = evaluate_unanswerable(dataset, preds, na, na_prob_thresh=thresh).metrics
        squad = evaluate_squad_v2(dataset, preds, na, na_prob_thresh=thresh).metrics
        assert ours["exact"] == pytest.approx(squad["exact"]) and ours["f1"] == pytest.approx(squad["f1"])
        assert ours["answerable_exact"] == pytest.approx(squad["HasAns_exact"])
        assert ours["answerable_f1"] == pytest.approx(squad["HasAns_f1"])


def test_per_example_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows_path = tmp_path / "rows.json"
    code, _, _ = _cli(capsys, "unanswerable", DATASET, PRED, "-n", NA_PROB, "--per-example", rows_path)
    assert code == 0
    rows = json.loads(rows_path.read_text())
    assert [r["id"] for r in rows] == ["a1", "a2", "a3", "u1", "u2", "u3", "u4", "u5"]
    assert rows[6] == {"id": "u4", "level": "3", "has_ans": False, "predicted_unanswerable": False,
                       "detection_correct": False, "exact": 1, "f1": 1.0, "missing": False, "na_prob": 0.9}
    assert rows[0]["level"] is None and rows[5]["level"] == "LEVEL2"


def test_level_field_names_are_documented_and_conflicts_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["unanswerable", "--help"])
    help_text = capsys.readouterr().out
    assert all(name in help_text for name in LEVEL_FIELDS)
    data = _dataset(_qa("u1", level="LEVEL1", difficulty="LEVEL2"))
    with pytest.raises(InputFormatError, match="level fields disagree") as info:
        evaluate_unanswerable(data, {"u1": ""})
    assert info.value.qid == "u1"
    with pytest.raises(InputFormatError, match="'level' should be a string or an integer"):
        evaluate_unanswerable(_dataset(_qa("u1", level=["x"])), {"u1": ""})
    same = evaluate_unanswerable(_dataset(_qa("u1", level="2", difficulty_level=2)), {"u1": ""})
    assert list(same.metrics["levels"]) == ["2"]


def test_levels_sort_naturally_and_unlabelled_questions_count_only_overall() -> None:
    data = _dataset(_qa("u10", level="LEVEL10"), _qa("u2", level="LEVEL2"), _qa("a1", "cat"))
    metrics = evaluate_unanswerable(data, {"u10": "", "u2": "", "a1": "cat"}).metrics
    assert list(metrics["levels"]) == ["LEVEL2", "LEVEL10"]
    assert metrics["total"] == 3 and sum(v["total"] for v in metrics["levels"].values()) == 2
    assert "levels" not in evaluate_unanswerable(_dataset(_qa("a1", "cat")), {"a1": "cat"}).metrics


def test_metrics_over_no_question_are_left_out_not_invented() -> None:
    only_answerable = evaluate_unanswerable(_dataset(_qa("a1", "cat")), {"a1": "dog"}).metrics
    assert "unanswerable_detection_accuracy" not in only_answerable
    assert only_answerable["unanswerable_total"] == 0 and only_answerable["answerable_f1"] == 0.0
    with pytest.raises(UndefinedMetricError):
        evaluate_unanswerable(_dataset(), {})


def test_missing_predictions_are_an_error_unless_counted_as_abstentions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preds = _load(PRED)
    del preds["u1"], preds["a1"]
    pred = _write(tmp_path / "p.json", preds)
    code, out, err = _cli(capsys, "unanswerable", DATASET, pred)
    assert code == 1 and out is None and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: ")
    assert "'a1'" in err and "2 of 8 questions have no prediction" in err
    code, out, err = _cli(capsys, "unanswerable", DATASET, pred, "--missing-as-empty")
    assert code == 0
    # a1 becomes a wrong abstention, u1 a right one: 4 of 8.
    assert out["detection_accuracy"] == 50.0 and "no prediction" in err
    na = _load(NA_PROB)
    del na["u1"], na["a1"]
    code, out, _ = _cli(capsys, "unanswerable", DATASET, pred, "-n", _write(tmp_path / "na.json", na),
                        "--missing-as-empty")
    assert code == 0 and out["detection_accuracy"] == 50.0
    del na["u2"]
    code, _, err = _cli(capsys, "unanswerable", DATASET, pred, "-n", _write(tmp_path / "na.json", na))
    assert code == 1 and "no prediction" in err
    code, _, err = _cli(capsys, "unanswerable", DATASET, PRED, "-n", _write(tmp_path / "na.json", na))
    assert code == 1 and "'a1'" in err and "no-answer probability" in err


def test_repeated_qid_is_scored_once_and_strict_rejects_it() -> None:
    data = _dataset(_qa("q1", "cat"), _qa("q1", level="LEVEL1"))
    result = evaluate_unanswerable(data, {"q1": ""})
    assert result.metrics["total"] == 1 and result.metrics["detection_accuracy"] == 100.0
    assert any("repeated question id" in w for w in result.warnings)
    with pytest.raises(InputFormatError, match="already used"):
        evaluate_unanswerable(data, {"q1": ""}, strict=True)


def test_bad_inputs_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "d.json"
    bad.write_text('{"data": [{"paragraphs": [{"qas": [{"id": "q1"}]}]}]}', encoding="utf-8")
    code, _, err = _cli(capsys, "unanswerable", bad, PRED)
    assert code == 1 and "'q1'" in err and "'answers'" in err and "Traceback" not in err
    pred = _write(tmp_path / "p.json", {**_load(PRED), "a1": None})
    code, _, err = _cli(capsys, "unanswerable", DATASET, pred)
    assert code == 1 and "'a1'" in err and "should be a string" in err



def test_official_rounding_changes_nothing_as_there_is_no_official_script(capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = _cli(capsys, "unanswerable", DATASET, PRED)
    _, rounded, _ = _cli(capsys, "unanswerable", DATASET, PRED, "--official-rounding")
    assert plain == rounded


@pytest.mark.shared
def test_real_squad2_dev_with_gold_predictions_detects_everything(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_path("data", "squad-v2.0", "dev-v2.0.json")
    dataset = json.loads(path.read_text())
    preds = {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "")
             for article in dataset["data"] for p in article["paragraphs"] for qa in p["qas"]}
    code, out, _ = _cli(capsys, "unanswerable", path, _write(tmp_path / "p.json", preds))
    assert code == 0
    assert out["detection_accuracy"] == out["answerable_exact"] == out["unanswerable_detection_accuracy"] == 100.0
    assert out["unanswerable_total"] == 3168
