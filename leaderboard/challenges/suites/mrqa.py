"""The MRQA 2019 suite: per-dataset EM/F1 (official script), teams ranked by macro-F1 over datasets."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from leaderboard.challenges.suites.base import (
    PROTOCOL_METRICS,
    Column,
    DatasetResult,
    GoldInfo,
    SuiteOptions,
    check_against_itself,
    check_string_answers,
    gold_cache,
    in_ranking,
    inspect_gold_file,
    means,
    nth_answer,
    option,
    options_as,
)
from scoring.cmrc2018 import TOKENIZATIONS
from scoring.errors import InputFormatError, ScoringError
from scoring.formats import not_mrqa_hint
from scoring.inputs import build_inputs
from scoring.mrqa import MrqaGold, evaluate_mrqa, load_mrqa_gold

if TYPE_CHECKING:
    from leaderboard.challenges.models import Dataset


@dataclass(frozen=True)
class MrqaOptions(SuiteOptions):
    tokenization: str = option("whitespace", "how EM/F1 split answers into tokens: whitespace (MRQA's official "
                               "metric) or cjk (CMRC 2018's: Chinese characters as tokens)", choices=TOKENIZATIONS)


# The aggregate metrics: macro_f1, macro_em and each split's, e.g. split_II_macro_f1.
MRQA_AGGREGATE = re.compile(r"(?:split_(I|II|III)_)?macro_(f1|em)")


@gold_cache
def _mrqa_gold(path: str, mtime: float) -> MrqaGold:
    return load_mrqa_gold(path, strict=True)


@dataclass
class MrqaSuite:
    """MRQA 2019: per-dataset EM/F1 (official script), teams ranked by macro-F1 over datasets."""

    key: str = "mrqa"
    gold_suffix: str = ".jsonl.gz"
    primary_metric: str = "macro_f1"
    options_type: type[SuiteOptions] = MrqaOptions
    dataset_columns: Sequence[Column] = (Column("f1", "F1"), Column("em", "EM"))
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [
            Column("macro_f1", "Macro F1"),
            Column("macro_em", "Macro EM"),
            # Shown where the phase has Split I datasets (a dev phase), like the other splits.
            Column("split_I_macro_f1", "Split I F1"),
            Column("split_II_macro_f1", "Split II F1"),
            Column("split_III_macro_f1", "Split III F1"),
        ]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            gold = load_mrqa_gold(path, strict=True)
            if self_check is not None:
                check_against_itself(
                    self, path, self_check, qids=list(gold.questions),
                    answer=nth_answer({qid: q.answers for qid, q in gold.questions.items()}),
                    full_marks=("exact_match", "f1"), locate=lambda qid: (gold.questions[qid].line, ""),
                )
            return GoldInfo(qids=list(gold.questions), inputs=build_inputs("mrqa", path))

        try:
            return inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)
        except ScoringError:
            # Another benchmark's file fails on its first line with a message about JSON lines;
            # saying what the file is (and how to convert it) is what the organizer can act on.
            hint = not_mrqa_hint(content)
            if hint is None:
                raise
            raise InputFormatError(hint, path=filename) from None

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult:
        # tokenization: cjk scores each question with CMRC 2018's EM/F1 (Chinese characters as tokens)
        # instead of MRQA's white-space tokens, which make a Chinese answer one token.
        tokenization = options_as(options, MrqaOptions).tokenization
        result = evaluate_mrqa(_mrqa_gold(gold_path, os.path.getmtime(gold_path)), predictions,
                               tokenization=tokenization)
        return DatasetResult(
            metrics={"em": result.metrics["exact_match"], "f1": result.metrics["f1"]},
            per_example=result.per_example,
        )

    def averaged_over(
        self, metric: str, datasets: Sequence[Dataset], *, ranked: Collection[Dataset] | None = None
    ) -> tuple[str, list[Dataset]] | None:
        if metric in PROTOCOL_METRICS:
            return metric, list(datasets)  # the mean over every dataset, as the other suites take it
        # macro_f1/macro_em rank, so they cover the ranked datasets (MRQA 2019: Splits II
        # and III); a split's average covers that split whatever the ranking.
        match = MRQA_AGGREGATE.fullmatch(metric)
        if match is None:
            return None
        split, family = match.groups()
        if split is None:
            return family, in_ranking(datasets, ranked)
        return family, [ds for ds in datasets if ds.split == split]

    def aggregate(
        self, per_dataset: Mapping[Dataset, Mapping[str, float | None]], *, ranked: Collection[Dataset] | None = None
    ) -> dict[str, float | None]:
        splits = [split for split in ("I", "II", "III") if any(ds.split == split for ds in per_dataset)]
        names = ["macro_f1", "macro_em", *(f"split_{split}_macro_{m}" for split in splits for m in ("f1", "em"))]
        # A run in the single-question mode has its mode's F1 and its speed too.
        names += sorted({k for m in per_dataset.values() for k in m} & PROTOCOL_METRICS)
        return means(self, names, per_dataset, ranked)
