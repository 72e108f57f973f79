"""What every metric suite is and shares: the ``Suite`` protocol, its small types and options, the
checks every gold file gets, and the mean of each metric over datasets.

Metric names are lowercase ``[a-z0-9_]`` (they are Score rows and board keys),
except MRC2018's question-type suffixes, which keep DuReader's labels.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from scoring.dialogs import Mode
from scoring.errors import InputFormatError, ScoringError
from scoring.io import iter_json_lines
from scoring.squad import find_duplicates

if TYPE_CHECKING:
    from leaderboard.challenges.models import Dataset

# Bumped whenever a change to scoring/ can change a number; stored on every score.
SCORING_VERSION = "scoring-1"


def scoring_version_of(options: Mapping[str, Any] | None) -> str:
    """What a submission's scores are stamped with: ``SCORING_VERSION``, plus a digest of the challenge's
    stored suite options (``Challenge.suite_options``) when it has any, so scores computed under other
    options (a reload that switches MRQA to ``tokenization: cjk``) read as out of date and are rescored."""
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


# Digits of a score (F1, EM) on every page: a column of whole numbers says 0.
DEFAULT_DECIMALS = 2


@dataclass(frozen=True)
class Column:
    metric: str
    label: str
    decimals: int = DEFAULT_DECIMALS


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class SuiteOptions:
    """A suite's options (a spec's ``suite_options``), validated: each suite's subclass holds its
    fields and their defaults (written only there), built by ``challenges.spec.suite_options_parse``."""


@dataclass(frozen=True)
class NoOptions(SuiteOptions):
    pass


def option(default: Any, meaning: str, *, choices: tuple[str, ...] = (),
           bounds: tuple[float, float] | None = None) -> Any:
    """An options field: its default, what it means (the organizers' spec page, generated from it), and what ``suite_options_parse`` accepts."""
    return field(default=default, metadata={"meaning": meaning, "choices": choices, "bounds": bounds})


_O = TypeVar("_O", bound=SuiteOptions)


def options_as(options: SuiteOptions, kind: type[_O]) -> _O:
    """``options`` as the suite's own kind; another suite's options are a programming error."""
    if not isinstance(options, kind):
        raise TypeError(f"expected {kind.__name__}, found {type(options).__name__}")
    return options


# --------------------------------------------------------------------------- the protocol


class Suite(Protocol):
    key: str
    gold_suffix: str
    primary_metric: str
    options_type: type[SuiteOptions]
    dataset_columns: Sequence[Column]
    aggregate_columns: Sequence[Column]

    def inspect_gold(
        self, content: bytes, *, filename: str, self_check: SuiteOptions | None = None
    ) -> GoldInfo:
        """Validate a gold file and build its answer-free inputs.

        ``self_check``: the challenge's suite options, for a portion that will be scored; the
        gold's own answers are then scored with them and the file refused if a question cannot
        be scored (or, for the EM/F1 suites, does not get 100).  None skips that (training files).
        """
        ...

    def check_predictions(self, predictions: Any, *, where: str) -> None: ...

    def score(self, gold_path: str, predictions: Any, options: SuiteOptions) -> DatasetResult: ...

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


# What a run in the interactive protocol stores with each dataset besides the suite's own metrics
# (leaderboard/submissions/dialog_runs.py), for the suites that aggregate only their own.
PROTOCOL_METRICS = frozenset({*(f"{m.value}_f1" for m in Mode), "gold_own_drop", "latency_p50_ms",
                              "latency_p95_ms", "questions_per_s", "peak_memory_mib"})


# --------------------------------------------------------------------------- gold files

_T = TypeVar("_T")
_GOLD_CACHES: list[Any] = []


def gold_cache(read: Callable[[str, float], _T]) -> Callable[[str, float], _T]:
    """A suite's parsed-gold cache, keyed by (path, mtime).

    Gold files are immutable once stored (a new upload gets a new name), so a worker parses
    each one once; mtime guards against an edited file.  The self-check empties every such
    cache after it scored a temporary copy (see :func:`check_against_itself`).
    """
    cached = lru_cache(maxsize=32)(read)
    _GOLD_CACHES.append(cached)
    return cached


def _gold_caches_forget() -> None:
    # The self-check scores a temporary copy, gone right after: entries keyed by its path
    # would only hold memory.  lru_cache cannot drop one key, and losing the others costs
    # at most a re-parse (this runs where gold is loaded, not where runs are scored).
    for cached in _GOLD_CACHES:
        cached.cache_clear()


def inspect_gold_file(
    content: bytes, *, filename: str, suffix: str, inspect: Callable[[str], GoldInfo]
) -> GoldInfo:
    """Run a suite's ``inspect`` on an uploaded gold file, and check what every suite needs.

    The file is validated by the same scoring/ loader that reads it at scoring
    time (those take paths, and gunzip by magic number), so scoring never meets
    a defect this check would have refused; the self-check scores the file the
    same way, by path.  Errors name the uploaded file, not the temporary copy,
    because organizers only know the former.
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
    questions_check(info.qids, path=filename)
    return info


def questions_check(qids: Sequence[str], *, path: str) -> None:
    if not qids:
        # Every metric would divide by zero, and prediction uploads could never be checked.
        raise InputFormatError("the gold file has no questions", path=path)
    # Uploads are {qid: answer} checked against this list, so two questions sharing an id
    # (in MRC2018 even 123 and "123") could never both be answered.
    duplicates = find_duplicates(qids)
    if duplicates:
        raise InputFormatError("question id appears more than once", path=path, qid=duplicates[0])


def _renamed(exc: ScoringError, temp_path: str, filename: str) -> ScoringError:
    path = filename if exc.path in (None, temp_path) else exc.path
    return type(exc)(exc.message.replace(temp_path, filename), path=path, line=exc.line, qid=exc.qid)


def nth_answer(answers: Mapping[str, Sequence[str]]) -> Callable[[str, int], Any]:
    """``answer(qid, k)`` for :func:`check_against_itself`: the k-th gold answer as the prediction."""

    def answer(qid: str, k: int) -> Any:
        own = answers[qid]
        if k == 0:
            return own[0] if own else ""  # a question without answers still gets one, as in an upload
        return own[k] if k < len(own) else None

    return answer


def _no_location(qid: str) -> tuple[int | None, str]:
    return None, ""


def check_against_itself(
    suite: Suite, path: str, options: SuiteOptions, *, qids: Sequence[str],
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


def jsonl_line(path: str, key: str, qid: str) -> int | None:
    """The line of the JSON-lines record whose ``key`` is ``qid`` (for messages only: it re-reads)."""
    try:
        return next((n for n, obj in iter_json_lines(path) if isinstance(obj, dict) and str(obj.get(key)) == qid),
                    None)
    except ScoringError:
        return None


# --------------------------------------------------------------------------- predictions and numbers


def check_string_answers(predictions: Any, where: str) -> None:
    if not isinstance(predictions, dict):
        raise InputFormatError(f"expected a JSON object {{qid: answer}}, found {type(predictions).__name__}", path=where)
    for qid, answer in predictions.items():
        if not isinstance(answer, str):
            raise InputFormatError(
                f"the answer should be a string, found {type(answer).__name__}", path=where, qid=qid
            )


def finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _mean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def in_ranking(datasets: Sequence[Dataset], ranked: Collection[Dataset] | None) -> list[Dataset]:
    # Every ranked dataset, answered (in ``datasets``) or not: a ranking average covers the same
    # datasets for every row, so one a row did not answer is in its mean, as 0 (see means).
    if ranked is None:
        return list(datasets)
    return [ds for ds in datasets if ds in ranked] + [ds for ds in ranked if ds not in datasets]


def means(
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


class MeanOfEachMetric:
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
        return metric, (in_ranking(datasets, ranked) if metric == self.primary_metric else list(datasets))

    def aggregate(
        self, per_dataset: Mapping[Dataset, Mapping[str, float | None]], *, ranked: Collection[Dataset] | None = None
    ) -> dict[str, float | None]:
        keys = sorted({k for m in per_dataset.values() for k in m})
        return means(self, keys, per_dataset, ranked)  # type: ignore[arg-type]
