"""Unanswerable-question detection by difficulty level (Nakanishi et al. 2018).

"Answerable or Not: Devising a Dataset for Extending Machine Reading
Comprehension" (COLING 2018) adds not-answerable questions (NAQs) to SQuAD
and labels each with how hard it is to tell from an answerable one.  There
is no official script; these are the definitions this command uses.

Input: a SQuAD-2.0-format dataset (a question is unanswerable iff its
``answers`` list is empty) whose ``qa`` objects may carry a difficulty label
in one of the fields :data:`LEVEL_FIELDS` (a string such as ``"LEVEL1"``, or
an integer, reported as its decimal string); predictions ``{qid: answer}``
with ``""`` meaning "unanswerable"; optionally no-answer probabilities.

Per question:

* predicted unanswerable iff the prediction is exactly ``""``, or its
  no-answer probability exceeds the threshold (``na_prob > thresh``, default
  1.0; without a probability file every probability is 0.0, as in SQuAD 2.0,
  spec 2.4).  A non-empty prediction that normalises to nothing (``" "``,
  ``"the"``) is an answer, as in SQuAD 2.0's threshold search (spec 2.6);
* detection is correct iff "predicted unanswerable" equals "gold unanswerable";
* ``exact`` and ``f1`` are SQuAD 2.0's thresholded scores (spec 2.1-2.4).

Aggregates (x100), overall and for each level label found: ``total``,
``detection_accuracy``; over answerable questions ``answerable_total``,
``answerable_detection_accuracy`` (share predicted answerable),
``answerable_exact``, ``answerable_f1``; over unanswerable ones
``unanswerable_total``, ``unanswerable_detection_accuracy`` (share predicted
unanswerable); and ``exact``, ``f1`` over all.  A metric whose question set
is empty is left out rather than invented (levels usually label only the
unanswerable questions, so their ``answerable_*`` keys are absent).
Questions without a label count overall but in no level.

Each level also gets the paper's own measure (section 4.2, Table 7): detection
accuracy on a balanced set, ``balanced_detection_accuracy`` over
``balanced_total`` questions: the level's unanswerable questions plus as many
answerable ones of the whole dataset.  The paper draws those "randomly"; we
draw them deterministically: the answerable questions whose
``sha256("SEED:LEVEL:QID")`` are smallest (``balance_seed``, default 0), so the
draw depends on neither file order nor predictions, and differs by level as
independent draws would.  With fewer answerable questions than the level has
unanswerable ones, that many of each are drawn the same way.  Its expectation
is the mean of the level's recall and the answerable questions' detection
accuracy.  Absent when the level has no unanswerable question or the dataset
no answerable one.

Missing predictions are an error, as in SQuAD 2.0, unless
``missing_as_empty``: a missing prediction is then ``""`` (predicted
unanswerable) with no-answer probability 0.0, or 1.0 when the probability
file lacks it too.  A qid repeated in the dataset is scored once, with its
last occurrence (an error with ``strict``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from scoring.cli import add_common_options
from scoring.errors import InputFormatError
from scoring.io import load_prediction_map
from scoring.result import EvalResult
from scoring.squad import (
    CachedScorer,
    SquadQuestion,
    check_na_probs,
    load_na_probs,
    load_squad_dataset,
    missing_predictions,
    prediction_text,
    questions_by_id,
    report_duplicate_qids,
    squad_questions,
    without_gc,
)

# Field names accepted for the difficulty label on a qa, in the order they are looked up.
LEVEL_FIELDS: tuple[str, ...] = ("level", "difficulty", "difficulty_level")


def question_level(question: SquadQuestion, *, path: str = "dataset") -> str | None:
    """The question's difficulty label, or None; two fields that disagree are an error."""
    found: str | None = None
    for key in LEVEL_FIELDS:
        if key not in question.qa:
            continue
        value = question.qa[key]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InputFormatError(
                f"{question.where}: field {key!r} should be a string or an integer level label, "
                f"found {type(value).__name__}",
                path=path, qid=question.qid,
            )
        label = str(value)
        if found is not None and label != found:
            raise InputFormatError(f"{question.where}: level fields disagree ({found!r} and {label!r})",
                                   path=path, qid=question.qid)
        found = label
    return found


class Squad2Gold(NamedTuple):
    """A SQuAD 2.0 gold file read by :func:`load_squad2_gold`."""

    dataset: dict[str, Any]
    # Difficulty label -> its part of the level_<name>_* metric names.
    level_names: dict[str, str]
    # Whether a question's level (or its lack of one) tells if it is answerable.
    levels_reveal_answerability: bool


# Level names go into metric names, which are at most 64 characters.
LEVEL_NAME_MAX = 16


def level_name(label: str) -> str:
    """A difficulty label as part of a metric name: 'LEVEL1' -> '1', 'Level 2' -> '2', 'easy' -> 'easy'."""
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    if name.startswith("level"):
        name = name[len("level"):].lstrip("_")
    return name


def load_squad2_gold(path: str | os.PathLike[str]) -> Squad2Gold:
    """A SQuAD 2.0 gold file checked as strictly as a leaderboard needs it.

    Beyond :func:`scoring.squad.load_squad_dataset`: no question id twice, every question has
    its text, and each difficulty label names a metric of its own (short, and no two labels
    sharing a name).  ``levels_reveal_answerability`` says whether showing the labels would
    tell answerable from unanswerable questions (some level holds only one kind).
    """
    name = os.fspath(path)
    dataset = load_squad_dataset(name)
    questions = squad_questions(dataset, path=name)
    report_duplicate_qids(questions, path=name, strict=True, warnings=[], consequence="")
    level_names: dict[str, str] = {}
    label_of_name: dict[str, str] = {}
    answerability_by_level: dict[str | None, set[bool]] = {}
    for question in questions:
        if not isinstance(question.qa.get("question"), str):
            raise InputFormatError(f"{question.where} should have a string 'question'", path=name, qid=question.qid)
        label = question_level(question, path=name)
        answerability_by_level.setdefault(label, set()).add(bool(question.answers))
        if label is None or label in level_names:
            continue
        metric_name = level_name(label)
        if not metric_name or len(metric_name) > LEVEL_NAME_MAX:
            raise InputFormatError(
                f"{question.where}: difficulty level {label!r} cannot name a metric; use a short label like 'LEVEL1'",
                path=name, qid=question.qid,
            )
        if metric_name in label_of_name:
            raise InputFormatError(
                f"{question.where}: difficulty levels {label_of_name[metric_name]!r} and {label!r} would share "
                f"the metric names level_{metric_name}_*; rename one",
                path=name, qid=question.qid,
            )
        level_names[label] = metric_name
        label_of_name[metric_name] = label
    reveals = bool(level_names) and any(len(kinds) < 2 for kinds in answerability_by_level.values())
    return Squad2Gold(dataset, level_names, reveals)


def _natural_key(label: str) -> list[Any]:
    # LEVEL2 before LEVEL10.
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", label)]


def _aggregate(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total = len(records)
    answerable = [r for r in records if r["has_ans"]]
    unanswerable = [r for r in records if not r["has_ans"]]
    out: dict[str, Any] = {
        "total": total,
        "detection_accuracy": 100.0 * sum(r["detection_correct"] for r in records) / total,
        "answerable_total": len(answerable),
    }
    if answerable:
        n = len(answerable)
        out["answerable_detection_accuracy"] = 100.0 * sum(r["detection_correct"] for r in answerable) / n
        out["answerable_exact"] = 100.0 * sum(r["exact"] for r in answerable) / n
        out["answerable_f1"] = 100.0 * sum(r["f1"] for r in answerable) / n
    out["unanswerable_total"] = len(unanswerable)
    if unanswerable:
        n = len(unanswerable)
        out["unanswerable_detection_accuracy"] = 100.0 * sum(r["detection_correct"] for r in unanswerable) / n
    out["exact"] = 100.0 * sum(r["exact"] for r in records) / total
    out["f1"] = 100.0 * sum(r["f1"] for r in records) / total
    return out


def _drawn(records: Sequence[dict[str, Any]], n: int, *, seed: int, label: str) -> Sequence[dict[str, Any]]:
    """``n`` of ``records``, the same ones whatever their order (module docstring)."""
    if n >= len(records):
        return records

    def key(record: dict[str, Any]) -> bytes:
        return hashlib.sha256(f"{seed}:{label}:{record['id']}".encode()).digest()

    return sorted(records, key=key)[:n]


def balanced_detection(
    level_records: Sequence[dict[str, Any]], answerable: Sequence[dict[str, Any]], *, seed: int, label: str,
) -> dict[str, Any]:
    """Detection accuracy (x100) on a level's unanswerable questions plus as many answerable ones."""
    unanswerable = [r for r in level_records if not r["has_ans"]]
    n = min(len(unanswerable), len(answerable))
    if n == 0:
        return {}
    chosen = [*_drawn(unanswerable, n, seed=seed, label=label), *_drawn(answerable, n, seed=seed, label=label)]
    return {
        "balanced_total": 2 * n,
        "balanced_detection_accuracy": 100.0 * sum(r["detection_correct"] for r in chosen) / (2 * n),
    }


def evaluate_unanswerable(
    dataset: Mapping[str, Any] | Sequence[Any],
    predictions: Mapping[str, Any],
    na_probs: Mapping[str, Any] | None = None,
    *,
    na_prob_thresh: float = 1.0,
    balance_seed: int = 0,
    missing_as_empty: bool = False,
    strict: bool = False,
    dataset_path: str = "dataset",
    prediction_path: str = "predictions",
    na_prob_path: str = "na_probs",
) -> EvalResult:
    """Detection accuracy and answerable-question EM/F1, overall and per level (module docstring)."""
    warnings: list[str] = []
    by_id = questions_by_id(
        dataset, path=dataset_path, strict=strict, warnings=warnings,
        consequence="each is scored once, with its last occurrence", empty="the dataset has no questions",
    )
    missing = missing_predictions(
        by_id, predictions, missing_as_empty=missing_as_empty, path=prediction_path, warnings=warnings,
        hint="predict \"\" for an unanswerable question, or use --missing-as-empty",
        counted_as="count as predicted unanswerable (\"\")",
    )
    if na_probs is not None:
        check_na_probs(na_probs, path=na_prob_path)
        missing_set = set(missing)
        lacking = [qid for qid in by_id if qid not in na_probs and qid not in missing_set]
        if lacking:
            raise InputFormatError(f"{len(lacking)} question(s) have no no-answer probability "
                                   f"(first {lacking[0]!r})", path=na_prob_path, qid=lacking[0])

    scorer = CachedScorer()
    per_example: list[dict[str, Any]] = []
    for qid, question in by_id.items():
        is_missing = qid not in predictions
        pred = "" if is_missing else prediction_text(predictions, qid, path=prediction_path)
        prob = 0.0 if na_probs is None else na_probs.get(qid, 1.0)
        has_ans = bool(question.answers)
        thresholded = prob > na_prob_thresh
        predicted_unanswerable = thresholded or pred == ""
        if thresholded:
            exact: float = float(not has_ans)
            f1: float = exact
        else:
            exact, f1 = scorer.best_v2(pred, scorer.gold_norms_v2(question.answers))
        record: dict[str, Any] = {
            "id": qid,
            "level": question_level(question, path=dataset_path),
            "has_ans": has_ans,
            "predicted_unanswerable": predicted_unanswerable,
            "detection_correct": predicted_unanswerable is not has_ans,
            "exact": exact,
            "f1": f1,
            "missing": is_missing,
        }
        if na_probs is not None:
            record["na_prob"] = prob
        per_example.append(record)

    metrics = _aggregate(per_example)
    by_level: dict[str, list[dict[str, Any]]] = {}
    for record in per_example:
        if record["level"] is not None:
            by_level.setdefault(record["level"], []).append(record)
    if by_level:
        answerable = [r for r in per_example if r["has_ans"]]
        metrics["levels"] = {
            label: _aggregate(by_level[label])
            | balanced_detection(by_level[label], answerable, seed=balance_seed, label=label)
            for label in sorted(by_level, key=_natural_key)
        }
    return EvalResult(metrics, per_example, warnings)


@without_gc
def _run(args: argparse.Namespace) -> EvalResult:
    load_warnings: list[str] = []
    dataset = load_squad_dataset(args.dataset)
    predictions = load_prediction_map(args.predictions, strict=args.strict, warn=load_warnings.append)
    na_probs = None
    if args.na_prob_file:
        na_probs = load_na_probs(args.na_prob_file, strict=args.strict, warn=load_warnings.append)
    result = evaluate_unanswerable(
        dataset, predictions, na_probs,
        na_prob_thresh=args.na_prob_thresh, balance_seed=args.balance_seed,
        missing_as_empty=args.missing_as_empty, strict=args.strict,
        dataset_path=args.dataset, prediction_path=args.predictions, na_prob_path=args.na_prob_file or "",
    )
    result.warnings[:0] = load_warnings
    return result


_EPILOG = f"""\
A question is gold-unanswerable iff its "answers" list is empty, and
predicted unanswerable iff its prediction is exactly "" or (with -n) its
no-answer probability exceeds -t.  Difficulty labels are read from the qa
fields {", ".join(LEVEL_FIELDS)} (a string such as "LEVEL1", or an integer).
Output (x100): detection_accuracy overall and on answerable / unanswerable
questions, answerable_exact and answerable_f1 (SQuAD 2.0 normalisation),
exact and f1 over all questions, with counts; the same per level under
"levels", where balanced_detection_accuracy is the paper's Table 7 measure:
the level's unanswerable questions plus as many answerable ones, drawn by
hash with --balance-seed (the paper draws them at random).  A metric over an
empty set of questions is left out.  Every
question needs a prediction unless --missing-as-empty (missing = "").
There is no official script, so nothing is rounded and --official-rounding
changes nothing.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "unanswerable",
        help="unanswerable-question detection by difficulty level (Nakanishi et al. 2018)",
        description="Detection of not-answerable questions, overall and per difficulty level, "
                    "on SQuAD-2.0-format data (Nakanishi et al. 2018).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", metavar="DATASET.json", help="SQuAD-2.0-format dataset, optionally with levels")
    parser.add_argument("predictions", metavar="PRED.json", help="predictions: {question id: answer, \"\" = unanswerable}")
    parser.add_argument("-n", "--na-prob-file", metavar="NA_PROB.json",
                        help="no-answer probabilities {question id: number}")
    parser.add_argument("-t", "--na-prob-thresh", type=float, default=1.0, metavar="THRESH",
                        help="predict unanswerable where the no-answer probability exceeds this (default 1.0)")
    parser.add_argument("--missing-as-empty", action="store_true",
                        help="treat a missing prediction as \"\" (unanswerable) instead of failing")
    parser.add_argument("--balance-seed", type=int, default=0, metavar="SEED",
                        help="seed of the answerable questions drawn for each level's balanced set (default 0)")
    add_common_options(parser)
    parser.set_defaults(run=_run)
