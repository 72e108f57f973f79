"""The QuAC suite (scorer.py): F1, HEQ-Q, HEQ-D, yes/no and follow-up accuracy; F1 ranks."""

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
    SuiteOptions,
    check_against_itself,
    gold_cache,
    inspect_gold_file,
    option,
    options_as,
)
from scoring.errors import InputFormatError
from scoring.inputs import document_inputs
from scoring.quac import (
    ANSWER_FIELDS,
    DEFAULT_MIN_F1,
    FOLLOWUP_ACTS,
    YESNO_ACTS,
    QuacDialog,
    answers_by_dialog,
    evaluate_quac,
    load_quac_dataset,
    load_quac_gold,
)


@dataclass(frozen=True)
class QuacOptions(SuiteOptions):
    min_f1: float = option(DEFAULT_MIN_F1, "questions whose human F1 is below this are left out of F1 and HEQ",
                           bounds=(0.0, 1.0))


# scoring.quac's official keys -> platform metric names.
_QUAC_METRICS = {
    "f1": "f1",
    "HEQ": "heq_q",
    "DHEQ": "heq_d",
    "yes/no": "yesno_acc",
    "followup": "followup_acc",
    "unanswerable_acc": "unanswerable_acc",
    "unfiltered_f1": "unfiltered_f1",
}
_QUAC_ANSWER_SHAPE = '{"answer": "...", "yesno": "y|n|x", "followup": "y|n|m"}'


@gold_cache
def _quac_gold(path: str, mtime: float) -> list[QuacDialog]:
    return load_quac_dataset(path, strict=True)


@dataclass
class QuacSuite(MeanOfEachMetric):
    """QuAC (scorer.py): F1, HEQ-Q, HEQ-D, yes/no and follow-up accuracy; F1 ranks.

    Predictions are {qid: answer} or {qid: {"answer", "yesno", "followup"}};
    "CANNOTANSWER" is the no-answer string, as in QuAC.
    """

    key: str = "quac"
    gold_suffix: str = ".json"
    primary_metric: str = "f1"
    options_type: type[SuiteOptions] = QuacOptions
    dataset_columns: Sequence[Column] = (Column("f1", "F1"), Column("heq_q", "HEQ-Q"), Column("heq_d", "HEQ-D"))
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [Column("f1", "F1"), Column("heq_q", "HEQ-Q"), Column("heq_d", "HEQ-D")]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            document, dialogs = load_quac_gold(path)
            qids = [question.qid for dialog in dialogs for question in dialog.questions]
            if self_check is not None:
                # Scorable only: QuAC's references disagree by design (human F1 is about 81), so
                # one of them does not get 100 against the others.
                by_qid = {question.qid: question for dialog in dialogs for question in dialog.questions}

                def answer(qid: str, k: int) -> Any:
                    q = by_qid[qid]
                    return {"answer": q.refs[0] if q.refs else "", "yesno": q.yesno, "followup": q.followup} \
                        if k == 0 else None

                check_against_itself(self, path, self_check, qids=qids, answer=answer)
            return GoldInfo(qids=qids, inputs=document_inputs("quac", document))

        return inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        if not isinstance(predictions, dict):
            raise InputFormatError(
                f"expected a JSON object {{qid: answer}}, found {type(predictions).__name__}", path=where
            )
        for qid, answer in predictions.items():
            if isinstance(answer, str):
                continue
            if not isinstance(answer, dict) or not isinstance(answer.get("answer"), str):
                raise InputFormatError(f"the answer should be a string or {_QUAC_ANSWER_SHAPE}", path=where, qid=qid)
            unknown = sorted(set(answer) - set(ANSWER_FIELDS))
            if unknown:
                # Most likely a misspelt act ("follow_up"), which would silently score as the default.
                raise InputFormatError(
                    f"unknown field(s) {', '.join(map(repr, unknown))}; expected {_QUAC_ANSWER_SHAPE}",
                    path=where, qid=qid,
                )
            for key, allowed in (("yesno", YESNO_ACTS), ("followup", FOLLOWUP_ACTS)):
                value = answer.get(key)
                if key in answer and (not isinstance(value, str) or value not in allowed):
                    raise InputFormatError(
                        f"{key!r} should be one of {', '.join(sorted(allowed))}, found {value!r}", path=where, qid=qid
                    )

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult:
        min_f1 = options_as(options, QuacOptions).min_f1
        # Uploads were checked when submitted; this is cheap, and the conversion relies on it.
        self.check_predictions(predictions, where="predictions")
        dialogs = _quac_gold(gold_path, os.path.getmtime(gold_path))
        # allow_undefined: with every question predicted, only unanswerable_acc can be
        # undefined (a dataset without CANNOTANSWER questions), and that must not fail
        # every submission; it is stored as None.
        result = evaluate_quac(
            dialogs, answers_by_dialog(dialogs, predictions), min_f1=min_f1, allow_undefined=True,
            dataset_path=gold_path,
        )
        metrics: dict[str, float | None] = {name: result.metrics[key] for key, name in _QUAC_METRICS.items()}
        # Per-question records are kept for significance tests and breakdowns, not to
        # republish the hidden references.
        per_example = [{k: v for k, v in r.items() if k != "refs_after_handle_cannot"} for r in result.per_example]
        return DatasetResult(metrics=metrics, per_example=per_example)
