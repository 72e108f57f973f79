"""The CoQA suite (evaluate-v1.0.py): F1 and EM overall, in and out of domain, and by source; F1 ranks."""

from __future__ import annotations

import os
import re
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
from scoring.coqa import CoqaGold, TurnKey, evaluate_coqa, load_coqa_gold
from scoring.inputs import coqa_qid, document_inputs


@gold_cache
def _coqa_gold(path: str, mtime: float) -> tuple[CoqaGold, dict[str, TurnKey]]:
    # The qid -> (story id, turn id) map keeps the turn id's JSON type, which the official
    # dict lookup depends on.
    gold = load_coqa_gold(path).gold
    return gold, {coqa_qid(*key): key for key in gold.turns}


def _coqa_metric_prefix(bucket: str) -> str:
    # evaluate-v1.0.py's buckets: "overall", "in_domain", "mid-high_school"...
    return "" if bucket == "overall" else re.sub(r"[^a-z0-9]+", "_", bucket.lower()) + "_"


@dataclass
class CoqaSuite(MeanOfEachMetric):
    """CoQA (evaluate-v1.0.py): F1 and EM overall, in and out of domain, and by source; F1 ranks.

    Predictions are {"<story id>_<turn id>": answer} (see :func:`scoring.inputs.coqa_qid`).
    """

    key: str = "coqa"
    gold_suffix: str = ".json"
    primary_metric: str = "f1"
    options_type: type[SuiteOptions] = NoOptions
    dataset_columns: Sequence[Column] = (Column("f1", "F1"), Column("em", "EM"))
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [
            Column("f1", "F1"),
            Column("em", "EM"),
            Column("in_domain_f1", "In-domain F1"),
            Column("out_domain_f1", "Out-of-domain F1"),
        ]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            document, gold = load_coqa_gold(path)
            qids = [coqa_qid(*key) for key in gold.turns]
            if self_check is not None:
                # Scorable only: CoQA scores each answer against the other annotators' (leave one
                # out), so the main answer need not get 100 (human F1 is about 89).
                main = nth_answer({coqa_qid(*key): golds[:1] for key, golds in gold.turns.items()})
                check_against_itself(self, path, self_check, qids=qids, answer=main)
            return GoldInfo(qids=qids, inputs=document_inputs("coqa", document))

        return inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult:
        options_as(options, NoOptions)
        check_string_answers(predictions, "predictions")
        gold, keys = _coqa_gold(gold_path, os.path.getmtime(gold_path))
        result = evaluate_coqa(gold, {keys[qid]: answer for qid, answer in predictions.items() if qid in keys})
        metrics: dict[str, float | None] = {}
        for bucket in ("overall", *(b for b in result.metrics if b != "overall")):
            cell = result.metrics[bucket]
            # The official script prints 0.0 for a domain or source without turns; a
            # board would show that as a score, so it is left out.
            if cell["turns"]:
                prefix = _coqa_metric_prefix(bucket)
                metrics[f"{prefix}f1"] = cell["f1"]
                metrics[f"{prefix}em"] = cell["em"]
        per_example = [{**r, "qid": coqa_qid(r["id"], r["turn_id"])} for r in result.per_example]
        return DatasetResult(metrics=metrics, per_example=per_example)
