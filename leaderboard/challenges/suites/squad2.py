"""The SQuAD 2.0 suite: evaluate-v2.0.py with unanswerable-question detection, overall and per level."""

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
    check_string_answers,
    gold_cache,
    inspect_gold_file,
    nth_answer,
    options_as,
)
from scoring.inputs import document_inputs
from scoring.squad import evaluate_squad_v2, squad_questions
from scoring.unanswerable import Squad2Gold, evaluate_unanswerable, load_squad2_gold


@gold_cache
def _squad2_gold(path: str, mtime: float) -> Squad2Gold:
    return load_squad2_gold(path)


@dataclass
class Squad2Suite(MeanOfEachMetric):
    """SQuAD 2.0 (evaluate-v2.0.py) with unanswerable-question detection, overall and per difficulty level.

    Predictions are {qid: answer}, "" to abstain.  Every question needs one (the
    upload check enforces it), so scoring keeps the official strictness.
    """

    key: str = "squad2"
    gold_suffix: str = ".json"
    primary_metric: str = "f1"
    options_type: type[SuiteOptions] = NoOptions
    dataset_columns: Sequence[Column] = (
        Column("f1", "F1"), Column("exact", "EM"), Column("hasans_f1", "HasAns F1"), Column("noans_f1", "NoAns F1"),
    )
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [
            Column("f1", "F1"),
            Column("exact", "EM"),
            Column("hasans_f1", "HasAns F1"),
            Column("noans_f1", "NoAns F1"),
        ]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            gold = load_squad2_gold(path)
            qids = [qa["id"] for article in gold.dataset["data"] for paragraph in article["paragraphs"]
                    for qa in paragraph["qas"]]
            if self_check is not None:
                # An unanswerable question's own "answer" is the abstention "".
                questions = {q.qid: q for q in squad_questions(gold.dataset, path=path)}
                check_against_itself(
                    self, path, self_check, qids=qids, answer=nth_answer({q: v.answers for q, v in questions.items()}),
                    full_marks=("exact", "f1"), locate=lambda qid: (None, questions[qid].where),
                )
            # Levels are shown only where they do not tell answerable from unanswerable.
            inputs = document_inputs("squad2", gold.dataset, keep_levels=not gold.levels_reveal_answerability)
            return GoldInfo(qids=qids, inputs=inputs)

        return inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult:
        options_as(options, NoOptions)
        gold = _squad2_gold(gold_path, os.path.getmtime(gold_path))
        official = evaluate_squad_v2(gold.dataset, predictions, strict=True, dataset_path=gold_path)
        detection = evaluate_unanswerable(gold.dataset, predictions, strict=True, dataset_path=gold_path)
        metrics: dict[str, float | None] = {"exact": official.metrics["exact"], "f1": official.metrics["f1"]}
        # evaluate-v2.0.py leaves HasAns_* / NoAns_* out when no question is of that kind;
        # so do we, rather than store a number for an empty set.
        for prefix in ("HasAns", "NoAns"):
            if f"{prefix}_total" in official.metrics:
                metrics[f"{prefix.lower()}_exact"] = official.metrics[f"{prefix}_exact"]
                metrics[f"{prefix.lower()}_f1"] = official.metrics[f"{prefix}_f1"]
        # The suite is also "detection": predicting "" exactly is the abstention, whatever
        # the levels, so this is defined for every SQuAD 2.0 file.
        metrics["detection_acc"] = detection.metrics["detection_accuracy"]
        for label, values in detection.metrics.get("levels", {}).items():
            name = gold.level_names[label]
            metrics[f"level_{name}_detection_acc"] = values["detection_accuracy"]
            metrics[f"level_{name}_exact"] = values["exact"]
            metrics[f"level_{name}_f1"] = values["f1"]
            # Nakanishi et al.'s Table 7 measure: the level's NAQs plus as many answerable questions.
            if "balanced_detection_accuracy" in values:
                metrics[f"level_{name}_balanced_detection_acc"] = values["balanced_detection_accuracy"]
        by_id = {record["id"]: record for record in detection.per_example}
        per_example = [
            {
                **record,
                "level": by_id[record["id"]]["level"],
                "predicted_unanswerable": by_id[record["id"]]["predicted_unanswerable"],
                "detection_correct": by_id[record["id"]]["detection_correct"],
            }
            for record in official.per_example
        ]
        return DatasetResult(metrics=metrics, per_example=per_example)
