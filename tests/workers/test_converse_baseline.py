"""The conversational baselines' choice of answer, without a container (their protocol runs in
test_converse.py's cage; their F1 per mode is bench_conversational_baselines.py's report)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "images" / "baseline" / "converse_baseline.py"
PASSAGE = "Anna was born in Oslo in 1970. She moved to Paris in 1990. In Paris she studied painting."


@pytest.fixture(scope="module")
def baseline() -> ModuleType:
    spec = importlib.util.spec_from_file_location("converse_baseline", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sentence_with_most_question_words_else_cannot_answer(baseline: ModuleType) -> None:
    assert baseline.answer(PASSAGE, "What happened in 1990?", [], filtering=False) == \
        "She moved to Paris in 1990."
    assert baseline.answer(PASSAGE, "Any pets?", [], filtering=False) == "CANNOTANSWER"


def test_the_filter_skips_sentences_that_overlap_an_earlier_answer_and_nothing_else(baseline: ModuleType) -> None:
    history = [{"question": "Where did she go?", "answer": "She moved to Paris in 1990."}]
    question = "What did she do in Paris?"
    assert baseline.answer(PASSAGE, question, history, filtering=False) == "She moved to Paris in 1990."
    assert baseline.answer(PASSAGE, question, history, filtering=True) == "In Paris she studied painting."
    # CANNOTANSWER in the history filters nothing.
    assert baseline.answer(PASSAGE, question, [{"question": "q", "answer": "CANNOTANSWER"}], filtering=True) == \
        "She moved to Paris in 1990."
