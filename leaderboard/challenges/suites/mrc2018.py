"""The MRC2018 / DuReader suite: ROUGE-L (ranks) and BLEU-4 with the yes/no and entity bonuses."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.challenges.suites.base import (
    Column,
    DatasetResult,
    GoldInfo,
    MeanOfEachMetric,
    SuiteOptions,
    check_against_itself,
    finite,
    inspect_gold_file,
    jsonl_line,
    option,
    options_as,
    questions_check,
)
from scoring.charmetrics import is_string_list
from scoring.errors import InputFormatError
from scoring.inputs import build_inputs
from scoring.mrc2018 import breakdown_by_question_type, evaluate_mrc2018, load_mrc2018, question_from_line


@dataclass(frozen=True)
class Mrc2018Options(SuiteOptions):
    alpha: float = option(1.0, "weight of the yes/no bonus", bounds=(0.0, math.inf))
    beta: float = option(1.0, "weight of the entity bonus", bounds=(0.0, math.inf))
    lic2019_guards: bool = option(True, "BLEU-4 is 0 (LIC2019's rule) where MRC2018's script divides by zero")


@dataclass
class Mrc2018Suite(MeanOfEachMetric):
    """MRC2018 / DuReader: ROUGE-L (ranks) and BLEU-4 with the yes/no and entity bonuses."""

    key: str = "mrc2018"
    gold_suffix: str = ".jsonl"
    primary_metric: str = "rouge_l"
    options_type: type[SuiteOptions] = Mrc2018Options
    dataset_columns: Sequence[Column] = (Column("rouge_l", "ROUGE-L"), Column("bleu_4", "BLEU-4"))
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [
            Column("rouge_l", "ROUGE-L"),
            Column("bleu_4", "BLEU-4"),
            Column("rouge_l_YES_NO", "ROUGE-L yes/no"),
            Column("rouge_l_ENTITY", "ROUGE-L entity"),
            Column("rouge_l_DESCRIPTION", "ROUGE-L description"),
        ]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            refs = load_mrc2018(path, reference=True)
            qids = [str(qid) for qid in refs]
            if self_check is not None:
                # Before scoring: 123 and "123" would otherwise fail there, less clearly.
                questions_check(qids, path=path)
                by_qid = {str(qid): ref for qid, ref in refs.items()}

                def answer(qid: str, k: int) -> Any:
                    # A reference without answers is skipped by the official metric (DuReader's own
                    # dev set has one), so it is not refused; ROUGE-L must be 100 on the others.
                    ref = by_qid[qid]
                    if k >= max(1, len(ref.answers)):
                        return None
                    own = ref.answers[k:k + 1]
                    return {"answers": own, "yesno_answers": ref.yesno_answers[:1]} if own else ""

                check_against_itself(
                    self, path, self_check, qids=qids, answer=answer, full_marks=("rouge_l",),
                    locate=lambda qid: (jsonl_line(path, "question_id", qid), ""),
                )
            return GoldInfo(qids=qids, inputs=build_inputs("dureader", path))

        return inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        if not isinstance(predictions, dict):
            raise InputFormatError(
                f"expected a JSON object {{question_id: answer}}, found {type(predictions).__name__}", path=where
            )
        for qid, answer in predictions.items():
            if isinstance(answer, str):
                continue
            if not isinstance(answer, dict) or not is_string_list(answer.get("answers")):
                raise InputFormatError(
                    'the answer should be a string or {"answers": [...], "yesno_answers": [...]}', path=where, qid=qid
                )
            # Scoring reads "yesno_answers" as a list and compares its first label with the
            # references' strings: anything else would fail there, after the upload was counted.
            if "yesno_answers" in answer and not is_string_list(answer["yesno_answers"]):
                raise InputFormatError(
                    f'"yesno_answers" should be a list of strings (e.g. ["Yes"]), found {answer["yesno_answers"]!r:.60}',
                    path=where, qid=qid,
                )

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult:
        own = options_as(options, Mrc2018Options)
        refs = load_mrc2018(gold_path, reference=True)
        ref_keys = {str(qid): qid for qid in refs}
        preds = {}
        for qid, answer in predictions.items():
            record = {"answers": [answer]} if isinstance(answer, str) else dict(answer)
            record["question_id"] = ref_keys.get(qid, qid)
            preds[record["question_id"]] = question_from_line(record, where="predictions", line=0, reference=False)
        # LIC2019's guards make BLEU defined (0) where MRC2018's script divides by zero;
        # a platform must publish a number or a clear failure, and 0 is the documented one.
        result = evaluate_mrc2018(preds, refs, alpha=own.alpha, beta=own.beta, lic2019_guards=own.lic2019_guards)
        metrics: dict[str, float | None] = {
            "rouge_l": finite(result.metrics["ROUGE-L"]),
            "bleu_4": finite(result.metrics["BLEU-4"]),
        }
        for qtype, values in breakdown_by_question_type(result.per_example, lic2019_guards=own.lic2019_guards).items():
            metrics[f"rouge_l_{qtype}"] = finite(values["ROUGE-L"])
            metrics[f"bleu_4_{qtype}"] = finite(values["BLEU-4"])
        return DatasetResult(metrics=metrics, per_example=result.per_example)
