"""The Deep Read suite (Hirschman et al. 1999): HumSent (ranks), AutSent, and P&R on stemmed content words."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.challenges.suites.base import (
    Column,
    DatasetResult,
    GoldInfo,
    MeanOfEachMetric,
    NoOptions,
    SuiteOptions,
    check_against_itself,
    finite,
    gold_cache,
    inspect_gold_file,
    options_as,
)
from scoring.deepread import DeepReadData, Prediction, evaluate_deepread, load_deepread_gold, match_sentences
from scoring.errors import InputFormatError, ScoringError
from scoring.formats import not_deepread_hint
from scoring.inputs import document_inputs
from scoring.io import json_type

# scoring.deepread's keys -> platform metric names.
_DEEPREAD_METRICS = {"HumSent": "humsent", "AutSent": "autsent", "precision": "precision", "recall": "recall"}


@gold_cache
def _deepread_gold(path: str, mtime: float) -> DeepReadData:
    return load_deepread_gold(path).data


@dataclass
class DeepReadSuite(MeanOfEachMetric):
    """Deep Read (Hirschman et al. 1999): HumSent (ranks), AutSent, and P&R on stemmed content words.

    Predictions are {qid: sentence}: a system answers with the text of one of the
    story's sentences (white space aside), as Deep Read did; any other string
    scores on P&R only, and 0 on HumSent and AutSent.
    """

    key: str = "deepread"
    gold_suffix: str = ".json"
    primary_metric: str = "humsent"
    options_type: type[SuiteOptions] = NoOptions
    dataset_columns: Sequence[Column] = (
        Column("humsent", "HumSent"), Column("autsent", "AutSent"), Column("precision", "Precision"),
        Column("recall", "Recall"),
    )
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [
            Column("humsent", "HumSent"),
            Column("autsent", "AutSent"),
            Column("precision", "Precision"),
            Column("recall", "Recall"),
        ]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            document, data = load_deepread_gold(path)
            qids = [question.id for question in data.questions]
            if self_check is not None:
                # Scorable only: no sentence need get full marks (a question with no marked sentence
                # scores 0 for everyone, and a sentence is rarely all key words).
                position = {qid: f"questions[{i}]" for i, qid in enumerate(qids)}
                by_qid = {question.id: question for question in data.questions}

                def answer(qid: str, k: int) -> Any:
                    question = by_qid[qid]
                    sentences = data.stories[question.story or ""].sentences
                    marked = [sid for sid in sentences if sid in (question.answer_sentences or ())]
                    return sentences[(marked or list(sentences))[0]] if k == 0 else None

                check_against_itself(self, path, self_check, qids=qids, answer=answer,
                                     locate=lambda qid: (None, position[qid]))
            return GoldInfo(qids=qids, inputs=document_inputs("deepread", document, path=path))

        try:
            return inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)
        except ScoringError:
            # A SQuAD or CoQA file fails on "missing field 'questions'": saying what it is helps more.
            hint = not_deepread_hint(content)
            if hint is None:
                raise
            raise InputFormatError(hint, path=filename) from None

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        if not isinstance(predictions, dict):
            raise InputFormatError(f"expected a JSON object {{qid: sentence}}, found {json_type(predictions)}",
                                   path=where)
        for qid, answer in predictions.items():
            if not isinstance(answer, str):
                # scoring.deepread's own files may pick a sentence by id; uploads are never shown the ids.
                raise InputFormatError(f"the answer should be the text of one of the story's sentences (a "
                                       f"string), found {json_type(answer)}", path=where, qid=qid)

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult:
        options_as(options, NoOptions)
        self.check_predictions(predictions, where="predictions")
        data = _deepread_gold(gold_path, os.path.getmtime(gold_path))
        answers = match_sentences(data, {qid: Prediction(answer=answer) for qid, answer in predictions.items()})
        # sentence_metrics: an answer that is no sentence of the story is a wrong pick (0), even
        # when the whole file picks none.
        result = evaluate_deepread(data, answers, sentence_metrics=True, source="predictions")
        metrics: dict[str, float | None] = {
            name: finite(float(result.metrics[key])) if key in result.metrics else None
            for key, name in _DEEPREAD_METRICS.items()
        }
        # Which of a question's keys matched is not needed for significance or breakdowns.
        per_example = [{k: v for k, v in r.items() if k != "key"} for r in result.per_example]
        return DatasetResult(metrics=metrics, per_example=per_example)
