"""The gold readers a leaderboard uses: each benchmark's ``load_*_gold``, stricter than its scorer's loader.

They refuse at upload what would fail (or silently mislead) every submission later: a question
without its text, a dialog act no prediction can match, a level that cannot name a metric, a
Deep Read question no system can answer.  Real files (``../shared``) pass them; small defects
do not, and the message names the question.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from scoring import coqa, deepread, quac, unanswerable
from scoring.errors import InputFormatError
from scoring.inputs import coqa_qid
from tests.builders.shared import shared_path

DATA = Path(__file__).parent / "data"


def write(tmp_path: Path, document: Any, name: str = "gold.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def refused(tmp_path: Path, load: Any, document: Any) -> InputFormatError:
    with pytest.raises(InputFormatError) as caught:
        load(write(tmp_path, document))
    return caught.value


# --------------------------------------------------------------------------- SQuAD 2.0


def test_squad2_gold_names_each_level_and_says_when_levels_reveal_answerability() -> None:
    gold = unanswerable.load_squad2_gold(DATA / "unans_levels.json")
    assert gold.level_names == {"LEVEL1": "1", "LEVEL2": "2", "3": "3"}
    # Only unanswerable questions carry a level here, so showing them would give the answer away.
    assert gold.levels_reveal_answerability
    assert gold.dataset["version"] == "v2.0"


def test_squad2_gold_reads_the_real_dev_set_without_levels() -> None:
    gold = unanswerable.load_squad2_gold(shared_path("data", "squad-v2.0", "dev-v2.0.json"))
    assert gold.level_names == {} and not gold.levels_reveal_answerability
    assert sum(len(p["qas"]) for a in gold.dataset["data"] for p in a["paragraphs"]) == 6078


@pytest.mark.parametrize(("label", "name"), [("LEVEL1", "1"), ("Level 2", "2"), ("easy", "easy"), ("3", "3")])
def test_a_level_label_becomes_a_metric_name(label: str, name: str) -> None:
    assert unanswerable.level_name(label) == name


def test_squad2_gold_refuses_two_labels_sharing_a_metric_name(tmp_path: Path) -> None:
    document = json.loads((DATA / "unans_levels.json").read_text(encoding="utf-8"))
    qas = document["data"][0]["paragraphs"][0]["qas"]
    qas[3]["level"], qas[4]["level"] = "LEVEL1", "Level 1"
    error = refused(tmp_path, unanswerable.load_squad2_gold, document)
    assert "difficulty levels 'LEVEL1' and 'Level 1' would share the metric names level_1_*" in str(error)
    assert error.qid == qas[4]["id"]


def test_squad2_gold_refuses_a_question_without_text_and_a_repeated_id(tmp_path: Path) -> None:
    document = json.loads((DATA / "unans_levels.json").read_text(encoding="utf-8"))
    no_text = copy.deepcopy(document)
    del no_text["data"][0]["paragraphs"][0]["qas"][1]["question"]
    assert "should have a string 'question'" in str(refused(tmp_path, unanswerable.load_squad2_gold, no_text))
    repeated = copy.deepcopy(document)
    repeated["data"][0]["paragraphs"][0]["qas"][1]["id"] = "a1"
    assert "question id already used" in str(refused(tmp_path, unanswerable.load_squad2_gold, repeated))


# --------------------------------------------------------------------------- QuAC


def quac_excerpt() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(shared_path("data", "quac-excerpt", "val_v0.2.json").read_text("utf-8"))
    return data


def test_quac_gold_reads_the_real_excerpt() -> None:
    document, dialogs = quac.load_quac_gold(shared_path("data", "quac-excerpt", "val_v0.2.json"))
    assert document["data"] and sum(len(d.questions) for d in dialogs) == 41


def test_quac_gold_refuses_an_act_no_prediction_can_match(tmp_path: Path) -> None:
    document = quac_excerpt()
    qa = document["data"][0]["paragraphs"][0]["qas"][0]
    qa["followup"] = "maybe"
    error = refused(tmp_path, quac.load_quac_gold, document)
    assert "'followup' should be one of m, n, y, found 'maybe'" in str(error) and error.qid == qa["id"]


def test_quac_answers_are_filed_by_the_gold_dialog_with_neutral_acts() -> None:
    dialogs = quac.quac_dialogs(quac_excerpt(), strict=True)
    first, second = dialogs[0].questions[:2]
    filed = quac.answers_by_dialog(dialogs, {first.qid: "a span",
                                             second.qid: {"answer": "CANNOTANSWER", "yesno": "n"}})
    assert filed[dialogs[0].dialog_id] == {
        first.qid: quac.QuacPrediction("a span", quac.NEUTRAL_YESNO, quac.NEUTRAL_FOLLOWUP),
        second.qid: quac.QuacPrediction("CANNOTANSWER", "n", quac.NEUTRAL_FOLLOWUP),
    }
    assert all(not filed[d.dialog_id] for d in dialogs[1:])  # unanswered questions are left out
    assert {quac.NEUTRAL_YESNO, quac.NEUTRAL_FOLLOWUP} <= quac.YESNO_ACTS | quac.FOLLOWUP_ACTS


# --------------------------------------------------------------------------- CoQA


def test_coqa_gold_reads_the_real_excerpt() -> None:
    document, gold = coqa.load_coqa_gold(shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json"))
    assert len(gold.turns) == sum(len(s["questions"]) for s in document["data"])


def test_coqa_gold_refuses_a_question_without_text_naming_its_turn(tmp_path: Path) -> None:
    document = json.loads(shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json").read_text("utf-8"))
    story = document["data"][0]
    del story["questions"][2]["input_text"]
    error = refused(tmp_path, coqa.load_coqa_gold, document)
    assert "questions[2] should have a string 'input_text'" in str(error)
    assert error.qid == coqa_qid(story["id"], story["questions"][2]["turn_id"])


# --------------------------------------------------------------------------- Deep Read


def deepread_dev() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "deepread_challenge_dev.json").read_text(encoding="utf-8"))
    return data


def test_deepread_gold_reads_a_challenge_file() -> None:
    document, data = deepread.load_deepread_gold(DATA / "deepread_challenge_dev.json")
    assert len(data.questions) == len(document["questions"]) == 9
    assert all(q.story is not None and q.answer_sentences is not None for q in data.questions)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["questions"][0].pop("story"), "questions[0] has no 'story'"),
    (lambda d: d["questions"][0].update(question=" "), "questions[0] should have the question's text"),
    (lambda d: d["questions"][0].pop("answer_sentences"), "questions[0] has no 'answer_sentences'"),
    (lambda d: d["questions"][0].update(answers=["the"]), "answer key 'the' has no content word"),
    (lambda d: d["stories"][0]["sentences"][0].update(text="  "), "stories[0].sentences[0] (id '1') is blank"),
])
def test_deepread_gold_refuses_what_no_system_could_answer(tmp_path: Path, change: Any, message: str) -> None:
    document = deepread_dev()
    change(document)
    assert message in str(refused(tmp_path, deepread.load_deepread_gold, document))


def test_the_scorers_own_loader_accepts_what_the_gold_reader_refuses(tmp_path: Path) -> None:
    # The stricter checks are the leaderboard's; the command-line scorer stays as lenient as the paper.
    document = deepread_dev()
    document["questions"][0].pop("answer_sentences")
    assert len(deepread.load_deepread_data(write(tmp_path, document)).questions) == 9
