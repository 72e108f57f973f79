"""Metric suites: how a challenge's gold files are read and scored, and what ranks.

This is the only place the platform talks to ``scoring/``.  A suite validates
gold files when organizers upload them (and produces the answer-free inputs
that participants' systems read, copied from an allowlist by
``scoring.inputs``), checks the shape of prediction uploads,
scores one dataset, and aggregates per-dataset metrics into the columns that
rank teams (MRQA's macro-F1, per split; F1 for SQuAD 2.0, QuAC and CoQA; HumSent for Deep Read).

Metric names are lowercase ``[a-z0-9_]`` (they are Score rows and board keys),
except MRC2018's question-type suffixes, which keep DuReader's labels.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from scoring.dialogs import DIALOG_FORMATS, Mode
from scoring.errors import InputFormatError, ScoringError
from scoring.inputs import build_inputs, coqa_qid, document_inputs

if TYPE_CHECKING:
    from leaderboard.challenges.models import Challenge, Dataset, Phase
    from scoring.coqa import CoqaGold, TurnKey
    from scoring.deepread import DeepReadData
    from scoring.quac import QuacDialog, QuacPrediction

# Bumped whenever a change to scoring/ can change a number; stored on every score.
SCORING_VERSION = "scoring-1"


def scoring_version_of(options: Mapping[str, Any] | None) -> str:
    """What a submission's scores are stamped with: ``SCORING_VERSION``, plus a digest of the challenge's
    suite options when it has any, so scores computed under other options (a reload that switches
    MRQA to ``tokenization: cjk``) read as out of date and are rescored."""
    if not options:
        return SCORING_VERSION
    digest = hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{SCORING_VERSION}+options-{digest}"


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


class Suite(Protocol):
    key: str
    gold_suffix: str
    primary_metric: str
    dataset_columns: Sequence[Column]
    aggregate_columns: Sequence[Column]

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        """Validate a gold file and build its answer-free inputs.

        ``self_check``: the challenge's suite options, for a portion that will be scored; the
        gold's own answers are then scored with them and the file refused if a question cannot
        be scored (or, for the EM/F1 suites, does not get 100).  None skips that (training files).
        """
        ...

    def check_predictions(self, predictions: Any, *, where: str) -> None: ...

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult: ...

    def aggregate(
        self, per_dataset: Mapping[Dataset, Mapping[str, float | None]], *, ranked: Collection[Dataset] | None = None
    ) -> dict[str, float | None]:
        """The aggregate metrics; the ranking ones average the ``ranked`` datasets only (None: all).

        ``ranked`` may hold datasets that ``per_dataset`` lacks (a prediction file never answers
        Split III): they count 0, so every row's ranking average covers the same datasets.
        """
        ...

    def averaged_over(
        self, metric: str, datasets: Sequence[Dataset], *, ranked: Collection[Dataset] | None = None
    ) -> tuple[str, list[Dataset]] | None:
        """What the aggregate ``metric`` is the mean of: a per-dataset metric over which datasets.

        ``aggregate`` computes exactly these means, and boards use them to tell which
        aggregates would give a sealed dataset's score away (None: not an aggregate
        of this suite, so nothing is known about it).
        """
        ...


def _inspect_gold_file(
    content: bytes, *, filename: str, suffix: str, inspect: Callable[[str], GoldInfo]
) -> GoldInfo:
    """Run a suite's ``inspect`` on an uploaded gold file, and check what every suite needs.

    The file is validated by the same scoring/ loader that reads it at scoring
    time (those take paths, and gunzip by magic number), so scoring never meets
    a defect this check would have refused.  Errors name the uploaded file, not
    the temporary copy, because organizers only know the former.
    """
    fd, path = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        try:
            info = inspect(path)
        except ScoringError as exc:
            raise _renamed(exc, path, filename) from None
    finally:
        os.unlink(path)
    _questions_check(info.qids, path=filename)
    return info


def _questions_check(qids: Sequence[str], *, path: str) -> None:
    if not qids:
        # Every metric would divide by zero, and prediction uploads could never be checked.
        raise InputFormatError("the gold file has no questions", path=path)
    # Uploads are {qid: answer} checked against this list, so two questions sharing an id
    # (in MRC2018 even 123 and "123") could never both be answered.
    from scoring.squad import find_duplicates

    duplicates = find_duplicates(qids)
    if duplicates:
        raise InputFormatError("question id appears more than once", path=path, qid=duplicates[0])


def _renamed(exc: ScoringError, temp_path: str, filename: str) -> ScoringError:
    path = filename if exc.path in (None, temp_path) else exc.path
    return type(exc)(exc.message.replace(temp_path, filename), path=path, line=exc.line, qid=exc.qid)


def _nth_answer(answers: Mapping[str, Sequence[str]]) -> Callable[[str, int], Any]:
    """``answer(qid, k)`` for :func:`_check_against_itself`: the k-th gold answer as the prediction."""

    def answer(qid: str, k: int) -> Any:
        own = answers[qid]
        if k == 0:
            return own[0] if own else ""  # a question without answers still gets one, as in an upload
        return own[k] if k < len(own) else None

    return answer


def _no_location(qid: str) -> tuple[int | None, str]:
    return None, ""


def _check_against_itself(
    suite: Suite, path: str, options: Mapping[str, Any], *, qids: Sequence[str],
    answer: Callable[[str, int], Any], full_marks: Sequence[str] = (),
    locate: Callable[[str], tuple[int | None, str]] = _no_location,
) -> None:
    """Score a gold file's own answers with the suite, exactly as a team's upload would be scored.

    A gold that the suite cannot score would fail every submission, with the team blamed, so it
    is refused here, naming the question.  ``full_marks`` (the EM/F1 suites) are per-question
    metrics that must be 1: a question whose answers do not get 100 against themselves (an answer
    that normalises to nothing, like "the" or ".") caps every team below 100.

    ``answer(qid, k)`` is the prediction made of the question's k-th gold answer (None: it has no
    k-th).  The file is scored once; only when a question falls short is it scored again with
    such questions' next answers (the metrics take the best over a question's answers).
    ``locate(qid)`` gives the question's line and a position for messages.
    """
    predictions = {qid: answer(qid, 0) for qid in qids}
    tried: dict[str, list[Any]] = {}
    for k in range(1, 1 << 16):
        try:
            result = suite.score(path, predictions, options)
        except ScoringError as exc:
            line, where = locate(exc.qid) if exc.qid in predictions else (None, "")
            # Named as the gold file's: the predictions are the gold's own answers.
            raise type(exc)(
                f"{where}{': ' if where else ''}the gold's own answers cannot be scored, so every submission "
                f"would fail: {exc.message}",
                path=path, line=exc.line if exc.line is not None else line, qid=exc.qid,
            ) from None
        finally:
            _gold_caches_forget()
        ranking = suite.dataset_columns[0]
        if result.metrics.get(ranking.metric) is None:
            raise InputFormatError(
                f"scored against its own answers with these suite options, the file's {ranking.label} is "
                f"undefined, and so would every submission's be (every question left out?)", path=path,
            )
        # CoQA's records carry the platform's qid beside the story id.
        short = [(str(record.get("qid", record["id"])), record) for record in result.per_example
                 if any(record.get(m, 1) < 1 - 1e-9 for m in full_marks)]
        if not short:
            return
        for qid, _ in short:
            tried.setdefault(qid, []).append(_shown(predictions[qid]))
        retry = {qid: answer(qid, k) for qid, _ in short}
        hopeless = [(qid, record) for qid, record in short if retry[qid] is None]
        if hopeless:
            qid, record = hopeless[0]
            line, where = locate(qid)
            got = ", ".join(f"{_LABELS.get(m, m)} {100 * record[m]:.4g}" for m in full_marks)
            others = f"; {len(hopeless) - 1} more question(s) like it, e.g. " + ", ".join(
                repr(q) for q, _ in hopeless[1:6]) if len(hopeless) > 1 else ""
            raise InputFormatError(
                f"{where}{': ' if where else ''}no gold answer of this question gets 100 against itself "
                f"({', '.join(tried[qid])}: the last gets {got}), so no prediction can; fix or remove "
                f"the answer{others}",
                path=path, line=line, qid=qid,
            )
        predictions.update(retry)


_LABELS = {"exact_match": "EM", "exact": "EM", "f1": "F1", "rouge_l": "ROUGE-L"}


def _shown(prediction: Any) -> str:
    if isinstance(prediction, dict):
        prediction = prediction.get("answer", prediction.get("answers"))
    return f"{prediction!r:.80}"


def _gold_caches_forget() -> None:
    # The self-check scores a temporary copy, gone right after: entries keyed by its path
    # would only hold memory.  lru_cache cannot drop one key, and losing the others costs
    # at most a re-parse (this runs where gold is loaded, not where runs are scored).
    for cached in (_mrqa_gold, _squad2_gold, _quac_gold, _coqa_gold, _deepread_gold):
        cached.cache_clear()


def _jsonl_line(path: str, key: str, qid: str) -> int | None:
    """The line of the JSON-lines record whose ``key`` is ``qid`` (for messages only: it re-reads)."""
    from scoring.io import iter_json_lines

    try:
        return next((n for n, obj in iter_json_lines(path) if isinstance(obj, dict) and str(obj.get(key)) == qid),
                    None)
    except ScoringError:
        return None


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


def _in_ranking(datasets: Sequence[Dataset], ranked: Collection[Dataset] | None) -> list[Dataset]:
    # Every ranked dataset, answered (in ``datasets``) or not: a ranking average covers the same
    # datasets for every row, so one a row did not answer is in its mean, as 0 (see _means).
    if ranked is None:
        return list(datasets)
    return [ds for ds in datasets if ds in ranked] + [ds for ds in ranked if ds not in datasets]


def _means(
    suite: Suite, names: Sequence[str], per_dataset: Mapping[Dataset, Mapping[str, float | None]],
    ranked: Collection[Dataset] | None,
) -> dict[str, float | None]:
    # One definition of what each aggregate averages (averaged_over), for scoring and for sealing.
    datasets = list(per_dataset)
    out: dict[str, float | None] = {}
    for name in names:
        scope = suite.averaged_over(name, datasets, ranked=ranked)
        if scope is not None:
            family, over = scope
            # A ranked dataset the submission did not answer counts 0, as MRQA's official script
            # counts an unanswered question (IncompleteRows.ZERO; "unranked" is the board's call).
            out[name] = _mean([per_dataset[ds].get(family) if ds in per_dataset else 0.0 for ds in over])
    return out


class _MeanOfEachMetric:
    """Aggregates of the suites without splits: the macro average of every metric any dataset has.

    The ranking metric averages the ranked datasets (``Challenge.ranking_scope``), the
    others every dataset.  A metric some dataset lacks (no unanswerable question there,
    no level labels...) averages to None rather than to the mean of the others: a mean
    over a subset would be mislabelled, and over a single sealed dataset it would
    publish that dataset's score under another name.
    """

    primary_metric: str

    def averaged_over(
        self, metric: str, datasets: Sequence[Dataset], *, ranked: Collection[Dataset] | None = None
    ) -> tuple[str, list[Dataset]] | None:
        return metric, (_in_ranking(datasets, ranked) if metric == self.primary_metric else list(datasets))

    def aggregate(
        self, per_dataset: Mapping[Dataset, Mapping[str, float | None]], *, ranked: Collection[Dataset] | None = None
    ) -> dict[str, float | None]:
        keys = sorted({k for m in per_dataset.values() for k in m})
        return _means(self, keys, per_dataset, ranked)  # type: ignore[arg-type]


_MRQA_AGGREGATE = re.compile(r"(?:split_(I|II|III)_)?macro_(f1|em)")


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
            # Shown where the phase has Split I datasets (a dev phase), like the other splits.
            Column("split_I_macro_f1", "Split I F1"),
            Column("split_II_macro_f1", "Split II F1"),
            Column("split_III_macro_f1", "Split III F1"),
        ]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        from scoring import mrqa
        from scoring.formats import not_mrqa_hint

        def inspect(path: str) -> GoldInfo:
            gold = mrqa.load_mrqa_gold(path, strict=True)
            if self_check is not None:
                _check_against_itself(
                    self, path, self_check, qids=list(gold.questions),
                    answer=_nth_answer({qid: q.answers for qid, q in gold.questions.items()}),
                    full_marks=("exact_match", "f1"), locate=lambda qid: (gold.questions[qid].line, ""),
                )
            return GoldInfo(qids=list(gold.questions), inputs=build_inputs("mrqa", path))

        try:
            return _inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)
        except ScoringError:
            # Another benchmark's file fails on its first line with a message about JSON lines;
            # saying what the file is (and how to convert it) is what the organizer can act on.
            hint = not_mrqa_hint(content)
            if hint is None:
                raise
            raise InputFormatError(hint, path=filename) from None

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        _check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import mrqa

        # tokenization: cjk scores each question with CMRC 2018's EM/F1 (Chinese characters as tokens)
        # instead of MRQA's white-space tokens, which make a Chinese answer one token.
        tokenization = str(options.get("tokenization", "whitespace"))
        result = mrqa.evaluate_mrqa(
            _mrqa_gold(gold_path, os.path.getmtime(gold_path)), predictions, tokenization=tokenization
        )
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
        match = _MRQA_AGGREGATE.fullmatch(metric)
        if match is None:
            return None
        split, family = match.groups()
        if split is None:
            return family, _in_ranking(datasets, ranked)
        return family, [ds for ds in datasets if ds.split == split]

    def aggregate(
        self, per_dataset: Mapping[Dataset, Mapping[str, float | None]], *, ranked: Collection[Dataset] | None = None
    ) -> dict[str, float | None]:
        splits = [split for split in ("I", "II", "III") if any(ds.split == split for ds in per_dataset)]
        names = ["macro_f1", "macro_em", *(f"split_{split}_macro_{m}" for split in splits for m in ("f1", "em"))]
        # A run in the single-question mode (issue 11) has its mode's F1 and its speed too.
        names += sorted({k for m in per_dataset.values() for k in m} & PROTOCOL_METRICS)
        return _means(self, names, per_dataset, ranked)


@lru_cache(maxsize=32)
def _mrqa_gold(path: str, mtime: float) -> Any:
    # Gold files are immutable once stored (a new upload gets a new name), so a
    # worker parses each one once; mtime guards against an edited file.
    from scoring import mrqa

    return mrqa.load_mrqa_gold(path, strict=True)


@dataclass
class Mrc2018Suite(_MeanOfEachMetric):
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

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        from scoring import mrc2018

        def inspect(path: str) -> GoldInfo:
            refs = mrc2018.load_mrc2018(path, reference=True)
            qids = [str(qid) for qid in refs]
            if self_check is not None:
                # Before scoring: 123 and "123" would otherwise fail there, less clearly.
                _questions_check(qids, path=path)
                by_qid = {str(qid): ref for qid, ref in refs.items()}

                def answer(qid: str, k: int) -> Any:
                    # A reference without answers is skipped by the official metric (DuReader's own
                    # dev set has one), so it is not refused; ROUGE-L must be 100 on the others.
                    ref = by_qid[qid]
                    if k >= max(1, len(ref.answers)):
                        return None
                    own = ref.answers[k:k + 1]
                    return {"answers": own, "yesno_answers": ref.yesno_answers[:1]} if own else ""

                _check_against_itself(
                    self, path, self_check, qids=qids, answer=answer, full_marks=("rouge_l",),
                    locate=lambda qid: (_jsonl_line(path, "question_id", qid), ""),
                )
            return GoldInfo(qids=qids, inputs=build_inputs("dureader", path))

        return _inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        from scoring.charmetrics import is_string_list

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


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


# --------------------------------------------------------------------------- SQuAD 2.0


class _Squad2Gold(NamedTuple):
    dataset: dict[str, Any]
    # Difficulty label -> its part of the level_<name>_* metric names.
    level_names: dict[str, str]
    # Whether a question's level (or its lack of one) tells if it is answerable.
    levels_reveal_answerability: bool


# Level names go into metric names, which are at most 64 characters.
_LEVEL_NAME_MAX = 16


def _level_name(label: str) -> str:
    """'LEVEL1' -> '1', 'Level 2' -> '2', 'easy' -> 'easy'."""
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    if name.startswith("level"):
        name = name[len("level"):].lstrip("_")
    return name


def _read_squad2(path: str) -> _Squad2Gold:
    """A SQuAD 2.0 gold file, checked as strictly as the platform needs."""
    from scoring import squad
    from scoring.unanswerable import question_level

    dataset = squad.load_squad_dataset(path)
    questions = squad.squad_questions(dataset, path=path)
    squad.report_duplicate_qids(questions, path=path, strict=True, warnings=[], consequence="")
    level_names: dict[str, str] = {}
    label_of_name: dict[str, str] = {}
    answerability_by_level: dict[str | None, set[bool]] = {}
    for question in questions:
        if not isinstance(question.qa.get("question"), str):
            raise InputFormatError(f"{question.where} should have a string 'question'", path=path, qid=question.qid)
        label = question_level(question, path=path)
        answerability_by_level.setdefault(label, set()).add(bool(question.answers))
        if label is None or label in level_names:
            continue
        name = _level_name(label)
        if not name or len(name) > _LEVEL_NAME_MAX:
            raise InputFormatError(
                f"{question.where}: difficulty level {label!r} cannot name a metric; use a short label like 'LEVEL1'",
                path=path, qid=question.qid,
            )
        if name in label_of_name:
            raise InputFormatError(
                f"{question.where}: difficulty levels {label_of_name[name]!r} and {label!r} would share the "
                f"metric names level_{name}_*; rename one",
                path=path, qid=question.qid,
            )
        level_names[label] = name
        label_of_name[name] = label
    reveals = bool(level_names) and any(len(kinds) < 2 for kinds in answerability_by_level.values())
    return _Squad2Gold(dataset, level_names, reveals)


@lru_cache(maxsize=32)
def _squad2_gold(path: str, mtime: float) -> _Squad2Gold:
    # See _mrqa_gold.
    return _read_squad2(path)


@dataclass
class Squad2Suite(_MeanOfEachMetric):
    """SQuAD 2.0 (evaluate-v2.0.py) with unanswerable-question detection, overall and per difficulty level.

    Predictions are {qid: answer}, "" to abstain.  Every question needs one (the
    upload check enforces it), so scoring keeps the official strictness.
    """

    key: str = "squad2"
    gold_suffix: str = ".json"
    primary_metric: str = "f1"
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
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            from scoring.squad import squad_questions

            gold = _read_squad2(path)
            qids = [qa["id"] for article in gold.dataset["data"] for paragraph in article["paragraphs"]
                    for qa in paragraph["qas"]]
            if self_check is not None:
                # An unanswerable question's own "answer" is the abstention "".
                questions = {q.qid: q for q in squad_questions(gold.dataset, path=path)}
                _check_against_itself(
                    self, path, self_check, qids=qids, answer=_nth_answer({q: v.answers for q, v in questions.items()}),
                    full_marks=("exact", "f1"), locate=lambda qid: (None, questions[qid].where),
                )
            # Levels are shown only where they do not tell answerable from unanswerable.
            inputs = document_inputs("squad2", gold.dataset, keep_levels=not gold.levels_reveal_answerability)
            return GoldInfo(qids=qids, inputs=inputs)

        return _inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        _check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import squad, unanswerable

        gold = _squad2_gold(gold_path, os.path.getmtime(gold_path))
        official = squad.evaluate_squad_v2(gold.dataset, predictions, strict=True, dataset_path=gold_path)
        detection = unanswerable.evaluate_unanswerable(gold.dataset, predictions, strict=True, dataset_path=gold_path)
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


# --------------------------------------------------------------------------- QuAC

# QuAC's dialog acts (scorer.py compares them as strings).
_QUAC_YESNO = frozenset({"y", "n", "x"})
_QUAC_FOLLOWUP = frozenset({"y", "n", "m"})
# A plain-string answer asserts no dialog act: "x" is "not a yes/no question" and "m"
# "follow-up: maybe", QuAC's neutral labels.  They still count in yesno_acc and followup_acc.
_QUAC_DEFAULT_YESNO = "x"
_QUAC_DEFAULT_FOLLOWUP = "m"
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


def _read_quac(path: str) -> tuple[dict[str, Any], list[QuacDialog]]:
    """A QuAC gold file, checked: the scorer's fields, question texts, and dialog acts it can match."""
    from scoring import quac
    from scoring.io import load_json

    document = load_json(path)
    if not isinstance(document, dict):
        raise InputFormatError("expected a QuAC dataset: a JSON object with a 'data' list", path=path)
    dialogs = quac.quac_dialogs(document, path=path, strict=True)
    for a, article in enumerate(document["data"]):
        for p, paragraph in enumerate(article["paragraphs"]):
            for q, qa in enumerate(paragraph["qas"]):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                if not isinstance(qa.get("question"), str):
                    raise InputFormatError(f"{where} should have a string 'question'", path=path, qid=qa["id"])
                # A gold act outside QuAC's labels could never be predicted right.
                for key, allowed in (("yesno", _QUAC_YESNO), ("followup", _QUAC_FOLLOWUP)):
                    if not isinstance(qa[key], str) or qa[key] not in allowed:
                        raise InputFormatError(
                            f"{where}: {key!r} should be one of {', '.join(sorted(allowed))}, found {qa[key]!r}",
                            path=path, qid=qa["id"],
                        )
    return document, dialogs


@lru_cache(maxsize=32)
def _quac_gold(path: str, mtime: float) -> list[QuacDialog]:
    # See _mrqa_gold.
    from scoring import quac

    return quac.load_quac_dataset(path, strict=True)


def _quac_predictions(dialogs: Sequence[QuacDialog], predictions: Mapping[str, Any]) -> dict[str, dict[str, QuacPrediction]]:
    """Platform answers filed by dialog, as scoring.quac's loader files official prediction lines.

    The official scorer files a line under the dialog named by its first qid's
    prefix (``qid.split("_q#")[0]``); the gold says which dialog each qid is in,
    so each answer is filed there and a qid without that prefix is not lost.
    """
    from scoring.quac import QuacPrediction

    out: dict[str, dict[str, QuacPrediction]] = {}
    for dialog in dialogs:
        filed = out.setdefault(dialog.dialog_id, {})
        for question in dialog.questions:
            if question.qid not in predictions:
                continue  # scored 0, as the official scorer does (uploads cannot omit one)
            answer = predictions[question.qid]
            if isinstance(answer, str):
                filed[question.qid] = QuacPrediction(answer, _QUAC_DEFAULT_YESNO, _QUAC_DEFAULT_FOLLOWUP)
            else:
                filed[question.qid] = QuacPrediction(
                    answer["answer"],
                    answer.get("yesno", _QUAC_DEFAULT_YESNO),
                    answer.get("followup", _QUAC_DEFAULT_FOLLOWUP),
                )
    return out


@dataclass
class QuacSuite(_MeanOfEachMetric):
    """QuAC (scorer.py): F1, HEQ-Q, HEQ-D, yes/no and follow-up accuracy; F1 ranks.

    Predictions are {qid: answer} or {qid: {"answer", "yesno", "followup"}};
    "CANNOTANSWER" is the no-answer string, as in QuAC.
    """

    key: str = "quac"
    gold_suffix: str = ".json"
    primary_metric: str = "f1"
    dataset_columns: Sequence[Column] = (Column("f1", "F1"), Column("heq_q", "HEQ-Q"), Column("heq_d", "HEQ-D"))
    aggregate_columns: Sequence[Column] = field(
        default_factory=lambda: [Column("f1", "F1"), Column("heq_q", "HEQ-Q"), Column("heq_d", "HEQ-D")]
    )

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            document, dialogs = _read_quac(path)
            qids = [question.qid for dialog in dialogs for question in dialog.questions]
            if self_check is not None:
                # Scorable only: QuAC's references disagree by design (human F1 is about 81), so
                # one of them does not get 100 against the others.
                by_qid = {question.qid: question for dialog in dialogs for question in dialog.questions}

                def answer(qid: str, k: int) -> Any:
                    q = by_qid[qid]
                    return {"answer": q.refs[0] if q.refs else "", "yesno": q.yesno, "followup": q.followup} \
                        if k == 0 else None

                _check_against_itself(self, path, self_check, qids=qids, answer=answer)
            return GoldInfo(qids=qids, inputs=document_inputs("quac", document))

        return _inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

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
            unknown = sorted(set(answer) - {"answer", "yesno", "followup"})
            if unknown:
                # Most likely a misspelt act ("follow_up"), which would silently score as the default.
                raise InputFormatError(
                    f"unknown field(s) {', '.join(map(repr, unknown))}; expected {_QUAC_ANSWER_SHAPE}",
                    path=where, qid=qid,
                )
            for key, allowed in (("yesno", _QUAC_YESNO), ("followup", _QUAC_FOLLOWUP)):
                value = answer.get(key)
                if key in answer and (not isinstance(value, str) or value not in allowed):
                    raise InputFormatError(
                        f"{key!r} should be one of {', '.join(sorted(allowed))}, found {value!r}", path=where, qid=qid
                    )

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import quac

        # Uploads were checked when submitted; this is cheap, and the conversion relies on it.
        self.check_predictions(predictions, where="predictions")
        dialogs = _quac_gold(gold_path, os.path.getmtime(gold_path))
        # allow_undefined: with every question predicted, only unanswerable_acc can be
        # undefined (a dataset without CANNOTANSWER questions), and that must not fail
        # every submission; it is stored as None.
        result = quac.evaluate_quac(
            dialogs, _quac_predictions(dialogs, predictions),
            min_f1=float(options.get("min_f1", quac.DEFAULT_MIN_F1)), allow_undefined=True, dataset_path=gold_path,
        )
        metrics: dict[str, float | None] = {name: result.metrics[key] for key, name in _QUAC_METRICS.items()}
        # Per-question records are kept for significance tests and breakdowns, not to
        # republish the hidden references.
        per_example = [{k: v for k, v in r.items() if k != "refs_after_handle_cannot"} for r in result.per_example]
        return DatasetResult(metrics=metrics, per_example=per_example)


# --------------------------------------------------------------------------- CoQA


def _read_coqa(path: str) -> tuple[dict[str, Any], CoqaGold]:
    from scoring import coqa
    from scoring.io import load_json

    document = load_json(path)
    gold = coqa.coqa_gold(document, path=path, strict=True)
    for s, story in enumerate(document["data"]):
        for i, question in enumerate(story["questions"]):
            if not isinstance(question.get("input_text"), str):
                raise InputFormatError(
                    f"data[{s}] (story {story['id']!r}): questions[{i}] should have a string 'input_text'",
                    path=path, qid=coqa_qid(story["id"], question["turn_id"]),
                )
    return document, gold


@lru_cache(maxsize=32)
def _coqa_gold(path: str, mtime: float) -> tuple[CoqaGold, dict[str, TurnKey]]:
    # See _mrqa_gold.  The qid -> (story id, turn id) map keeps the turn id's JSON type,
    # which the official dict lookup depends on.
    _, gold = _read_coqa(path)
    return gold, {coqa_qid(*key): key for key in gold.turns}


def _coqa_metric_prefix(bucket: str) -> str:
    # evaluate-v1.0.py's buckets: "overall", "in_domain", "mid-high_school"...
    return "" if bucket == "overall" else re.sub(r"[^a-z0-9]+", "_", bucket.lower()) + "_"


@dataclass
class CoqaSuite(_MeanOfEachMetric):
    """CoQA (evaluate-v1.0.py): F1 and EM overall, in and out of domain, and by source; F1 ranks.

    Predictions are {"<story id>_<turn id>": answer} (see :func:`coqa_qid`).
    """

    key: str = "coqa"
    gold_suffix: str = ".json"
    primary_metric: str = "f1"
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
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        def inspect(path: str) -> GoldInfo:
            document, gold = _read_coqa(path)
            qids = [coqa_qid(*key) for key in gold.turns]
            if self_check is not None:
                # Scorable only: CoQA scores each answer against the other annotators' (leave one
                # out), so the main answer need not get 100 (human F1 is about 89).
                main = _nth_answer({coqa_qid(*key): golds[:1] for key, golds in gold.turns.items()})
                _check_against_itself(self, path, self_check, qids=qids, answer=main)
            return GoldInfo(qids=qids, inputs=document_inputs("coqa", document))

        return _inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        _check_string_answers(predictions, where)

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import coqa

        _check_string_answers(predictions, "predictions")
        gold, keys = _coqa_gold(gold_path, os.path.getmtime(gold_path))
        result = coqa.evaluate_coqa(gold, {keys[qid]: answer for qid, answer in predictions.items() if qid in keys})
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


# --------------------------------------------------------------------------- Deep Read

# scoring.deepread's keys -> platform metric names.
_DEEPREAD_METRICS = {"HumSent": "humsent", "AutSent": "autsent", "precision": "precision", "recall": "recall"}


def _read_deepread(path: str) -> tuple[dict[str, Any], DeepReadData]:
    """A Deep Read gold file, checked as a challenge needs it (README, "Deep Read challenges").

    Beyond what scoring.deepread's loader checks: every question is asked about a story (systems
    answer with one of its sentences), has its text, a HumSent key (``answer_sentences``; ``[]``
    where no sentence answers it, which the paper counts as 0 for everyone), and answer keys with
    a content word; and every story has sentences, none of them blank.
    """
    from scoring import deepread
    from scoring.io import load_json

    data = deepread.load_deepread_data(path)
    document = load_json(path)  # the loader keeps no question text; the file has passed it already
    for s, story in enumerate(document.get("stories", [])):
        where = f"stories[{s}]"
        if not story["sentences"]:
            raise InputFormatError(f"{where} has no sentences, so its questions cannot be answered",
                                   path=path, qid=story["id"])
        for n, sentence in enumerate(story["sentences"]):
            if not sentence["text"].strip():
                # An empty answer would "pick" it.
                raise InputFormatError(f"{where}.sentences[{n}] (id {sentence['id']!r}) is blank", path=path,
                                       qid=story["id"])
    for q, (raw, question) in enumerate(zip(document["questions"], data.questions, strict=True)):
        where = f"questions[{q}]"
        if question.story is None:
            raise InputFormatError(f"{where} has no 'story': a question is asked about a story, and systems "
                                   "answer it with one of the story's sentences", path=path, qid=question.id)
        text = raw.get("question")
        if not isinstance(text, str) or not text.strip():
            raise InputFormatError(f"{where} should have the question's text in 'question'", path=path,
                                   qid=question.id)
        if question.answer_sentences is None:
            raise InputFormatError(
                f"{where} has no 'answer_sentences': the ids of the sentences that answer it (HumSent, which "
                "ranks); give [] where none does (it still counts, and scores 0 for everyone)",
                path=path, qid=question.id,
            )
        for key in question.answers:
            if not deepread.content_words(key):
                raise InputFormatError(
                    f"{where}: answer key {key!r} has no content word once stop words are removed, so no "
                    "answer can match it (precision and recall are undefined); reword or remove it",
                    path=path, qid=question.id,
                )
    return document, data


@lru_cache(maxsize=32)
def _deepread_gold(path: str, mtime: float) -> DeepReadData:
    # See _mrqa_gold.
    return _read_deepread(path)[1]


@dataclass
class DeepReadSuite(_MeanOfEachMetric):
    """Deep Read (Hirschman et al. 1999): HumSent (ranks), AutSent, and P&R on stemmed content words.

    Predictions are {qid: sentence}: a system answers with the text of one of the
    story's sentences (white space aside), as Deep Read did; any other string
    scores on P&R only, and 0 on HumSent and AutSent.
    """

    key: str = "deepread"
    gold_suffix: str = ".json"
    primary_metric: str = "humsent"
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
        self, content: bytes, *, filename: str, self_check: Mapping[str, Any] | None = None
    ) -> GoldInfo:
        from scoring.formats import not_deepread_hint

        def inspect(path: str) -> GoldInfo:
            document, data = _read_deepread(path)
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

                _check_against_itself(self, path, self_check, qids=qids, answer=answer,
                                      locate=lambda qid: (None, position[qid]))
            return GoldInfo(qids=qids, inputs=document_inputs("deepread", document, path=path))

        try:
            return _inspect_gold_file(content, filename=filename, suffix=self.gold_suffix, inspect=inspect)
        except ScoringError:
            # A SQuAD or CoQA file fails on "missing field 'questions'": saying what it is helps more.
            hint = not_deepread_hint(content)
            if hint is None:
                raise
            raise InputFormatError(hint, path=filename) from None

    def check_predictions(self, predictions: Any, *, where: str) -> None:
        from scoring.io import json_type

        if not isinstance(predictions, dict):
            raise InputFormatError(f"expected a JSON object {{qid: sentence}}, found {json_type(predictions)}",
                                   path=where)
        for qid, answer in predictions.items():
            if not isinstance(answer, str):
                # scoring.deepread's own files may pick a sentence by id; uploads are never shown the ids.
                raise InputFormatError(f"the answer should be the text of one of the story's sentences (a "
                                       f"string), found {json_type(answer)}", path=where, qid=qid)

    def score(self, gold_path: str, predictions: Any, options: Mapping[str, Any]) -> DatasetResult:
        from scoring import deepread

        self.check_predictions(predictions, where="predictions")
        data = _deepread_gold(gold_path, os.path.getmtime(gold_path))
        answers = deepread.match_sentences(
            data, {qid: deepread.Prediction(answer=answer) for qid, answer in predictions.items()}
        )
        # sentence_metrics: an answer that is no sentence of the story is a wrong pick (0), even
        # when the whole file picks none.
        result = deepread.evaluate_deepread(data, answers, sentence_metrics=True, source="predictions")
        metrics: dict[str, float | None] = {
            name: _finite(float(result.metrics[key])) if key in result.metrics else None
            for key, name in _DEEPREAD_METRICS.items()
        }
        # Which of a question's keys matched is not needed for significance or breakdowns.
        per_example = [{k: v for k, v in r.items() if k != "key"} for r in result.per_example]
        return DatasetResult(metrics=metrics, per_example=per_example)


def phase_aggregate_columns(suite: Suite, phase: Phase) -> list[Column]:
    """A board's overall columns: the suite's, and for a phase in the interactive protocol (issue 11)
    each mode's F1 (the first mode's is the ranking F1, labelled with its mode), the drop from gold to
    own history, and the system's speed in the first mode (``dialog_runs`` stores them all)."""
    modes = [Mode(m) for m in phase.protocol_modes]
    if not modes:
        return list(suite.aggregate_columns)
    columns = [Column(c.metric, f"{c.label} ({modes[0].label})", c.decimals) if c.metric == suite.primary_metric
               else c for c in suite.aggregate_columns]
    at = next(i for i, c in enumerate(columns) if c.metric == suite.primary_metric) + 1
    extra = [Column(f"{m.value}_f1", f"F1 ({m.label})") for m in modes[1:]]
    if Mode.GOLD in modes and Mode.OWN in modes:
        extra.append(Column("gold_own_drop", "Drop gold \u2192 own history"))
    speed = [Column("latency_p50_ms", "ms/question p50", 0), Column("latency_p95_ms", "ms/question p95", 0),
             Column("questions_per_s", "Questions/s", 0), Column("peak_memory_mib", "Peak MiB", 0)]
    return [*columns[:at], *extra, *columns[at:], *speed]


# What a run in the interactive protocol stores with each dataset besides the suite's own metrics
# (leaderboard/submissions/dialog_runs.py), for the suites that aggregate only their own.
PROTOCOL_METRICS = frozenset({*(f"{m.value}_f1" for m in Mode), "gold_own_drop", "latency_p50_ms",
                              "latency_p95_ms", "questions_per_s", "peak_memory_mib"})

# F1 by turn position (errors compound along a dialog, Siblini et al.): turns 1..6, then 7 and later.
TURN_BUCKETS = 6


def turn_metric(position: int) -> str:
    """The metric of F1 at a turn position (1 for a dialog's first turn)."""
    return f"turn_{TURN_BUCKETS + 1}plus_f1" if position > TURN_BUCKETS else f"turn_{position}_f1"


def turn_columns(prefix: str = "Turn") -> list[Column]:
    """F1 by turn position, for a phase in the interactive protocol (``prefix``: the label's start;
    the board groups them under "F1 by turn", elsewhere they say "F1 at turn")."""
    return [Column(turn_metric(k), f"{prefix} {k}" if k <= TURN_BUCKETS else f"{prefix} {k}+")
            for k in range(1, TURN_BUCKETS + 2)]


def phase_metric_columns(suite: Suite, phase: Phase) -> list[Column]:
    """Every overall metric a phase's submissions have, in the board's order, labelled for a list
    outside the board (a submission's page): the suite's, then the interactive protocol's."""
    columns = list(suite.aggregate_columns)
    if phase.protocol_modes:
        known = {c.metric for c in columns}
        columns += [c for c in phase_aggregate_columns(suite, phase) if c.metric not in known]
        if phase.challenge.metric_suite in DIALOG_FORMATS:
            columns += turn_columns("F1 at turn")
    return columns


SUITES: dict[str, Suite] = {
    "mrqa": MrqaSuite(),
    "mrc2018": Mrc2018Suite(),
    "squad2": Squad2Suite(),
    "quac": QuacSuite(),
    "coqa": CoqaSuite(),
    "deepread": DeepReadSuite(),
}


# Words of metric names as people write them ("hasans_exact" -> "HasAns EM").
_LABEL_WORDS = {"f1": "F1", "em": "EM", "exact": "EM", "acc": "accuracy", "hasans": "HasAns", "noans": "NoAns",
                "yesno": "yes/no", "followup": "follow-up", "heq": "HEQ"}
_LABEL_PREFIXES = (("rouge_l", "ROUGE-L"), ("bleu_4", "BLEU-4"))


def metric_label(suite: Suite, metric: str, *, per_dataset: bool = False, extra: Sequence[Column] = ()) -> str:
    """What a metric is called where people read it: the board's label (the suite's ``Column``, or
    one of ``extra``: a phase's own columns), else one made from its name ("split_II_macro_em" ->
    "Split II EM"), never the raw key."""
    own = suite.dataset_columns if per_dataset else suite.aggregate_columns
    for column in (*own, *extra, *suite.aggregate_columns, *suite.dataset_columns):
        if column.metric == metric:
            return column.label
    match = _MRQA_AGGREGATE.fullmatch(metric)
    if match is not None:
        split, family = match.groups()
        return f"{f'Split {split}' if split else 'Macro'} {family.upper()}"
    head, rest = "", metric
    for prefix, label in _LABEL_PREFIXES:
        if metric.startswith(prefix):
            head, rest = label, metric[len(prefix):]
    # MRC2018's question types keep DuReader's labels in the key (YES_NO, ENTITY): lower-cased here.
    rest = rest.replace("YES_NO", "yesno")
    words = [_LABEL_WORDS.get(w, w.lower() if w.isupper() else w) for w in rest.split("_") if w]
    label = " ".join([head, *words]).strip()
    return label[:1].upper() + label[1:]


def suite_for(challenge: Challenge) -> Suite:
    try:
        return SUITES[challenge.metric_suite]
    except KeyError:
        raise NotImplementedError(f"metric suite {challenge.metric_suite!r} is not available yet") from None
