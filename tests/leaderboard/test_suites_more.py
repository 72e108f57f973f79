"""The SQuAD 2.0, QuAC and CoQA suites: gold checks, answer-free inputs, scores equal to scoring/'s, end to end.

Gold fixtures are small handmade files in each benchmark's real format; the
real excerpts under ../shared/data are used where present.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Dataset, DatasetFile, MetricSuite, Phase
from leaderboard.challenges.services import dataset_file_put
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites.coqa import CoqaSuite
from leaderboard.challenges.suites.quac import QuacSuite
from leaderboard.challenges.suites.squad2 import Squad2Suite
from leaderboard.core.errors import ServiceError
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from leaderboard.submissions.reload import challenge_load
from scoring import coqa, quac, squad, unanswerable
from scoring.errors import InputFormatError
from scoring.inputs import coqa_qid
from tests.builders.cast import upload
from tests.builders.shared import shared_path
from tests.builders.suites import (
    COMPLEXITY,
    NORMANS,
    PLANTS,
    SPEC,
    VATICAN,
    assert_metric_names,
    coqa_gold,
    encode,
    quac_gold,
    rejected,
    squad2_gold,
    squad_qas,
    write,
)

# --------------------------------------------------------------------------- fixtures: SQuAD 2.0


def squad2_gold_predictions(gold: Mapping[str, Any]) -> dict[str, str]:
    return {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "") for qa in squad_qas(gold)}


def squad2_some_wrong(gold: Mapping[str, Any]) -> dict[str, str]:
    preds = squad2_gold_predictions(gold)
    preds["5733be284776f41900661182"] = "Denmark"  # wrong answer
    preds["5733be284776f4190066117f"] = "in the 10th century"  # partly right
    preds["5ad5316b5b96ef001a10ab72"] = "Computational complexity theory"  # answered an unanswerable one
    return preds


# --------------------------------------------------------------------------- fixtures: QuAC


def quac_qas(gold: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def quac_gold_predictions(gold: Mapping[str, Any]) -> dict[str, Any]:
    return {qa["id"]: {"answer": qa["orig_answer"]["text"], "yesno": qa["yesno"], "followup": qa["followup"]}
            for qa in quac_qas(gold)}


def quac_some_wrong(gold: Mapping[str, Any]) -> dict[str, Any]:
    preds = quac_gold_predictions(gold)
    qids = list(preds)
    preds[qids[0]] = "made her singing debut at the Apollo Theater"  # partial span, default dialog acts
    preds[qids[1]] = {"answer": "she won first prize", "yesno": "n", "followup": "y"}  # wrong yes/no
    preds[qids[3]] = {"answer": "Chick Webb", "yesno": "x", "followup": "n"}  # answered a CANNOTANSWER
    preds[qids[5]] = "CANNOTANSWER"  # abstained on an answerable one
    return preds


def quac_official_lines(gold: Mapping[str, Any], preds: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The same predictions in QuAC's official format: one JSON line per dialog."""
    lines = []
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            line: dict[str, list[str]] = {"qid": [], "best_span_str": [], "yesno": [], "followup": []}
            for qa in paragraph["qas"]:
                pred = preds[qa["id"]]
                if isinstance(pred, str):
                    pred = {"answer": pred, "yesno": "x", "followup": "m"}
                line["qid"].append(qa["id"])
                line["best_span_str"].append(pred["answer"])
                line["yesno"].append(pred["yesno"])
                line["followup"].append(pred["followup"])
            lines.append(line)
    return lines


# --------------------------------------------------------------------------- fixtures: CoQA


def coqa_gold_predictions(gold: Mapping[str, Any]) -> dict[str, str]:
    return {f"{story['id']}_{a['turn_id']}": a["input_text"] for story in gold["data"] for a in story["answers"]}


def coqa_some_wrong(gold: Mapping[str, Any]) -> dict[str, str]:
    preds = coqa_gold_predictions(gold)
    preds["3zotghdk5ibi9cex97fepx7jetpops_1"] = "1475"
    preds["3zotghdk5ibi9cex97fepx7jetpops_4"] = "Pope Nicholas V"
    preds["3h7z272lx76uk5mrhpyl1vcfd1tpl0_3"] = "the stems"
    return preds


def coqa_official_predictions(gold: Mapping[str, Any], preds: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"id": story["id"], "turn_id": q["turn_id"], "answer": preds[f"{story['id']}_{q['turn_id']}"]}
            for story in gold["data"] for q in story["questions"]]


# --------------------------------------------------------------------------- helpers


def assert_close(actual: float | None, expected: float | None, what: str) -> None:
    if expected is None or actual is None:
        assert actual is None and expected is None, what
    else:
        assert abs(actual - expected) <= 1e-9, f"{what}: {actual} != {expected}"


def outside(document: Any, skip: frozenset[str]) -> list[str]:
    """Every string in ``document`` except the values of the ``skip`` keys (the passages)."""
    if isinstance(document, dict):
        return [s for k, v in document.items() if k not in skip for s in outside(v, skip)]
    if isinstance(document, list):
        return [s for v in document for s in outside(v, skip)]
    return [document] if isinstance(document, str) else []


def keys_of(document: Any) -> set[str]:
    if isinstance(document, dict):
        return set(document) | {k for v in document.values() for k in keys_of(v)}
    if isinstance(document, list):
        return {k for v in document for k in keys_of(v)}
    return set()


# --------------------------------------------------------------------------- registry


def test_every_suite_the_challenge_model_offers_is_available() -> None:
    assert set(SUITES) == {c.value for c in MetricSuite}
    for key, suite in SUITES.items():
        assert suite.key == key
        shown = {c.metric for c in (*suite.dataset_columns, *suite.aggregate_columns)}
        assert suite.primary_metric in {c.metric for c in suite.aggregate_columns}, key
        if key in ("squad2", "quac", "coqa"):
            assert_metric_names(shown)


def test_an_aggregate_is_the_mean_over_datasets_and_none_when_one_lacks_the_metric() -> None:
    per_dataset: Any = {"a": {"f1": 80.0, "noans_f1": 50.0}, "b": {"f1": 60.0}}
    for suite in (Squad2Suite(), QuacSuite(), CoqaSuite()):
        assert suite.aggregate(per_dataset) == {"f1": 70.0, "noans_f1": None}


# --------------------------------------------------------------------------- SQuAD 2.0


class TestSquad2:
    suite = Squad2Suite()

    def test_malformed_gold_is_rejected_naming_the_file_and_question(self) -> None:
        rejected(lambda: self.suite.inspect_gold(b'{"version": "v2.0", "data": [', filename="dev-v2.0.json"),
                 "dev-v2.0.json", "invalid JSON")
        gold = squad2_gold()
        del gold["data"][0]["paragraphs"][0]["qas"][2]["answers"]
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="dev-v2.0.json"),
                 "dev-v2.0.json", "'5733be284776f41900661180'", "answers")
        gold = squad2_gold()
        del gold["data"][1]["paragraphs"][0]["qas"][0]["question"]
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="dev-v2.0.json"),
                 "dev-v2.0.json", "'56e16182e3433e1400422e28'", "'question'")

    def test_a_repeated_question_id_is_rejected_naming_both_places(self) -> None:
        gold = squad2_gold()
        gold["data"][1]["paragraphs"][0]["qas"][1]["id"] = "5733be284776f41900661182"
        error = rejected(lambda: self.suite.inspect_gold(encode(gold), filename="dev-v2.0.json"),
                         "dev-v2.0.json", "'5733be284776f41900661182'", "data[1].paragraphs[0].qas[1]",
                         "data[0].paragraphs[0].qas[0]")
        assert isinstance(error, InputFormatError)

    def test_levels_that_would_share_a_metric_name_are_rejected(self) -> None:
        gold = squad2_gold()
        gold["data"][1]["paragraphs"][0]["qas"][3]["level"] = "Level 1"
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="naq.json"),
                 "naq.json", "'LEVEL1'", "'Level 1'", "level_1_")
        gold = squad2_gold()
        gold["data"][0]["paragraphs"][0]["qas"][3]["level"] = ["LEVEL1"]
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="naq.json"),
                 "naq.json", "'5ad39d53604f3c001a3fe8d1'", "'level'")

    def test_inputs_keep_passages_and_questions_but_no_answer(self) -> None:
        gold = squad2_gold()
        info = self.suite.inspect_gold(encode(gold), filename="dev-v2.0.json")
        inputs = json.loads(info.inputs)
        assert info.qids == [qa["id"] for qa in squad_qas(gold)]
        assert [qa["question"] for qa in squad_qas(inputs)] == [qa["question"] for qa in squad_qas(gold)]
        assert [p["context"] for a in inputs["data"] for p in a["paragraphs"]] == [NORMANS, COMPLEXITY]
        assert not keys_of(inputs) & {"answers", "is_impossible", "plausible_answers", "answer_start"}
        # Answers are spans of the passage; anywhere else they would be given away.
        for answer in ("Rollo", "10th and 11th centuries", "A computational problem"):
            assert not any(answer in s for s in outside(inputs, frozenset({"context"}))), answer

    def test_levels_are_withheld_when_they_give_answerability_away(self) -> None:
        # Here only unanswerable questions have a level: having one *is* is_impossible.
        inputs = json.loads(self.suite.inspect_gold(encode(squad2_gold()), filename="naq.json").inputs)
        assert "level" not in keys_of(inputs)
        # Levels on every question, both kinds at each level: they say nothing about the answer.
        gold = squad2_gold()
        for n, qa in enumerate(squad_qas(gold)):
            qa["level"] = f"LEVEL{1 + n % 2}"
        inputs = json.loads(self.suite.inspect_gold(encode(gold), filename="naq.json").inputs)
        assert [qa["level"] for qa in squad_qas(inputs)] == [qa["level"] for qa in squad_qas(gold)]

    def test_gold_answers_score_100_and_a_wrong_answer_lowers_f1(self, tmp_path: Path) -> None:
        gold = squad2_gold()
        path = str(write(tmp_path, gold))
        perfect = self.suite.score(path, squad2_gold_predictions(gold), self.suite.options_type()).metrics
        assert perfect["f1"] == pytest.approx(100.0) and perfect["exact"] == pytest.approx(100.0)
        assert perfect["detection_acc"] == pytest.approx(100.0)
        assert {"hasans_f1", "noans_f1", "level_1_detection_acc", "level_2_f1", "level_3_exact"} <= set(perfect)
        assert_metric_names(perfect)
        worse = self.suite.score(path, squad2_some_wrong(gold), self.suite.options_type()).metrics
        assert worse["f1"] is not None and worse["f1"] < 100.0
        assert worse["level_1_detection_acc"] == pytest.approx(50.0)

    def test_numbers_are_the_scoring_librarys(self, tmp_path: Path) -> None:
        gold = squad2_gold()
        path = str(write(tmp_path, gold))
        preds = squad2_some_wrong(gold)
        result = self.suite.score(path, preds, self.suite.options_type())
        official = squad.evaluate_squad_v2(squad.load_squad_dataset(path), preds).metrics
        detection = unanswerable.evaluate_unanswerable(squad.load_squad_dataset(path), preds).metrics
        expected = {
            "exact": official["exact"], "f1": official["f1"],
            "hasans_exact": official["HasAns_exact"], "hasans_f1": official["HasAns_f1"],
            "noans_exact": official["NoAns_exact"], "noans_f1": official["NoAns_f1"],
            "detection_acc": detection["detection_accuracy"],
        }
        for label, name in (("LEVEL1", "1"), ("LEVEL2", "2"), ("LEVEL3", "3")):
            level = detection["levels"][label]
            expected |= {f"level_{name}_detection_acc": level["detection_accuracy"],
                         f"level_{name}_exact": level["exact"], f"level_{name}_f1": level["f1"],
                         f"level_{name}_balanced_detection_acc": level["balanced_detection_accuracy"]}
        assert set(result.metrics) == set(expected)
        for metric, value in expected.items():
            assert_close(result.metrics[metric], value, metric)
        assert [r["id"] for r in result.per_example] == list(preds)

    def test_a_missing_prediction_is_an_error_naming_the_question(self, tmp_path: Path) -> None:
        gold = squad2_gold()
        preds = squad2_gold_predictions(gold)
        del preds["5ad5316b5b96ef001a10ab73"]
        with pytest.raises(InputFormatError, match="5ad5316b5b96ef001a10ab73"):
            self.suite.score(str(write(tmp_path, gold)), preds, self.suite.options_type())

    @pytest.mark.shared
    def test_the_real_dev_set_scores_as_the_library_does(self, tmp_path: Path) -> None:
        raw = shared_path("data", "squad-v2.0", "dev-v2.0.json").read_bytes()
        gold = json.loads(raw)
        info = self.suite.inspect_gold(raw, filename="dev-v2.0.json")
        assert len(info.qids) == 6078
        assert b"plausible_answers" not in info.inputs and b"is_impossible" not in info.inputs
        preds = {qa["id"]: ("" if n % 7 == 0 else qa["answers"][0]["text"] if qa["answers"] else "Normans")
                 for n, qa in enumerate(squad_qas(gold))}
        path = str(write(tmp_path, gold))
        result = self.suite.score(path, preds, self.suite.options_type())
        official = squad.evaluate_squad_v2(gold, preds).metrics
        for metric, key in (("f1", "f1"), ("exact", "exact"), ("hasans_f1", "HasAns_f1"), ("noans_f1", "NoAns_f1")):
            assert_close(result.metrics[metric], official[key], metric)
        assert_close(result.metrics["detection_acc"],
                     unanswerable.evaluate_unanswerable(gold, preds).metrics["detection_accuracy"], "detection")
        assert not any(k.startswith("level_") for k in result.metrics)


# --------------------------------------------------------------------------- QuAC


class TestQuac:
    suite = QuacSuite()

    def test_malformed_gold_is_rejected_naming_the_file_and_question(self) -> None:
        rejected(lambda: self.suite.inspect_gold(b"[1, 2]", filename="val_v0.2.json"), "val_v0.2.json", "'data'")
        gold = quac_gold()
        qa = gold["data"][0]["paragraphs"][0]["qas"][1]
        del qa["followup"]
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="val_v0.2.json"),
                 "val_v0.2.json", repr(qa["id"]), "'followup'")
        gold = quac_gold()
        qa = gold["data"][1]["paragraphs"][0]["qas"][0]
        qa["yesno"] = "maybe"
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="val_v0.2.json"),
                 "val_v0.2.json", repr(qa["id"]), "'yesno'", "'maybe'")

    def test_a_repeated_question_id_is_rejected_naming_it(self) -> None:
        gold = quac_gold()
        first = gold["data"][0]["paragraphs"][0]["qas"][0]["id"]
        gold["data"][1]["paragraphs"][0]["qas"][2]["id"] = first
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="val_v0.2.json"),
                 "val_v0.2.json", repr(first), "more than once")

    def test_inputs_keep_every_question_of_the_dialog_but_no_answer_or_dialog_act(self) -> None:
        gold = quac_gold()
        info = self.suite.inspect_gold(encode(gold), filename="val_v0.2.json")
        inputs = json.loads(info.inputs)
        assert info.qids == [qa["id"] for qa in quac_qas(gold)]
        assert [(qa["id"], qa["question"]) for qa in quac_qas(inputs)] == [
            (qa["id"], qa["question"]) for qa in quac_qas(gold)
        ]
        assert inputs["data"][0]["background"] == gold["data"][0]["background"]
        assert not keys_of(inputs) & {"answers", "orig_answer", "yesno", "followup", "answer_start"}
        assert set(keys_of(inputs["data"][0]["paragraphs"][0]["qas"])) == {"id", "question"}
        for answer in ("Chick Webb's orchestra", "German ciphers", "amateur contest", "CANNOTANSWER"):
            assert not any(answer in s for s in outside(inputs, frozenset({"context"}))), answer

    def test_prediction_shapes_are_checked_naming_the_question(self) -> None:
        self.suite.check_predictions({"q1": "span", "q2": {"answer": "x", "yesno": "y", "followup": "m"},
                                      "q3": {"answer": "CANNOTANSWER"}}, where="p.json")
        bad: list[tuple[Any, str]] = [
            ({"q1": 3}, "'q1'"),
            ({"q1": {"yesno": "y"}}, "'q1'"),
            ({"q1": {"answer": "a", "yesno": "yes"}}, "'yes'"),
            ({"q1": {"answer": "a", "followup": ["y"]}}, "followup"),
            ({"q1": {"answer": "a", "follow_up": "y"}}, "'follow_up'"),
            (["a"], "JSON object"),
        ]
        for predictions, fragment in bad:
            with pytest.raises(InputFormatError, match=fragment) as caught:
                self.suite.check_predictions(predictions, where="p.json")
            assert "p.json" in str(caught.value)

    def test_gold_answers_score_100_and_a_wrong_answer_lowers_f1(self, tmp_path: Path) -> None:
        gold = quac_gold()
        path = str(write(tmp_path, gold))
        perfect = self.suite.score(path, quac_gold_predictions(gold), self.suite.options_type()).metrics
        for metric in ("f1", "heq_q", "heq_d", "yesno_acc", "followup_acc", "unanswerable_acc", "unfiltered_f1"):
            assert perfect[metric] == pytest.approx(100.0), metric
        assert_metric_names(perfect)
        worse = self.suite.score(path, quac_some_wrong(gold), self.suite.options_type()).metrics
        assert worse["f1"] is not None and worse["f1"] < 100.0
        assert worse["heq_d"] == pytest.approx(0.0)

    def test_numbers_are_the_scoring_librarys(self, tmp_path: Path) -> None:
        gold = quac_gold()
        path = str(write(tmp_path, gold))
        preds = quac_some_wrong(gold)
        result = self.suite.score(path, preds, self.suite.options_type())
        official = quac.evaluate_quac(quac.load_quac_dataset(path), quac_official_lines(gold, preds)).metrics
        names = {"f1": "f1", "heq_q": "HEQ", "heq_d": "DHEQ", "yesno_acc": "yes/no", "followup_acc": "followup",
                 "unanswerable_acc": "unanswerable_acc", "unfiltered_f1": "unfiltered_f1"}
        assert set(result.metrics) == set(names)
        for metric, key in names.items():
            assert_close(result.metrics[metric], official[key], metric)
        assert not any("refs_after_handle_cannot" in r for r in result.per_example)

    def test_a_dataset_without_cannotanswer_questions_scores_with_unanswerable_acc_undefined(
        self, tmp_path: Path
    ) -> None:
        gold = quac_gold()
        for paragraph in (p for a in gold["data"] for p in a["paragraphs"]):
            paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["orig_answer"]["text"] != "CANNOTANSWER"]
        metrics = self.suite.score(str(write(tmp_path, gold)), quac_gold_predictions(gold), self.suite.options_type()).metrics
        assert metrics["unanswerable_acc"] is None and metrics["f1"] == pytest.approx(100.0)

    @pytest.mark.shared
    def test_the_real_excerpt_scores_as_the_library_does(self, tmp_path: Path) -> None:
        raw = shared_path("data", "quac-excerpt", "val_v0.2.json").read_bytes()
        gold = json.loads(raw)
        info = self.suite.inspect_gold(raw, filename="val_v0.2.json")
        assert len(info.qids) == 41 and b"orig_answer" not in info.inputs
        preds: dict[str, Any] = {}
        for n, qa in enumerate(quac_qas(gold)):
            answer = qa["answers"][-1]["text"] if n % 3 else "CANNOTANSWER"
            preds[qa["id"]] = answer if n % 4 == 0 else {"answer": answer, "yesno": qa["yesno"], "followup": "y"}
        path = str(write(tmp_path, gold))
        result = self.suite.score(path, preds, self.suite.options_type())
        official = quac.evaluate_quac(quac.load_quac_dataset(path), quac_official_lines(gold, preds)).metrics
        for metric, key in (("f1", "f1"), ("heq_q", "HEQ"), ("heq_d", "DHEQ"), ("yesno_acc", "yes/no"),
                            ("followup_acc", "followup")):
            assert_close(result.metrics[metric], official[key], metric)


# --------------------------------------------------------------------------- CoQA


class TestCoqa:
    suite = CoqaSuite()

    def test_malformed_gold_is_rejected_naming_the_file_and_story(self) -> None:
        gold = coqa_gold()
        gold["data"][1]["source"] = "blogs"
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="coqa-dev-v1.0.json"),
                 "coqa-dev-v1.0.json", "'3h7z272lx76uk5mrhpyl1vcfd1tpl0'", "'blogs'")
        gold = coqa_gold()
        gold["data"][0]["answers"].pop()
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="coqa-dev-v1.0.json"),
                 "coqa-dev-v1.0.json", "'3zotghdk5ibi9cex97fepx7jetpops'", "3 entries for 4 questions")
        gold = coqa_gold()
        del gold["data"][0]["questions"][2]["input_text"]
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="coqa-dev-v1.0.json"),
                 "coqa-dev-v1.0.json", "'3zotghdk5ibi9cex97fepx7jetpops_3'", "'input_text'")

    def test_a_repeated_turn_or_question_id_is_rejected_naming_it(self) -> None:
        gold = coqa_gold()
        gold["data"].append(copy.deepcopy(gold["data"][1]))
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="coqa-dev-v1.0.json"),
                 "coqa-dev-v1.0.json", "'3h7z272lx76uk5mrhpyl1vcfd1tpl0' turn 1", "more than once")
        # Turn ids 2 and "2" are two turns to the official script but one platform id.
        gold = coqa_gold()
        gold["data"][1]["questions"][2]["turn_id"] = "2"
        for answer in gold["data"][1]["answers"][2:3] + [a[2] for a in gold["data"][1]["additional_answers"].values()]:
            answer["turn_id"] = "2"
        rejected(lambda: self.suite.inspect_gold(encode(gold), filename="coqa-dev-v1.0.json"),
                 "coqa-dev-v1.0.json", "'3h7z272lx76uk5mrhpyl1vcfd1tpl0_2'", "more than once")

    def test_inputs_keep_stories_and_questions_but_no_answer(self) -> None:
        gold = coqa_gold()
        info = self.suite.inspect_gold(encode(gold), filename="coqa-dev-v1.0.json")
        inputs = json.loads(info.inputs)
        assert info.qids == [coqa_qid(s["id"], q["turn_id"]) for s in gold["data"] for q in s["questions"]]
        assert info.qids[0] == "3zotghdk5ibi9cex97fepx7jetpops_1"
        assert [s["questions"] for s in inputs["data"]] == [s["questions"] for s in gold["data"]]
        assert [s["story"] for s in inputs["data"]] == [VATICAN, PLANTS]
        assert not keys_of(inputs) & {"answers", "additional_answers", "span_text", "span_start"}
        # CoQA answers are free text: this one is nowhere in the story or the questions.
        assert b"unknown" not in info.inputs.lower() and b"Unknown" not in info.inputs

    def test_gold_answers_score_100_and_a_wrong_answer_lowers_f1(self, tmp_path: Path) -> None:
        gold = coqa_gold()
        path = str(write(tmp_path, gold))
        result = self.suite.score(path, coqa_gold_predictions(gold), self.suite.options_type())
        assert set(result.metrics) == {"f1", "em", "in_domain_f1", "in_domain_em", "out_domain_f1",
                                       "out_domain_em", "wikipedia_f1", "wikipedia_em", "science_f1", "science_em"}
        assert all(v == pytest.approx(100.0) for v in result.metrics.values()), result.metrics
        assert_metric_names(result.metrics)
        assert result.per_example[0]["qid"] == "3zotghdk5ibi9cex97fepx7jetpops_1"
        worse = self.suite.score(path, coqa_some_wrong(gold), self.suite.options_type()).metrics
        assert worse["f1"] is not None and worse["f1"] < 100.0
        assert worse["out_domain_f1"] is not None and worse["out_domain_f1"] < 100.0

    def test_numbers_are_the_scoring_librarys(self, tmp_path: Path) -> None:
        gold = coqa_gold()
        path = str(write(tmp_path, gold))
        preds = coqa_some_wrong(gold)
        result = self.suite.score(path, preds, self.suite.options_type())
        official = coqa.evaluate_coqa(coqa.load_coqa_dataset(path), coqa_official_predictions(gold, preds)).metrics
        for prefix, bucket in (("", "overall"), ("in_domain_", "in_domain"), ("out_domain_", "out_domain"),
                               ("wikipedia_", "wikipedia"), ("science_", "science")):
            for metric in ("f1", "em"):
                assert_close(result.metrics[f"{prefix}{metric}"], official[bucket][metric], f"{prefix}{metric}")

    @pytest.mark.shared
    def test_the_real_excerpt_scores_as_the_library_does(self, tmp_path: Path) -> None:
        raw = shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json").read_bytes()
        gold = json.loads(raw)
        info = self.suite.inspect_gold(raw, filename="coqa-dev-v1.0.json")
        assert len(info.qids) == 12 and b"additional_answers" not in info.inputs
        preds = coqa_gold_predictions(gold)
        preds[info.qids[0]] = "a white kitten"
        path = str(write(tmp_path, gold))
        result = self.suite.score(path, preds, self.suite.options_type())
        official = coqa.evaluate_coqa(coqa.load_coqa_dataset(path), coqa_official_predictions(gold, preds)).metrics
        assert_close(result.metrics["f1"], official["overall"]["f1"], "f1")
        assert_close(result.metrics["children_stories_em"], official["children_stories"]["em"], "em")
        assert "out_domain_f1" not in result.metrics


# --------------------------------------------------------------------------- end to end


FLOWS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[Any], dict[str, Any]], Callable[[Any], Any]]] = {
    "squad2": (squad2_gold, squad2_gold_predictions, squad2_some_wrong),
    "quac": (quac_gold, quac_gold_predictions, quac_some_wrong),
    "coqa": (coqa_gold, coqa_gold_predictions, coqa_some_wrong),
}


@pytest.mark.parametrize("key", list(FLOWS))
@pytest.mark.django_db(transaction=True)
def test_a_team_uploads_predictions_and_is_scored_and_ranked(key: str, tmp_path: Path) -> None:
    make_gold, right, wrong = FLOWS[key]
    gold = make_gold()
    write(tmp_path, gold, "gold-dev.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(key=key, gold="gold-dev.json"), encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    stored = DatasetFile.objects.get(dataset__challenge=challenge)
    assert stored.n_questions == len(stored.qids) > 0
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    alpha = team_create(challenge=challenge, owner=alice, name="Alpha")
    beta = team_create(challenge=challenge, owner=bob, name="Beta")
    phase = Phase.objects.get(challenge=challenge, slug="dev")

    submissions = [
        submission_create_predictions(team=team, phase=phase, user=user, upload=upload(preds),
                                      limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
        for team, user, preds in ((alpha, alice, right(gold)), (beta, bob, wrong(gold)))
    ]
    for submission in submissions:
        submission.refresh_from_db()
        assert submission.status == Status.FINISHED, submission.failure_reason
    best, worse = submissions
    primary = SUITES[key].primary_metric
    assert best.primary_score == pytest.approx(100.0)
    assert worse.primary_score is not None and worse.primary_score < 100.0
    on_dataset = Score.objects.get(submission=worse, dataset__slug="main", metric=primary)
    overall = Score.objects.get(submission=worse, dataset__isnull=True, metric=primary)
    assert overall.value == pytest.approx(on_dataset.value) == pytest.approx(worse.primary_score)
    board = board_build(phase=phase, viewer=alice)
    assert [(row.team_name, row.rank) for row in board.rows] == [("Alpha", 1), ("Beta", 2)]
    assert {c.label for c in board.columns} >= {"F1"}


@pytest.mark.parametrize("key", list(FLOWS))
@pytest.mark.django_db
def test_a_bad_gold_upload_is_refused_naming_the_uploaded_file(key: str, tmp_path: Path) -> None:
    make_gold = FLOWS[key][0]
    write(tmp_path, make_gold(), "gold-dev.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(key=key, gold="gold-dev.json"), encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    dataset = Dataset.objects.get(challenge=challenge)
    with pytest.raises(ServiceError) as caught:
        dataset_file_put(dataset=dataset, portion="dev", content=b'{"data": [{"paragraphs": 1}]}',
                         filename="test-gold.json")
    assert "main (dev) rejected: test-gold.json" in str(caught.value)


@pytest.mark.parametrize("key", list(FLOWS))
@pytest.mark.django_db
def test_an_upload_missing_a_question_is_refused_naming_it(key: str, tmp_path: Path) -> None:
    make_gold, right, _ = FLOWS[key]
    gold = make_gold()
    write(tmp_path, gold, "gold-dev.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(key=key, gold="gold-dev.json"), encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    alice = User.objects.create_user("alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    preds = right(gold)
    dropped = next(iter(preds))
    del preds[dropped]
    with pytest.raises(ServiceError, match="1 question") as caught:
        submission_create_predictions(team=team, phase=Phase.objects.get(challenge=challenge, slug="dev"), user=alice,
                                      upload=upload(preds), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    assert repr(dropped) in str(caught.value)
