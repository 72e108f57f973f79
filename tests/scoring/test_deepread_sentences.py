"""Deep Read's sentence answers: an answer string that is a sentence of its story picks that sentence.

This is how the platform's ``deepread`` suite reads {qid: sentence text} uploads, and what
``python -m scoring deepread --sentence-answers`` does from the files (the starting kit's command).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.deepread import (
    DeepReadData,
    Prediction,
    Question,
    Story,
    evaluate_deepread,
    load_deepread_data,
    match_sentences,
)
from scoring.formats import describe_format, not_deepread_hint
from tests.scoring.helpers import run_cli_text_on_error as run_cli

DEMO = Path(__file__).parent / "data" / "deepread_challenge_dev.json"

GARDEN = Story(id="g", sentences={"1": "The children planted beans.", "2": "It rained.", "3": "It rained.",
                                  "4": "The beans grew tall."})


def _data(*questions: Question) -> DeepReadData:
    return DeepReadData(questions=list(questions), stories={"g": GARDEN})


def test_an_answer_that_is_a_sentence_picks_it_white_space_aside() -> None:
    data = _data(Question(id="q", answers=("beans",), story="g", answer_sentences=frozenset({"1"})))
    picked = match_sentences(data, {"q": Prediction(answer="  The children\n planted   beans. ")})
    assert picked["q"] == Prediction(answer="  The children\n planted   beans. ", sentence="1")


@pytest.mark.parametrize("answer", ["the children planted beans.", "The children planted beans", "beans", ""])
def test_any_other_answer_picks_nothing(answer: str) -> None:
    data = _data(Question(id="q", answers=("beans",), story="g", answer_sentences=frozenset({"1"})))
    assert match_sentences(data, {"q": Prediction(answer=answer)})["q"] == Prediction(answer=answer)


def test_of_two_equal_sentences_the_marked_one_is_picked_else_the_first() -> None:
    data = _data(Question(id="marked", answers=("rain",), story="g", answer_sentences=frozenset({"3"})),
                 Question(id="unmarked", answers=("rain",), story="g", answer_sentences=frozenset({"4"})))
    picked = match_sentences(data, {"marked": Prediction(answer="It rained."),
                                    "unmarked": Prediction(answer="It rained.")})
    assert (picked["marked"].sentence, picked["unmarked"].sentence) == ("3", "2")


def test_a_prediction_that_picks_a_sentence_or_has_no_story_is_kept() -> None:
    data = DeepReadData(questions=[Question(id="a", answers=("x",), story="g"), Question(id="b", answers=("x",))],
                        stories={"g": GARDEN})
    kept = {"a": Prediction(answer="It rained.", sentence="4"), "b": Prediction(answer="It rained.")}
    assert match_sentences(data, kept) == kept


def test_sentence_metrics_are_reported_as_zero_when_nothing_is_picked() -> None:
    data = _data(Question(id="q", answers=("beans",), story="g", answer_sentences=frozenset({"1"})))
    plain = evaluate_deepread(data, {"q": Prediction(answer="beans")})
    assert "HumSent" not in plain.metrics and "AutSent" not in plain.metrics
    sentences = evaluate_deepread(data, {"q": Prediction(answer="beans")}, sentence_metrics=True)
    assert sentences.metrics["HumSent"] == sentences.metrics["AutSent"] == 0.0
    assert sentences.metrics["precision"] == sentences.metrics["recall"] == 100.0


def test_the_demo_challenge_file_scores_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = load_deepread_data(DEMO)
    # The marked sentence of each question; the one without any (the paper's "no acceptable sentence")
    # gets sentence 4, and two answers are not sentences at all.
    texts = {q.id: data.stories[q.story or ""].sentences[min(q.answer_sentences or {"4"})] for q in data.questions}
    texts["rb-02-2"] = "beans, carrots and sunflowers"  # the key itself: P&R 100, no sentence
    texts["rb-02-4"] = "The class gave the carrots to the town kitchen"  # no full stop: not the sentence
    predictions = tmp_path / "pred.json"
    predictions.write_text(json.dumps(texts), encoding="utf-8")
    code, out, _ = run_cli(["deepread", str(DEMO), str(predictions), "--sentence-answers"], capsys)
    assert code == 0
    # HumSent: 6 of 9 (rb-01-5 has no marked sentence; rb-02-2 and rb-02-4 pick none).
    assert out["HumSent"] == pytest.approx(600 / 9)
    # AutSent: the same 6 are the best-recall sentences; rb-01-5's key shares "rocks" with sentence 3 only.
    assert out["AutSent"] == pytest.approx(600 / 9)
    assert out["recall"] == pytest.approx(800 / 9)  # all key words, but none of rb-01-5's in sentence 4
    code, out, _ = run_cli(["deepread", str(DEMO), str(predictions)], capsys)
    assert code == 0 and "HumSent" not in out  # without the flag, strings pick no sentence


def test_a_deep_read_file_is_recognised_and_others_are_named_for_it() -> None:
    raw = DEMO.read_bytes()
    assert describe_format(raw) == "a Deep Read JSON file"
    assert not_deepread_hint(raw) is None
    squad = json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": "c", "qas": [{"id": "1", "question": "q", "answers": [], "is_impossible": True}]}]}]}).encode()
    assert not_deepread_hint(squad) == (
        "this is a SQuAD 2.0 JSON file, not a Deep Read file (an object with 'stories', each with its "
        "'sentences', and 'questions' with their answer keys; docs/organizers/data.md, \"Deep Read challenges\"); a challenge "
        "on this data takes metric_suite: squad2")
