"""Metric suites: how a challenge's gold files are read and scored, and what ranks.

This is the only place the platform talks to ``scoring/``.  A suite validates
gold files when organizers upload them (and produces the answer-free inputs
that participants' systems read), checks the shape of prediction uploads,
scores one dataset, and aggregates per-dataset metrics into the columns that
rank teams (MRQA's macro-F1, per split).
"""

from __future__ import annotations

import gzip
import math
import io
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from scoring.errors import InputFormatError

if TYPE_CHECKING:
    from leaderboard.challenges.models import Challenge, Dataset

# Bumped whenever a change to scoring/ can change a number; stored on every score.
SCORING_VERSION = "scoring-1"


@dataclass(frozen=True)
class GoldInfo:
    qids: list[str]
    inputs: bytes


@dataclass(frozen=True)
class DatasetResult:
    metrics: dict[str, float | None]
    per_example: list[dict[str, Any]]


@dataclass(frozen=True)
class Column:
    metric: str
    label: str
    decimals: int = 2


@dataclass(frozen=True)
class Breakdown:
    """Per-slice metrics a suite can compute from stored per-question records."""

    label: str
    slice_key: str


class Suite(Protocol):
    key: str
    gold_suffix: str
    primary_metric: str
    dataset_columns: Sequence[Column]
    aggregate_columns: Sequence[Column]

    def inspect_gold(self, content: bytes, *, filename: str) -> GoldInfo: ...

    def check_predictions(self, predictions: Any, *, where: str) -> None: ...

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult: ...

    def aggregate(self, per_dataset: Mapping[Dataset, Mapping[str, float | None]]) -> dict[str, float | None]: ...


def _with_temp_file(content: bytes, suffix: str, fn: Callable[[str], Any]) -> Any:
    fd, path = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        return fn(path)
    finally:
        os.unlink(path)


def _check_string_answers(predictions: Any, where: str) -> None:
    if not isinstance(predictions, dict):
        raise InputFormatError(f"expected a JSON object {{qid: answer}}, found {type(predictions).__name__}", path=where)
    for qid, answer in predictions.items():
        if not isinstance(answer, str):
            raise InputFormatError(
                f"the answer should be a string, found {type(answer).__name__}", path=where, qid=qid
            )


def _mean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


@dataclass
class MrqaSuite:
    """MRQA 2019: per-dataset EM/F1 (official script), teams ranked by macro-F1 over datasets."""

    key: str = "mrqa"
    gold_suffix: str = ".jsonl.gz"
    primary_metric: str = "macro_f1"
    dataset_columns: Sequence[Column] = (Column("f1", "F1"), Column("em", "EM"))
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [
            Column("macro_f1", "Macro F1"),
            Column("macro_em", "Macro EM"),
            Column("split_II_macro_f1", "Split II F1"),
            Column("split_III_macro_f1", "Split III F1"),
        ]
    )

    def inspect_gold(self, content: bytes, *, filename: str) -> GoldInfo:
        from scoring import mrqa

        def inspect(path: str) -> GoldInfo:
            gold = mrqa.load_mrqa_gold(path, strict=True)
            stripped = "".join(line + "\n" for line in mrqa.iter_stripped_lines(path)).encode("utf-8")
            buffer = io.BytesIO()
            with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as out:
                out.write(stripped)
            return GoldInfo(qids=list(gold.questions), inputs=buffer.getvalue())

        return _with_temp_file(content, self.gold_suffix, inspect)  # type: ignore[no-any-return]

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        _check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import mrqa

        result = mrqa.evaluate_mrqa(_mrqa_gold(gold_path, os.path.getmtime(gold_path)), predictions)
        return DatasetResult(
            metrics={"em": result.metrics["exact_match"], "f1": result.metrics["f1"]},
            per_example=result.per_example,
        )

    def aggregate(self, per_dataset: Mapping[Dataset, Mapping[str, float | None]]) -> dict[str, float | None]:
        out: dict[str, float | None] = {
            "macro_f1": _mean([m.get("f1") for m in per_dataset.values()]),
            "macro_em": _mean([m.get("em") for m in per_dataset.values()]),
        }
        for split in ("I", "II", "III"):
            in_split = [m for ds, m in per_dataset.items() if ds.split == split]
            if in_split:
                out[f"split_{split}_macro_f1"] = _mean([m.get("f1") for m in in_split])
                out[f"split_{split}_macro_em"] = _mean([m.get("em") for m in in_split])
        return out


@lru_cache(maxsize=32)
def _mrqa_gold(path: str, mtime: float) -> Any:
    # Gold files are immutable once stored (a new upload gets a new name), so a
    # worker parses each one once; mtime guards against an edited file.
    from scoring import mrqa

    return mrqa.load_mrqa_gold(path, strict=True)


@dataclass
class Mrc2018Suite:
    """MRC2018 / DuReader: ROUGE-L (ranks) and BLEU-4 with the yes/no and entity bonuses."""

    key: str = "mrc2018"
    gold_suffix: str = ".jsonl"
    primary_metric: str = "rouge_l"
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

    def inspect_gold(self, content: bytes, *, filename: str) -> GoldInfo:
        from scoring import mrc2018
        from scoring.io import iter_json_lines

        def inspect(path: str) -> GoldInfo:
            refs = mrc2018.load_mrc2018(path, reference=True)
            stripped = [
                {k: v for k, v in obj.items() if k not in _DUREADER_ANSWER_FIELDS}
                for _, obj in iter_json_lines(path)
            ]
            inputs = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in stripped).encode("utf-8")
            return GoldInfo(qids=[str(qid) for qid in refs], inputs=inputs)

        return _with_temp_file(content, self.gold_suffix, inspect)  # type: ignore[no-any-return]

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        if not isinstance(predictions, dict):
            raise InputFormatError(
                f"expected a JSON object {{question_id: answer}}, found {type(predictions).__name__}", path=where
            )
        for qid, answer in predictions.items():
            if isinstance(answer, str):
                continue
            if isinstance(answer, dict) and isinstance(answer.get("answers"), list) and all(
                isinstance(a, str) for a in answer["answers"]
            ):
                continue
            raise InputFormatError(
                'the answer should be a string or {"answers": [...], "yesno_answers": [...]}', path=where, qid=qid
            )

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import mrc2018

        refs = mrc2018.load_mrc2018(gold_path, reference=True)
        ref_keys = {str(qid): qid for qid in refs}
        preds = {}
        for qid, answer in predictions.items():
            record = {"answers": [answer]} if isinstance(answer, str) else dict(answer)
            record["question_id"] = ref_keys.get(qid, qid)
            preds[record["question_id"]] = mrc2018.question_from_line(
                record, where="predictions", line=0, reference=False
            )
        # LIC2019's guards make BLEU defined (0) where MRC2018's script divides by zero;
        # a platform must publish a number or a clear failure, and 0 is the documented one.
        guards = bool(options.get("lic2019_guards", True))
        result = mrc2018.evaluate_mrc2018(
            preds, refs, alpha=float(options.get("alpha", 1.0)), beta=float(options.get("beta", 1.0)),
            lic2019_guards=guards,
        )
        metrics: dict[str, float | None] = {
            "rouge_l": _finite(result.metrics["ROUGE-L"]),
            "bleu_4": _finite(result.metrics["BLEU-4"]),
        }
        for qtype, values in mrc2018.breakdown_by_question_type(result.per_example, lic2019_guards=guards).items():
            metrics[f"rouge_l_{qtype}"] = _finite(values["ROUGE-L"])
            metrics[f"bleu_4_{qtype}"] = _finite(values["BLEU-4"])
        return DatasetResult(metrics=metrics, per_example=result.per_example)

    def aggregate(self, per_dataset: Mapping[Dataset, Mapping[str, float | None]]) -> dict[str, float | None]:
        keys = sorted({k for m in per_dataset.values() for k in m})
        return {k: _mean([m.get(k) for m in per_dataset.values()]) for k in keys}


_DUREADER_ANSWER_FIELDS = frozenset(
    {"answers", "yesno_answers", "entity_answers", "answer_spans", "match_scores", "fake_answers", "answer_docs",
     "segmented_answers"}
)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


SUITES: dict[str, Suite] = {"mrqa": MrqaSuite(), "mrc2018": Mrc2018Suite()}


def suite_for(challenge: Challenge) -> Suite:
    try:
        return SUITES[challenge.metric_suite]
    except KeyError:
        raise NotImplementedError(f"metric suite {challenge.metric_suite!r} is not available yet") from None
