"""QuAC (``scorer.py``), spec section 6: F1, HEQ-Q, HEQ-D, yes/no, follow-up, unanswerable accuracy.

The numbers are the official scorer's own, unrounded (it writes them to
``--o`` without rounding, so ``--official-rounding`` changes nothing).  The
quirks reproduced on purpose, each cited where it happens:

* every prediction of a JSON line is filed under the dialog of the line's
  first qid, later entries overwriting earlier ones (spec 6.1);
* references go through ``handle_cannot``; human F1 is the leave-one-out F1
  among references, model F1 the mean of the leave-one-out maxima (spec 6.3);
* questions whose human F1 is below ``min_f1`` are left out of everything but
  ``unfiltered_f1``, except that a *missing* prediction counts everywhere
  regardless of the filter, and a dialog whose questions were all filtered
  out still counts as good for HEQ-D (spec 6.4).

Where the official scorer divides by zero (no CANNOTANSWER question left
after the filter, golden case quac/case09, or every question filtered out) we
stop with an :class:`UndefinedMetricError` naming the metric, unless the
caller asks for ``allow_undefined`` (``--undefined-as-null``): the metric is
then reported as ``null`` and a warning says why.

Each distinct string is normalised once (:func:`scoring.text.answer_tokens_many`)
and each pair of references is compared once, F1 being symmetric.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any, NamedTuple

from scoring.cli import add_common_options
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.io import Warn, _ignore, gc_paused, iter_json_lines, load_json
from scoring.result import EvalResult, summarise
from scoring.text import TokenBag

CANNOTANSWER = "CANNOTANSWER"
DEFAULT_MIN_F1 = 0.4
# QuAC's dialog acts (scorer.py compares them as strings).
YESNO_ACTS = frozenset({"y", "n", "x"})
FOLLOWUP_ACTS = frozenset({"y", "n", "m"})
# An answer without acts asserts none: "x" is "not a yes/no question" and "m" "follow-up: maybe",
# QuAC's neutral labels.  They still count in the yes/no and follow-up accuracies.
NEUTRAL_YESNO = "x"
NEUTRAL_FOLLOWUP = "m"
# An answer with its acts, as {qid: answer} maps give it (a plain string: the span alone).
ANSWER_FIELDS = ("answer", "yesno", "followup")
# The official output JSON, in its key order (scorer.py:206).
METRIC_KEYS = ("unfiltered_f1", "f1", "HEQ", "DHEQ", "yes/no", "followup", "unanswerable_acc")
# Category labels of compute_span_overlap (spec 6.2); they never change a number.
EXACT, PARTIAL, NO_OVERLAP, INDEXING_ERROR, NO_ANSWER = (
    "Exact match", "Partial overlap", "No overlap", "Span indexing error", "NO ANSWER",
)


class QuacQuestion(NamedTuple):
    """One ``qa`` of a dialog: its reference texts in file order and the gold dialog acts."""

    qid: str
    refs: list[str]
    yesno: Any
    followup: Any


class QuacDialog(NamedTuple):
    """One paragraph of the QuAC file: a dialog over one section's context."""

    dialog_id: str
    context: str
    questions: list[QuacQuestion]


class QuacPrediction(NamedTuple):
    span: str
    yesno: Any
    followup: Any


# dialog id -> qid -> prediction, as the official ``preds`` (spec 6.1).
QuacPredictions = dict[str, dict[str, QuacPrediction]]


# --------------------------------------------------------------------------- dataset


def load_quac_dataset(path: str | os.PathLike[str], *, strict: bool = False) -> list[QuacDialog]:
    """Load and check a QuAC file (``{"data": [{"paragraphs": [...]}, ...]}``)."""
    name = os.fspath(path)
    return quac_dialogs(load_json(name), path=name, strict=strict)


def quac_dialogs(dataset: Any, *, path: str = "dataset", strict: bool = False) -> list[QuacDialog]:
    """The dialogs of an already-loaded QuAC file (or its ``data`` list), checked.

    Every field the official scorer may read is required: a paragraph's
    ``id`` and ``context``; a qa's ``id``, ``answers`` (objects with a string
    ``text``), ``yesno`` and ``followup``.  Errors name the position and id.
    A question id that occurs twice is scored twice, as the official scorer
    does; with ``strict`` it is an error.
    """
    articles = dataset.get("data") if isinstance(dataset, dict) else dataset
    if not isinstance(articles, list):
        raise InputFormatError("expected a QuAC dataset: a JSON object with a 'data' list", path=path)
    dialogs: list[QuacDialog] = []
    for a, article in enumerate(articles):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise InputFormatError(f"data[{a}] should be an object with a 'paragraphs' list", path=path)
        for p, par in enumerate(paragraphs):
            dialogs.append(_dialog(par, f"data[{a}].paragraphs[{p}]", path))
    if strict:
        seen: set[str] = set()
        for dialog in dialogs:
            for question in dialog.questions:
                if question.qid in seen:
                    raise InputFormatError("question id appears more than once", path=path, qid=question.qid)
                seen.add(question.qid)
    return dialogs


class QuacGold(NamedTuple):
    """A QuAC gold file read by :func:`load_quac_gold`: the document and its dialogs."""

    document: dict[str, Any]
    dialogs: list[QuacDialog]


def load_quac_gold(path: str | os.PathLike[str]) -> QuacGold:
    """A QuAC gold file checked as a leaderboard needs it: the scorer's fields (strictly: no
    question id twice), every question's text, and gold dialog acts among QuAC's labels (any
    other could never be predicted right)."""
    name = os.fspath(path)
    document = load_json(name)
    if not isinstance(document, dict):
        raise InputFormatError("expected a QuAC dataset: a JSON object with a 'data' list", path=name)
    dialogs = quac_dialogs(document, path=name, strict=True)
    for a, article in enumerate(document["data"]):
        for p, paragraph in enumerate(article["paragraphs"]):
            for q, qa in enumerate(paragraph["qas"]):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                if not isinstance(qa.get("question"), str):
                    raise InputFormatError(f"{where} should have a string 'question'", path=name, qid=qa["id"])
                for key, allowed in (("yesno", YESNO_ACTS), ("followup", FOLLOWUP_ACTS)):
                    if not isinstance(qa[key], str) or qa[key] not in allowed:
                        raise InputFormatError(
                            f"{where}: {key!r} should be one of {', '.join(sorted(allowed))}, found {qa[key]!r}",
                            path=name, qid=qa["id"],
                        )
    return QuacGold(document, dialogs)


def answers_by_dialog(dialogs: Sequence[QuacDialog], answers: Mapping[str, Any]) -> QuacPredictions:
    """``{qid: answer}`` answers filed by dialog, as :func:`quac_predictions` files official lines.

    An answer is a string (the span; acts :data:`NEUTRAL_YESNO`, :data:`NEUTRAL_FOLLOWUP`) or a
    mapping with :data:`ANSWER_FIELDS` (``answer`` required, absent acts neutral); they are
    taken as given, so check them first.  The official scorer files a line under the dialog
    named by its first qid's prefix (``qid.split("_q#")[0]``); the gold says which dialog each
    qid is in, so each answer is filed there and a qid without that prefix is not lost.  A
    question without an answer is left out (scored 0, as the official scorer does).
    """
    out: QuacPredictions = {}
    for dialog in dialogs:
        filed = out.setdefault(dialog.dialog_id, {})
        for question in dialog.questions:
            if question.qid not in answers:
                continue
            answer = answers[question.qid]
            if isinstance(answer, str):
                filed[question.qid] = QuacPrediction(answer, NEUTRAL_YESNO, NEUTRAL_FOLLOWUP)
            else:
                filed[question.qid] = QuacPrediction(
                    answer["answer"], answer.get("yesno", NEUTRAL_YESNO), answer.get("followup", NEUTRAL_FOLLOWUP),
                )
    return out


def _dialog(par: Any, where: str, path: str) -> QuacDialog:
    if not isinstance(par, dict):
        raise InputFormatError(f"{where} should be an object", path=path)
    did = par.get("id")
    context = par.get("context")
    qas = par.get("qas")
    if not isinstance(did, str):
        raise InputFormatError(f"{where} should have a string 'id' (the dialog id)", path=path)
    if not isinstance(context, str):
        raise InputFormatError(f"{where} should have a string 'context'", path=path, qid=did)
    if not isinstance(qas, list):
        raise InputFormatError(f"{where} should have a 'qas' list", path=path, qid=did)
    questions: list[QuacQuestion] = []
    append = questions.append
    for q, qa in enumerate(qas):
        try:
            # The common case, cheaply; anything odd is explained by _question_error.
            qid = qa["id"]
            refs = [answer["text"] for answer in qa["answers"]]
            question = QuacQuestion(qid, refs, qa["yesno"], qa["followup"])
            if type(qid) is not str or not all(type(t) is str for t in refs):
                raise TypeError
        except (TypeError, KeyError):
            raise _question_error(qa, f"{where}.qas[{q}]", path) from None
        append(question)
    return QuacDialog(did, context, questions)


def _question_error(qa: Any, where: str, path: str) -> InputFormatError:
    if not isinstance(qa, dict):
        return InputFormatError(f"{where} should be an object, found {type(qa).__name__}", path=path)
    qid = qa.get("id")
    if not isinstance(qid, str):
        return InputFormatError(f"{where} should have a string 'id'", path=path)
    for key in ("answers", "yesno", "followup"):
        if key not in qa:
            return InputFormatError(f"{where} has no {key!r} field", path=path, qid=qid)
    return InputFormatError(
        f"{where}: 'answers' should be a list of objects with a string 'text'", path=path, qid=qid
    )


# --------------------------------------------------------------------------- predictions


def load_quac_predictions(
    path: str | os.PathLike[str], *, strict: bool = False, warn: Warn = _ignore
) -> QuacPredictions:
    """Load a QuAC prediction file: JSON lines of parallel lists.

    Each line has ``qid``, ``best_span_str``, ``yesno`` and ``followup``.
    """
    name = os.fspath(path)
    return quac_predictions(iter_json_lines(name), path=name, strict=strict, warn=warn)


def quac_predictions(
    lines: Iterable[tuple[int, Any]], *, path: str = "predictions", strict: bool = False, warn: Warn = _ignore
) -> QuacPredictions:
    """File ``(line number, object)`` pairs the official way (spec 6.1).

    All entries of a line go under the dialog id of the line's *first* qid
    (``qid[0].split("_q#")[0]``), and a later entry for the same qid replaces
    an earlier one; both are reported through ``warn`` (errors with
    ``strict``).  Lists of unequal length are cut to the shortest, as ``zip``
    does in the official scorer.
    """
    preds: QuacPredictions = {}
    misfiled: list[str] = []
    repeated: list[str] = []
    for number, obj in lines:
        qids = _field_list(obj, "qid", path, number)
        spans = _field_list(obj, "best_span_str", path, number)
        yesnos = _field_list(obj, "yesno", path, number)
        followups = _field_list(obj, "followup", path, number)
        if not qids:
            # The official qid[0] raises IndexError.
            raise InputFormatError("'qid' is an empty list; a line needs at least one qid",
                                   path=path, line=number)
        for qid in qids:
            if not isinstance(qid, str):
                raise InputFormatError(f"every 'qid' should be a string, found {type(qid).__name__}",
                                       path=path, line=number)
        for span in spans:
            if not isinstance(span, str):
                raise InputFormatError(
                    f"every 'best_span_str' entry should be a string, found {type(span).__name__}",
                    path=path, line=number,
                )
        lengths = {len(qids), len(spans), len(yesnos), len(followups)}
        if len(lengths) > 1:
            message = (f"'qid', 'best_span_str', 'yesno' and 'followup' have different lengths "
                       f"({len(qids)}, {len(spans)}, {len(yesnos)}, {len(followups)})")
            if strict:
                raise InputFormatError(message, path=path, line=number)
            warn(f"{path}, line {number}: {message}; extra entries are ignored, as the official zip() does")
        dialog_id = qids[0].split("_q#")[0]
        dialog = preds.setdefault(dialog_id, {})
        for qid, span, yesno, followup in zip(qids, spans, yesnos, followups):
            if qid in dialog:
                repeated.append(qid)
                if strict:
                    raise InputFormatError("this qid was already predicted", path=path, line=number, qid=qid)
            if qid.split("_q#")[0] != dialog_id:
                misfiled.append(f"{qid!r} (line {number})")
            dialog[qid] = QuacPrediction(span, yesno, followup)
    if repeated:
        shown = ", ".join(repr(q) for q in repeated[:5])
        warn(f"{path}: {len(repeated)} qid(s) predicted more than once ({shown}); "
             "the last prediction is used")
    if misfiled:
        shown = ", ".join(misfiled[:5])
        warn(f"{path}: {len(misfiled)} qid(s) share a line with another dialog's qids ({shown}); "
             "the official scorer files them under the dialog of the line's first qid, "
             "where they count as missing")
    return preds


def _field_list(obj: Any, key: str, path: str, line: int) -> list[Any]:
    if not isinstance(obj, dict):
        raise InputFormatError(f"expected a JSON object with 'qid', 'best_span_str', 'yesno' and 'followup' "
                               f"lists, found {type(obj).__name__}", path=path, line=line)
    value = obj.get(key)
    if not isinstance(value, list):
        what = "missing field" if key not in obj else f"field should be a list, found {type(value).__name__}:"
        raise InputFormatError(f"{what} {key!r}", path=path, line=line)
    return value


# --------------------------------------------------------------------------- scoring


def handle_cannot(refs: list[str]) -> list[str]:
    """``handle_cannot`` (spec 6.3): a CANNOTANSWER majority (or tie, or no reference) wins outright."""
    num_cannot = refs.count(CANNOTANSWER)
    if num_cannot >= len(refs) - num_cannot:
        return [CANNOTANSWER]
    if num_cannot:
        return [r for r in refs if r != CANNOTANSWER]
    return refs


def _texts(dialogs: Sequence[QuacDialog], predictions: Mapping[str, Mapping[str, QuacPrediction]],
           refs_of: list[list[str]]) -> Iterator[str]:
    """Every string that will be tokenised: references after handle_cannot, then the prediction."""
    n = 0
    for dialog in dialogs:
        dialog_preds = predictions.get(dialog.dialog_id, _NO_PREDICTIONS)
        for question in dialog.questions:
            yield from refs_of[n]
            n += 1
            pred = dialog_preds.get(question.qid)
            if pred is not None:
                yield pred.span


_NO_PREDICTIONS: Mapping[str, QuacPrediction] = {}


def _human_f1(refs: list[TokenBag]) -> float:
    """``leave_one_out(refs)`` (spec 6.3): mean over i of the best F1 of ref i against another ref."""
    n = len(refs)
    if n == 1:
        return 1.0
    best = [0.0] * n
    for i, j in combinations(range(n), 2):
        f1 = refs[i].f1_v1(refs[j])  # F1 is symmetric: each pair once
        if f1 > best[i]:
            best[i] = f1
        if f1 > best[j]:
            best[j] = f1
    total = 0.0
    for f1 in best:  # summed in reference order, as the official loop does
        total += f1
    return total / n


def _model_f1(
    span: str, pred: TokenBag, refs: list[str], ref_bags: list[TokenBag], context: str
) -> tuple[str, float]:
    """The category of the best reference and ``leave_one_out_max`` (spec 6.2-6.3), refs not CANNOTANSWER."""
    scores = [pred.f1_v1(ref) for ref in ref_bags]
    top = max(scores)
    k = scores.index(top)  # max(..., key=F1) keeps the first of equal scores
    category = _category(span, pred, refs[k], ref_bags[k], context)
    n = len(scores)
    if n == 1:
        return category, top
    # The n leave-one-out maxima: leaving out the (first) best reference leaves
    # the second best, leaving out any other the best; summed in the official order.
    maxima = [top] * n
    maxima[k] = max(scores[:k] + scores[k + 1:])
    return category, 1.0 * sum(maxima) / n


def _category(span: str, pred: TokenBag, ref: str, gold: TokenBag, context: str) -> str:
    """The label ``compute_span_overlap`` gives a (non-CANNOTANSWER) reference (spec 6.2)."""
    pred_start = context.find(span)
    gold_start = context.find(ref)
    if pred_start == -1 or gold_start == -1:
        return INDEXING_ERROR
    if pred.tokens == gold.tokens:  # equal normal forms
        return EXACT
    if max(pred_start, gold_start) <= min(pred_start + len(span), gold_start + len(ref)):
        return PARTIAL
    return NO_OVERLAP


def evaluate_quac(
    dataset: Any,
    predictions: Mapping[str, Mapping[str, QuacPrediction]] | Sequence[Any],
    *,
    min_f1: float = DEFAULT_MIN_F1,
    allow_undefined: bool = False,
    dataset_path: str = "dataset",
) -> EvalResult:
    """``eval_fn`` of scorer.py (spec 6.4): the official metrics, x100, unrounded.

    ``dataset`` is a list of :class:`QuacDialog` (from :func:`load_quac_dataset`)
    or the loaded JSON; ``predictions`` comes from :func:`load_quac_predictions`
    or is the list of loaded prediction lines.
    Per-example records, in dataset order: ``id``, ``dialog_id``,
    ``refs_after_handle_cannot``, ``human_f1``, ``category``, ``model_f1``,
    ``yesno_correct``, ``followup_correct``, ``missing`` and ``filtered``
    (left out of the filtered metrics because human F1 < ``min_f1``, which
    never happens to a missing prediction: it counts everywhere, spec 6.4).
    """
    dialogs: Sequence[QuacDialog] = (
        dataset if isinstance(dataset, list) and all(isinstance(d, QuacDialog) for d in dataset)
        else quac_dialogs(dataset, path=dataset_path)
    )
    if not isinstance(predictions, Mapping):
        predictions = quac_predictions(enumerate(predictions, start=1))
    if not any(d.questions for d in dialogs):
        raise InputFormatError("the dataset has no questions; every QuAC metric would be undefined",
                               path=dataset_path)
    with gc_paused():
        return _evaluate(dialogs, predictions, min_f1, allow_undefined, dataset_path)


class _Totals:
    """The official accumulators (scorer.py:129-141), fed one question at a time."""

    def __init__(self) -> None:
        self.total_qs = 0.0
        self.f1_stats: dict[str, list[float]] = {}  # by category, in order of first use
        self.unfiltered_f1s: list[float] = []
        self.heq = 0.0
        self.dheq = 0.0
        self.total_dials = 0.0
        self.yes_nos: list[bool] = []
        self.followups: list[bool] = []
        self.unanswerables: list[float] = []
        self.cannot_questions = 0

    def add_missing(self, cannot: bool) -> None:
        # scorer.py:153-165: counted everywhere, whatever the human F1.
        self.f1_stats.setdefault(NO_ANSWER, []).append(0.0)
        self.yes_nos.append(False)
        self.followups.append(False)
        if cannot:
            self.unanswerables.append(0.0)
        self.total_qs += 1
        self.unfiltered_f1s.append(0.0)

    def add_scored(self, record: dict[str, Any], cannot: bool) -> bool:
        """Count a predicted question; False if it makes its dialog fail HEQ-D."""
        max_f1: float = record["model_f1"]
        self.unfiltered_f1s.append(max_f1)
        if record["filtered"]:
            return True  # scorer.py:175-177: low human agreement, not evaluated
        self.yes_nos.append(record["yesno_correct"])
        self.followups.append(record["followup_correct"])
        if cannot:
            self.unanswerables.append(max_f1)
        self.f1_stats.setdefault(record["category"], []).append(max_f1)
        self.total_qs += 1.0
        if max_f1 >= record["human_f1"]:
            self.heq += 1.0
            return True
        return False

    def end_dialog(self, good: bool) -> None:
        # A dialog whose questions were all filtered out still counts as good.
        self.dheq += 1.0 if good else 0.0
        self.total_dials += 1


def _evaluate(
    dialogs: Sequence[QuacDialog],
    predictions: Mapping[str, Mapping[str, QuacPrediction]],
    min_f1: float,
    allow_undefined: bool,
    dataset_path: str,
) -> EvalResult:
    refs_of = [handle_cannot(q.refs) for d in dialogs for q in d.questions]
    bags = TokenBag.by_text(_texts(dialogs, predictions, refs_of))
    totals = _Totals()
    per_example: list[dict[str, Any]] = []
    missing: list[str] = []
    n = 0
    for dialog in dialogs:
        did = dialog.dialog_id
        dialog_preds = predictions.get(did, _NO_PREDICTIONS)
        good = True
        for question in dialog.questions:
            refs = refs_of[n]
            n += 1
            cannot = refs[0] == CANNOTANSWER  # handle_cannot leaves it alone or removes it
            ref_bags = [bags[r] for r in refs]
            hf1 = _human_f1(ref_bags)
            totals.cannot_questions += cannot
            pred = dialog_preds.get(question.qid)
            if pred is None:
                missing.append(f"{did} {question.qid} no prediction for this dialogue id (scored 0)")
                record = {"id": question.qid, "dialog_id": did, "refs_after_handle_cannot": refs,
                          "human_f1": hf1, "category": NO_ANSWER, "model_f1": 0.0, "yesno_correct": False,
                          "followup_correct": False, "missing": True, "filtered": False}
                totals.add_missing(cannot)
                good = False
            else:
                if cannot:
                    # compute_span_overlap's special case: only the exact string scores.
                    right = pred.span == CANNOTANSWER
                    category, max_f1 = (EXACT, 1.0) if right else (NO_OVERLAP, 0.0)
                else:
                    category, max_f1 = _model_f1(pred.span, bags[pred.span], refs, ref_bags, dialog.context)
                record = {"id": question.qid, "dialog_id": did, "refs_after_handle_cannot": refs,
                          "human_f1": hf1, "category": category, "model_f1": max_f1,
                          "yesno_correct": pred.yesno == question.yesno,
                          "followup_correct": pred.followup == question.followup,
                          "missing": False, "filtered": hf1 < min_f1}
                if not totals.add_scored(record, cannot):
                    good = False
            per_example.append(record)
        totals.end_dialog(good)
    metrics, notes = _metrics(totals, min_f1, allow_undefined, dataset_path)
    warnings = summarise(missing, "questions without a prediction (each scores 0)") + notes
    return EvalResult(metrics, per_example, warnings)


def _metrics(
    totals: _Totals, min_f1: float, allow_undefined: bool, path: str
) -> tuple[dict[str, Any], list[str]]:
    """The output JSON (scorer.py:199-206), or an error for a metric the official divides by zero on."""
    undefined: dict[str, str] = {}
    if totals.total_qs == 0:
        reason = (f"every question has human F1 below min_f1={min_f1:g} and a prediction, "
                  "so none is left after the filter")
        for key in ("f1", "HEQ", "yes/no", "followup", "unanswerable_acc"):
            undefined[key] = reason
    elif not totals.unanswerables:
        if totals.cannot_questions:
            undefined["unanswerable_acc"] = (f"no question with a CANNOTANSWER majority reference is left "
                                             f"after the min_f1={min_f1:g} filter")
        else:
            undefined["unanswerable_acc"] = "no question has a CANNOTANSWER majority reference"
    if undefined and not allow_undefined:
        names = list(undefined)
        label = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        verb = "is" if len(names) == 1 else "are"
        raise UndefinedMetricError(
            f"{label} {verb} undefined: {undefined[names[0]]} (the official scorer divides by zero; "
            "--undefined-as-null reports it as null)",
            path=path,
        )
    notes = [f"{key} is reported as null: {reason}" for key, reason in undefined.items()]

    # sum() over the official lists, in the official order (all_f1s concatenates
    # the categories in order of first use), so the floats are bit-identical.
    all_f1s = [f1 for values in totals.f1_stats.values() for f1 in values]
    values: dict[str, float | None] = {
        "unfiltered_f1": 100.0 * sum(totals.unfiltered_f1s) / len(totals.unfiltered_f1s),
        "f1": 100.0 * sum(all_f1s) / len(all_f1s) if all_f1s else None,
        "HEQ": 100.0 * totals.heq / totals.total_qs if totals.total_qs else None,
        "DHEQ": 100.0 * totals.dheq / totals.total_dials,
        "yes/no": 100.0 * sum(totals.yes_nos) / len(totals.yes_nos) if totals.yes_nos else None,
        "followup": 100.0 * sum(totals.followups) / len(totals.followups) if totals.followups else None,
        "unanswerable_acc": (100.0 * sum(totals.unanswerables) / len(totals.unanswerables)
                             if totals.unanswerables else None),
    }
    return {key: values[key] for key in METRIC_KEYS}, notes


# --------------------------------------------------------------------------- command line


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "quac",
        help="QuAC (scorer.py): F1, HEQ-Q, HEQ-D, yes/no, follow-up, unanswerable accuracy",
        description="QuAC's official scorer.py, same arguments and numbers (spec 6).",
    )
    parser.add_argument("--val_file", required=True, help="the QuAC dataset (val_v0.2.json)")
    parser.add_argument("--model_output", required=True, help="predictions, JSON lines")
    parser.add_argument("--o", metavar="OUT.json",
                        help="also write the metrics JSON here, as the official does")
    parser.add_argument("--min_f1", type=float, default=DEFAULT_MIN_F1,
                        help="leave out questions whose human F1 is below this (default 0.4)")
    parser.add_argument("--verbose", action="store_true", help="accepted for compatibility; ignored")
    parser.add_argument("--undefined-as-null", action="store_true",
                        help="report a metric the official scorer divides by zero on (e.g. unanswerable_acc "
                             "with no CANNOTANSWER question left) as null instead of failing")
    add_common_options(parser)  # --official-rounding: the official JSON is unrounded, nothing to do
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> EvalResult:
    load_warnings: list[str] = []
    with gc_paused():
        dialogs = load_quac_dataset(args.val_file, strict=args.strict)
        predictions = load_quac_predictions(args.model_output, strict=args.strict, warn=load_warnings.append)
    result = evaluate_quac(dialogs, predictions, min_f1=args.min_f1, allow_undefined=args.undefined_as_null,
                           dataset_path=args.val_file)
    result.warnings[:0] = load_warnings
    if args.o:
        with open(args.o, "w", encoding="utf-8") as out:
            json.dump(result.metrics, out)
    return result
