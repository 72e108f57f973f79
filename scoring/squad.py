"""SQuAD v1.1 (``evaluate-v1.1.py``) and SQuAD v2.0 (``evaluate-v2.0.py``), spec sections 1 and 2.

The numbers are the official scripts' own, unrounded (neither script rounds,
so ``--official-rounding`` changes nothing here).  What differs is speed and
what happens on inputs the official scripts crash on:

* v1.1: a question with no gold answer crashes the official ``max()``; we
  stop with an error naming it.  A dataset with no question is an
  :class:`UndefinedMetricError` (the official divides by zero).
* v2.0: the official script raises ``KeyError`` as soon as one dataset
  question has no prediction (spec 2.3).  We stop with an error naming the
  first missing ids and how many there are, unless the caller opts in to
  ``missing_as_empty`` (``--missing-as-empty``): a missing prediction is then
  scored exactly as if the prediction file held ``""`` for it, an abstention.

Scoring is cheap because every distinct string is normalised once
(:class:`CachedScorer`); MRQA and the unanswerable-question metrics reuse it.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, NamedTuple

from scoring.cli import add_common_options, write_json
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.io import Warn, gc_paused, load_json, load_prediction_map
from scoring.result import MAX_LISTED_WARNINGS, EvalResult, summarise
from scoring.text import TokenKey, normalize_answer, normalize_many, numbered

# --------------------------------------------------------------------------- scoring core


class CachedScorer:
    """EM and F1 against several golds, normalising each distinct string once.

    Annotators often agree (SQuAD dev repeats most gold strings), and a run
    scores tens of thousands of questions, so normalisation and token counting
    are what cost time.  :meth:`prime` normalises all strings in one batch;
    token multisets are built once per normal form.  The arithmetic is the
    official one (spec 1.3, 2.1), so the values are identical.
    """

    __slots__ = ("_norms", "_bags")

    def __init__(self) -> None:
        self._norms: dict[str, str] = {}
        self._bags: dict[str, tuple[int, frozenset[TokenKey], bool]] = {}

    def norm(self, raw: str) -> str:
        norm = self._norms.get(raw)
        if norm is None:
            norm = self._norms[raw] = normalize_answer(raw)
        return norm

    def prime(self, raws: Iterable[str]) -> None:
        """Normalise every string among ``raws`` in one batch, several times faster than one by one.

        Scoring a string that was not primed still works; it is just slower.
        """
        norms = self._norms
        todo = list(dict.fromkeys(raws))
        if norms:
            todo = [raw for raw in todo if raw not in norms]
        norms.update(zip(todo, normalize_many(todo), strict=True))

    def _norm_set(self, raws: Sequence[str]) -> set[str]:
        # A set: three annotators often gave the same answer, and F1 is computed once per distinct one.
        try:
            return set(map(self._norms.__getitem__, raws))
        except KeyError:
            self.prime(raws)
            return set(map(self._norms.__getitem__, raws))

    def _bag(self, norm: str) -> tuple[int, frozenset[TokenKey], bool]:
        """(token count, token multiset, whether a token repeats) of a predicted normal form."""
        tokens = norm.split()
        keys: frozenset[TokenKey] = frozenset(tokens)
        repeats = len(keys) != len(tokens)
        if repeats:
            keys = numbered(tokens)
        bag = self._bags[norm] = (len(tokens), keys, repeats)
        return bag

    @property
    def norms(self) -> dict[str, str]:
        """Raw string -> normal form, for every string normalised so far (read-only by convention)."""
        return self._norms

    def best_overlap(self, pred: str, gold_norms: Iterable[str]) -> float:
        """Max token F1 of a non-empty normal form against golds (0 for an empty gold)."""
        pred_len, pred_keys, pred_repeats = self._bags.get(pred) or self._bag(pred)
        best = 0.0
        for gold in gold_norms:
            if not gold:
                continue
            gold_tokens = gold.split()
            # The official sum((Counter(p) & Counter(g)).values()), in C: when no
            # predicted token repeats, it is the number of predicted tokens found in
            # the gold; otherwise both sides become multisets (see numbered).
            if pred_repeats:
                same = len(pred_keys & numbered(gold_tokens))
            else:
                same = len(pred_keys.intersection(gold_tokens))
            if same:
                precision = 1.0 * same / pred_len
                recall = 1.0 * same / len(gold_tokens)
                f1 = (2 * precision * recall) / (precision + recall)
                if f1 > best:
                    best = f1
        return best

    def overlap_f1(self, pred_norm: str, gold_norm: str) -> float:
        """Token F1 of two normal forms, 0 if either is empty or nothing overlaps (v1.1 ``f1_score``)."""
        if not pred_norm:
            return 0.0
        return self.best_overlap(pred_norm, (gold_norm,))

    def best_v1(self, prediction: str, golds: Sequence[str]) -> tuple[int, float]:
        """SQuAD v1.1 / MRQA: max EM and max F1 over ``golds`` (spec 1.3-1.4), golds non-empty."""
        pred = self._norms.get(prediction)
        if pred is None:
            pred = self.norm(prediction)
        gold_norms = self._norm_set(golds)
        if pred in gold_norms:
            # Identical normal forms: F1 is exactly 1.0, the maximum, except that
            # v1.1 scores empty against empty as 0 (spec 1.3).
            return 1, (1.0 if pred else 0.0)
        if not pred:
            return 0, 0.0
        return 0, self.best_overlap(pred, gold_norms)

    def gold_norms_v2(self, golds: Sequence[str]) -> set[str]:
        """v2.0 golds: those normalising to "" are dropped (spec 2.2); an empty set stands for ``['']``."""
        gold_norms = self._norm_set(golds)
        gold_norms.discard("")
        return gold_norms

    def best_v2(self, prediction: str, gold_norms: set[str]) -> tuple[int, float]:
        """SQuAD v2.0 ``compute_exact`` / ``compute_f1`` maxima; ``gold_norms`` from :meth:`gold_norms_v2`."""
        pred = self._norms.get(prediction)
        if pred is None:
            pred = self.norm(prediction)
        if not gold_norms:
            # The gold list is [''] (spec 2.2): both metrics are 1 iff the prediction
            # has no tokens either.
            return (0, 0.0) if pred else (1, 1.0)
        if pred in gold_norms:
            return 1, 1.0
        if not pred:
            return 0, 0.0
        return 0, self.best_overlap(pred, gold_norms)


# A prediction map's stand-in for "no prediction" (a prediction may be any JSON value, None too).
_MISSING: Any = object()


# --------------------------------------------------------------------------- dataset


class SquadQuestion(NamedTuple):
    """One ``qa`` of a SQuAD-format dataset, in file order."""

    qid: str
    answers: list[str]
    qa: dict[str, Any]
    position: tuple[int, int, int]  # (article, paragraph, qa) indexes, for messages

    @property
    def where(self) -> str:
        a, p, q = self.position
        return f"data[{a}].paragraphs[{p}].qas[{q}]"


def load_squad_dataset(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load a SQuAD-format dataset file: a JSON object with a ``data`` list of articles.

    The structure inside ``data`` is checked by :func:`squad_questions`, which
    every evaluator calls; this only makes sure the top level is right.
    """
    name = os.fspath(path)
    dataset = load_json(name)
    if not isinstance(dataset, dict):
        raise InputFormatError(
            f"expected a SQuAD dataset (a JSON object with a 'data' list), found {type(dataset).__name__}",
            path=name,
        )
    if not isinstance(dataset.get("data"), list):
        raise InputFormatError(
            "expected a SQuAD dataset: the top-level object needs a 'data' list of articles", path=name
        )
    return dataset


def squad_questions(dataset: Mapping[str, Any] | Sequence[Any], *, path: str = "dataset") -> list[SquadQuestion]:
    """Every ``qa`` of ``dataset`` (the loaded JSON, or its ``data`` list), checked.

    Each qa needs a string ``id`` and an ``answers`` list of objects with a
    string ``text``; the error names the qa's position and id.
    """
    articles = dataset.get("data") if isinstance(dataset, Mapping) else dataset
    if not isinstance(articles, list):
        raise InputFormatError("expected a 'data' list of articles", path=path)
    out: list[SquadQuestion] = []
    append = out.append
    # tuple.__new__ skips the NamedTuple's Python-level __new__: this loop runs
    # once per question and is a visible share of a whole evaluation.
    make = tuple.__new__
    join = "".join
    for a, article in enumerate(articles):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise InputFormatError(f"data[{a}] should be an object with a 'paragraphs' list", path=path)
        for p, paragraph in enumerate(paragraphs):
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(qas, list):
                raise InputFormatError(
                    f"data[{a}].paragraphs[{p}] should be an object with a 'qas' list", path=path
                )
            for q, qa in enumerate(qas):
                qid = qa.get("id") if isinstance(qa, dict) else None
                if not isinstance(qid, str):
                    raise InputFormatError(
                        f"data[{a}].paragraphs[{p}].qas[{q}] should be an object with a string 'id'", path=path
                    )
                try:
                    texts = [answer["text"] for answer in qa["answers"]]
                    join(texts)  # raises TypeError unless every text is a string
                except (TypeError, KeyError):
                    raise InputFormatError(
                        f"data[{a}].paragraphs[{p}].qas[{q}]: 'answers' should be a list of objects "
                        "with a string 'text'",
                        path=path,
                        qid=qid,
                    ) from None
                append(make(SquadQuestion, (qid, texts, qa, (a, p, q))))
    return out


def find_duplicates(qids: Sequence[str]) -> list[str]:
    """Ids that occur more than once, in order of their second occurrence."""
    if len(set(qids)) == len(qids):
        return []  # the usual case, without a Python-level loop over every id
    seen: set[str] = set()
    dups: list[str] = []
    for qid in qids:
        if qid in seen:
            dups.append(qid)
        else:
            seen.add(qid)
    return dups


def report_duplicate_qids(
    questions: Sequence[SquadQuestion], *, path: str, strict: bool, warnings: list[str], consequence: str
) -> None:
    dups = find_duplicates([q.qid for q in questions])
    if not dups:
        return
    if strict:
        first, second = [q for q in questions if q.qid == dups[0]][:2]
        raise InputFormatError(f"{second.where}: question id already used at {first.where}",
                               path=path, qid=dups[0])
    listed = ", ".join(repr(d) for d in dict.fromkeys(dups[:MAX_LISTED_WARNINGS]))
    warnings.append(f"{path}: {len(dups)} repeated question id(s) ({listed}); {consequence}")


def prediction_text(predictions: Mapping[str, Any], qid: str, *, path: str) -> str:
    """The prediction for ``qid``, which the official scripts need to be a string."""
    value = predictions[qid]
    if not isinstance(value, str):
        raise InputFormatError(
            f"the prediction should be a string, found {type(value).__name__}", path=path, qid=qid
        )
    return value


def missing_error(missing: Sequence[str], total: int, *, path: str, hint: str) -> InputFormatError:
    shown = ", ".join(repr(m) for m in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    return InputFormatError(
        f"{len(missing)} of {total} questions have no prediction ({shown}{more}); {hint}",
        path=path,
        qid=missing[0],
    )


# --------------------------------------------------------------------------- SQuAD v1.1


def questions_by_id(
    dataset: Mapping[str, Any] | Sequence[Any],
    *,
    path: str,
    strict: bool,
    warnings: list[str],
    consequence: str,
    empty: str,
) -> dict[str, SquadQuestion]:
    """qid -> its last occurrence, in first-occurrence order, as the official dicts have it.

    Repeated qids are reported (an error with ``strict``); no question at all is
    an :class:`UndefinedMetricError` saying ``empty``.
    """
    questions = squad_questions(dataset, path=path)
    report_duplicate_qids(questions, path=path, strict=strict, warnings=warnings, consequence=consequence)
    by_id: dict[str, SquadQuestion] = {}
    for question in questions:
        by_id[question.qid] = question
    if not by_id:
        raise UndefinedMetricError(empty, path=path)
    return by_id


def missing_predictions(
    by_id: Mapping[str, SquadQuestion],
    predictions: Mapping[str, Any],
    *,
    missing_as_empty: bool,
    path: str,
    warnings: list[str],
    hint: str,
    counted_as: str,
) -> list[str]:
    """The qids without a prediction: an error naming them, or with ``missing_as_empty`` a warning."""
    missing = [qid for qid in by_id if qid not in predictions]
    if missing and not missing_as_empty:
        raise missing_error(missing, len(by_id), path=path, hint=hint)
    if missing:
        warnings.append(f"{path}: {len(missing)} question(s) have no prediction and {counted_as}, "
                        f"e.g. {missing[0]!r}")
    return missing


def evaluate_squad_v1(
    dataset: Mapping[str, Any] | Sequence[Any],
    predictions: Mapping[str, Any],
    *,
    strict: bool = False,
    dataset_path: str = "dataset",
    prediction_path: str = "predictions",
) -> EvalResult:
    """``evaluate-v1.1.py`` (spec 1): ``{"exact_match", "f1"}`` x100 over every qa occurrence.

    A missing prediction scores 0 and is reported as a warning; a qid that
    occurs twice in the dataset is scored twice (with ``strict`` it is an
    error); predictions for unknown ids are ignored.
    """
    warnings: list[str] = []
    if isinstance(dataset, Mapping):
        version = dataset.get("version")
        if version is None:
            warnings.append(f"{dataset_path}: the dataset has no 'version' field; expected '1.1'")
        elif version != "1.1":
            warnings.append(f"Evaluation expects v-1.1, but got dataset with v-{version}")
    questions = squad_questions(dataset, path=dataset_path)
    if not questions:
        raise UndefinedMetricError("the dataset has no questions (the official script divides by zero)",
                                   path=dataset_path)
    report_duplicate_qids(questions, path=dataset_path, strict=strict, warnings=warnings,
                          consequence="each occurrence is scored, as the official script does")
    scorer = CachedScorer()
    answered = [predictions[q.qid] for q in questions if q.qid in predictions]
    scorer.prime(chain(chain.from_iterable(q.answers for q in questions),
                       (p for p in answered if isinstance(p, str))))
    exact_total = 0
    f1_total = 0.0
    per_example: list[dict[str, Any]] = []
    unanswered: list[str] = []
    norms = scorer.norms
    best_overlap = scorer.best_overlap
    for question in questions:
        qid, golds = question.qid, question.answers
        prediction = predictions.get(qid, _MISSING)
        if prediction is _MISSING:
            unanswered.append(f"Unanswered question {qid} will receive score 0.")
            per_example.append({"id": qid, "exact_match": 0, "f1": 0.0, "missing": True})
            continue
        if not golds:
            # The official max() over an empty list raises ValueError here.
            raise InputFormatError(
                f"{question.where}: a SQuAD v1.1 question needs at least one gold answer "
                "(use squad2 for unanswerable questions)",
                path=dataset_path, qid=qid,
            )
        if type(prediction) is not str:
            prediction_text(predictions, qid, path=prediction_path)  # raises, naming the type
        # best_v1, inlined (this loop runs once per question): every string here was primed.
        pred = norms[prediction]
        gold_norms = {norms[gold] for gold in golds}
        if pred in gold_norms:
            em, f1 = 1, (1.0 if pred else 0.0)
        elif not pred:
            em, f1 = 0, 0.0
        else:
            em, f1 = 0, best_overlap(pred, gold_norms)
        # Accumulated in file order, as the official loop does, so the sums are bit-identical.
        exact_total += em
        f1_total += f1
        per_example.append({"id": qid, "exact_match": em, "f1": f1, "missing": False})
    total = len(questions)
    warnings.extend(summarise(unanswered, "unanswered questions (each scores 0)"))
    metrics = {"exact_match": 100.0 * exact_total / total, "f1": 100.0 * f1_total / total}
    return EvalResult(metrics, per_example, warnings)


# --------------------------------------------------------------------------- SQuAD v2.0


def load_na_probs(path: str | os.PathLike[str], *, strict: bool = False, warn: Warn | None = None) -> dict[str, Any]:
    """A ``{qid: no-answer probability}`` file; every value must be a number."""
    name = os.fspath(path)
    na_probs = load_prediction_map(name, strict=strict, warn=warn or (lambda _: None), value_kind="number")
    check_na_probs(na_probs, path=name)
    return na_probs


def check_na_probs(na_probs: Mapping[str, Any], *, path: str) -> None:
    # The official script sorts all values (spec 2.6), so one string among numbers crashes it.
    for qid, value in na_probs.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputFormatError(
                f"the no-answer probability should be a number, found {type(value).__name__}",
                path=path, qid=qid,
            )


def find_best_thresh(
    preds: Mapping[str, str],
    scores: Mapping[str, float],
    na_probs: Mapping[str, Any],
    has_ans: Mapping[str, bool],
) -> tuple[float, Any]:
    """``find_best_thresh`` of evaluate-v2.0.py, statement for statement (spec 2.6).

    The quirks are the point: a stable sort on na_prob (ties keep the
    na_prob file's key order and are not grouped), truthiness of the raw
    prediction string, a start at the number of unanswerable questions in the
    whole dataset, and ``len(scores)`` as the denominator.
    """
    cur: float = sum(1 for v in has_ans.values() if not v)
    best = cur
    best_thresh: Any = 0.0
    for qid in sorted(na_probs, key=na_probs.__getitem__):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff: float = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur += diff
        if cur > best:
            best = cur
            best_thresh = na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def evaluate_squad_v2(
    dataset: Mapping[str, Any] | Sequence[Any],
    predictions: Mapping[str, Any],
    na_probs: Mapping[str, Any] | None = None,
    *,
    na_prob_thresh: float = 1.0,
    missing_as_empty: bool = False,
    strict: bool = False,
    dataset_path: str = "dataset",
    prediction_path: str = "predictions",
    na_prob_path: str = "na_probs",
) -> EvalResult:
    """``evaluate-v2.0.py`` (spec 2): exact, f1, total, HasAns_*, NoAns_*, and best_* with ``na_probs``.

    Every dataset question needs a prediction (the official script crashes
    otherwise, spec 2.3) unless ``missing_as_empty``: then a missing
    prediction is scored as ``""``, an abstention; its no-answer probability
    is 0.0 without ``na_probs`` (as for every prediction) and, when
    ``na_probs`` lacks it, 1.0, placed after the file's ids in the best-
    threshold sort.  With ``na_probs`` every other scored id must be in it.

    A qid repeated in the dataset is scored once, with its last occurrence's
    answers (the official dicts); ``strict`` makes it an error.
    """
    warnings: list[str] = []
    by_id = questions_by_id(
        dataset, path=dataset_path, strict=strict, warnings=warnings,
        consequence="each is scored once, with its last occurrence's answers",
        empty="the dataset has no questions (the official script divides by zero)",
    )
    missing = missing_predictions(
        by_id, predictions, missing_as_empty=missing_as_empty, path=prediction_path, warnings=warnings,
        hint="the official evaluate-v2.0.py crashes with KeyError here (spec 2.3); "
             "predict \"\" to abstain, or use --missing-as-empty",
        counted_as="are scored as abstentions (\"\")",
    )
    preds: dict[str, str] = {}
    for qid in by_id:
        preds[qid] = prediction_text(predictions, qid, path=prediction_path) if qid in predictions else ""

    probs = _na_probs_for(by_id, missing, na_probs, path=na_prob_path)
    scorer = CachedScorer()
    scorer.prime(chain(chain.from_iterable(q.answers for q in by_id.values()), preds.values()))
    has_ans: dict[str, bool] = {}
    exact_raw: dict[str, int] = {}
    f1_raw: dict[str, float] = {}
    exact_thr: list[float] = []
    f1_thr: list[float] = []
    per_example: list[dict[str, Any]] = []
    missing_set = set(missing)
    for qid, question in by_id.items():
        answerable = bool(question.answers)
        em, f1 = scorer.best_v2(preds[qid], scorer.gold_norms_v2(question.answers))
        has_ans[qid] = answerable
        exact_raw[qid] = em
        f1_raw[qid] = f1
        prob = probs[qid]
        if prob > na_prob_thresh:
            # apply_no_ans_threshold (spec 2.4): the question counts as abstained on.
            em_t: float = float(not answerable)
            f1_t: float = em_t
        else:
            em_t, f1_t = em, f1
        exact_thr.append(em_t)
        f1_thr.append(f1_t)
        record: dict[str, Any] = {"id": qid, "has_ans": answerable, "exact_raw": em, "f1_raw": f1,
                                  "missing": qid in missing_set, "exact": em_t, "f1": f1_t}
        if na_probs is not None:
            record["na_prob"] = prob
        per_example.append(record)

    metrics: dict[str, Any] = _eval_dict(exact_thr, f1_thr)
    flags = list(has_ans.values())
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        if wanted in flags:
            subset = [i for i, flag in enumerate(flags) if flag is wanted]
            for key, value in _eval_dict([exact_thr[i] for i in subset], [f1_thr[i] for i in subset]).items():
                metrics[f"{prefix}_{key}"] = value
    if na_probs is not None:
        sort_probs = dict(na_probs)
        for qid in missing:
            sort_probs.setdefault(qid, probs[qid])
        best_exact, exact_thresh = find_best_thresh(preds, exact_raw, sort_probs, has_ans)
        best_f1, f1_thresh = find_best_thresh(preds, f1_raw, sort_probs, has_ans)
        metrics.update(best_exact=best_exact, best_exact_thresh=exact_thresh,
                       best_f1=best_f1, best_f1_thresh=f1_thresh)
    return EvalResult(metrics, per_example, warnings)


def _na_probs_for(
    by_id: Mapping[str, SquadQuestion], missing: Sequence[str], na_probs: Mapping[str, Any] | None, *, path: str
) -> dict[str, Any]:
    """The no-answer probability of every scored question (spec 2.4, and the missing-as-empty rule)."""
    if na_probs is None:
        return dict.fromkeys(by_id, 0.0)
    check_na_probs(na_probs, path=path)
    missing_set = set(missing)
    lacking = [qid for qid in by_id if qid not in na_probs and qid not in missing_set]
    if lacking:
        shown = ", ".join(repr(m) for m in lacking[:5])
        raise InputFormatError(
            f"{len(lacking)} scored question(s) have no no-answer probability ({shown}); "
            "the official script crashes with KeyError here (spec 2.4)",
            path=path, qid=lacking[0],
        )
    return {qid: na_probs.get(qid, 1.0) for qid in by_id}


def _eval_dict(exact: Sequence[float], f1: Sequence[float]) -> dict[str, Any]:
    # make_eval_dict: sum() in the official order, so the floats are identical.
    total = len(exact)
    return {"exact": 100.0 * sum(exact) / total, "f1": 100.0 * sum(f1) / total, "total": total}


# --------------------------------------------------------------------------- command line


Run = Callable[[argparse.Namespace], EvalResult]


def without_gc(run: Run) -> Run:
    """Run a command with the cyclic garbage collector paused.

    Parsing a large JSON file allocates hundreds of thousands of dicts and
    lists, and the allocation count keeps triggering collections that walk
    them all again: about half of a bare ``json.load``'s time.  Benchmark
    files hold no reference cycles, so pausing collection for one command
    frees nothing later than it would have been freed anyway.
    """

    @functools.wraps(run)
    def paused(args: argparse.Namespace) -> EvalResult:
        with gc_paused():
            return run(args)

    return paused


@without_gc
def _run_squad1(args: argparse.Namespace) -> EvalResult:
    load_warnings: list[str] = []
    dataset = load_squad_dataset(args.dataset)
    predictions = load_prediction_map(args.predictions, strict=args.strict, warn=load_warnings.append)
    result = evaluate_squad_v1(dataset, predictions, strict=args.strict,
                               dataset_path=args.dataset, prediction_path=args.predictions)
    result.warnings[:0] = load_warnings
    return result


@without_gc
def _run_squad2(args: argparse.Namespace) -> EvalResult:
    load_warnings: list[str] = []
    dataset = load_squad_dataset(args.dataset)
    predictions = load_prediction_map(args.predictions, strict=args.strict, warn=load_warnings.append)
    na_probs = None
    if args.na_prob_file:
        na_probs = load_na_probs(args.na_prob_file, strict=args.strict, warn=load_warnings.append)
    result = evaluate_squad_v2(
        dataset, predictions, na_probs,
        na_prob_thresh=args.na_prob_thresh, missing_as_empty=args.missing_as_empty, strict=args.strict,
        dataset_path=args.dataset, prediction_path=args.predictions, na_prob_path=args.na_prob_file or "",
    )
    result.warnings[:0] = load_warnings
    if args.out_image_dir:
        result.warnings.append(f"note: --out-image-dir {args.out_image_dir} ignored: "
                               "precision-recall plots are not produced")
    if args.out_file:
        write_json(args.out_file, result.metrics)
    return result


_V2_EPILOG = """\
Scores are the official evaluate-v2.0.py's, unrounded (it does not round, so
--official-rounding changes nothing).  Every dataset question needs a
prediction: the official script crashes with KeyError otherwise, and so we
stop with an error naming the missing ids.  --missing-as-empty instead scores
a missing prediction as "" (an abstention); its no-answer probability is 0.0
without -n and 1.0 when the -n file lacks it too.  With -o the metrics are
also written to that file.
"""


def register(subparsers: Any) -> None:
    v1 = subparsers.add_parser(
        "squad1",
        help="SQuAD v1.1 exact match and F1 (evaluate-v1.1.py)",
        description="SQuAD v1.1 exact match and F1, identical to evaluate-v1.1.py. "
                    "The official script does not round, so --official-rounding changes nothing.",
    )
    v1.add_argument("dataset", metavar="DATASET.json", help="SQuAD v1.1 dataset file")
    v1.add_argument("predictions", metavar="PRED.json", help="predictions: {question id: answer string}")
    add_common_options(v1)
    v1.set_defaults(run=_run_squad1)

    v2 = subparsers.add_parser(
        "squad2",
        help="SQuAD v2.0 exact/F1 with no-answer breakdown (evaluate-v2.0.py)",
        description="SQuAD v2.0 metrics, identical to evaluate-v2.0.py.",
        epilog=_V2_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    v2.add_argument("dataset", metavar="DATASET.json", help="SQuAD v2.0 dataset file")
    v2.add_argument("predictions", metavar="PRED.json", help="predictions: {question id: answer, \"\" to abstain}")
    v2.add_argument("-n", "--na-prob-file", metavar="NA_PROB.json",
                    help="no-answer probabilities {question id: number}; adds best_* thresholds")
    v2.add_argument("-t", "--na-prob-thresh", type=float, default=1.0, metavar="THRESH",
                    help="abstain where the no-answer probability exceeds this (default 1.0)")
    v2.add_argument("-o", "--out-file", metavar="EVAL.json", help="also write the metrics to this file")
    v2.add_argument("-p", "--out-image-dir", metavar="DIR", help="accepted for compatibility; ignored")
    v2.add_argument("-v", "--verbose", action="store_true", help="accepted for compatibility; ignored")
    v2.add_argument("--missing-as-empty", action="store_true",
                    help="score a missing prediction as \"\" (an abstention) instead of failing")
    add_common_options(v2)
    v2.set_defaults(run=_run_squad2)
