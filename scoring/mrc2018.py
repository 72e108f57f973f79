"""The MRC2018 competition metric: ROUGE-L and BLEU-4 with yes/no and entity bonuses (spec 5).

``python -m scoring mrc2018 PRED.json REF.json [--alpha A] [--beta B]``
reproduces ``mrc_eval.py`` of the bonus scripts (Yang et al. 2018): it prints
``{"ROUGE-L": x, "BLEU-4": y}`` (x100, full precision; ``--official-rounding``
gives the official ``round(x, 2)``).  gamma is 1.2 as in the official script.

Faithfully reproduced (spec 5.1-5.5): strings are compared with every white
space character removed; BLEU-4 is corpus-level over character n-grams with
no smoothing and the closest-length brevity penalty; the yes/no bonus (which
takes precedence) and the entity bonus are added to both the numerator and
the denominator of the n-gram precisions, and to the LCS-based P and R of
ROUGE-L; reference questions without answers are skipped; a missing
prediction is the empty answer.

Where the official script crashes we stop with one line naming the cause:

* every candidate is shorter than 4 characters, or all are empty
  (ZeroDivisionError in ``BLEU.score``);
* a YES_NO reference with a predicted label has a different number of
  labels than answers (IndexError in the bonus code), named by question id;
* a repeated ``question_id``, a line that is not JSON, a missing
  ``question_id``/``answers`` (or ``source``/``question_type`` in the
  reference), no scorable reference question at all.

``--lic2019-guards`` switches to the LIC2019 script's well-defined rule for
the BLEU divisions (spec 5.7b): an order without candidate n-grams has
precision 0 and an all-empty candidate set has brevity factor 0, so BLEU-4
is 0 there instead of an error.  Nothing else of LIC2019 changes (its
punctuation mapping and output format are not applied).  ``--strict`` also
rejects missing predictions and predictions for unknown questions (otherwise
warnings).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.charmetrics import (
    MAX_ORDER,
    BleuStats,
    batch_clipped_matches,
    clipped_matches,
    closest_ref_len,
    guess_counts,
    is_string_list,
    lcs_length,
    mrc_bleu,
    strip_whitespace,
    sum_bleu_stats,
)
from scoring.cli import add_common_options
from scoring.dureader import gc_paused, iter_json_lines_official, prediction_coverage
from scoring.errors import InputFormatError, ScoringError, UndefinedMetricError
from scoring.result import EvalResult

GAMMA = 1.2


# --------------------------------------------------------------------------- reading


@dataclass(slots=True)
class Mrc2018Question:
    """One line of a prediction or reference file, normalised as ``read_file`` does (spec 5.1).

    ``answers`` and each reference entity are already stripped of white space.
    ``source`` and ``question_type`` are None for predictions.
    """

    qid: Any
    answers: list[str]
    yesno_answers: list[Any]
    entity_answers: list[list[str]]
    question_type: Any = None
    source: Any = None
    where: str = ""
    line: int | None = None


def question_from_line(obj: Any, *, where: str, line: int, reference: bool) -> Mrc2018Question:
    """``data_check`` and the key reads of ``read_file``, in the official order, with clear errors."""
    if not isinstance(obj, dict):
        raise InputFormatError(f"expected a JSON object, found {type(obj).__name__}", path=where, line=line)
    if "question_id" not in obj:
        raise InputFormatError("missing field 'question_id'", path=where, line=line)
    qid = obj["question_id"]
    if isinstance(qid, (list, dict)):
        raise InputFormatError("field 'question_id' should be a string or a number", path=where, line=line)
    yesno = obj.get("yesno_answers", [])
    if not isinstance(yesno, list):
        raise InputFormatError("field 'yesno_answers' should be a list", path=where, line=line, qid=str(qid))
    keys = ("source", "answers", "question_type") if reference else ("answers",)
    for key in keys:
        if key not in obj:
            raise InputFormatError(f"missing field {key!r}", path=where, line=line, qid=str(qid))
    answers = obj["answers"]
    if answers is None:
        answers = []  # normalize() returns a falsy value unchanged; both sides then treat it as "no answer"
    if not is_string_list(answers):
        raise InputFormatError("field 'answers' should be a list of strings", path=where, line=line, qid=str(qid))
    entities: list[list[str]] = []
    if reference:
        raw_entities = obj.get("entity_answers", [])
        if not isinstance(raw_entities, list) or not all(map(is_string_list, raw_entities)):
            raise InputFormatError("field 'entity_answers' should be a list of lists of strings",
                                   path=where, line=line, qid=str(qid))
        entities = [[strip_whitespace(e) for e in group] for group in raw_entities]
    return Mrc2018Question(
        qid,
        [strip_whitespace(a) for a in answers],
        yesno,
        entities,
        obj["question_type"] if reference else None,
        obj["source"] if reference else None,
        where,
        line,
    )


def questions_from_lines(rows: Iterable[tuple[str, int, Any]], *, reference: bool) -> dict[Any, Mrc2018Question]:
    out: dict[Any, Mrc2018Question] = {}
    for where, line, obj in rows:
        question = question_from_line(obj, where=where, line=line, reference=reference)
        if question.qid in out:
            raise InputFormatError(f"duplicate question_id (first on line {out[question.qid].line}); "
                                   "the official script stops here", path=where, line=line, qid=str(question.qid))
        out[question.qid] = question
    return out


def load_mrc2018(path: str | os.PathLike[str], *, reference: bool) -> dict[Any, Mrc2018Question]:
    """Load a prediction (``reference=False``) or reference file: JSON lines, or a .zip of them."""
    return questions_from_lines(iter_json_lines_official(path, in_band=False), reference=reference)


# --------------------------------------------------------------------------- one question


def rouge_l_with_bonus(cand: str, refs: Sequence[str], *, yn_label: Any = None, yn_refs: Sequence[Any] = (),
                       entities: Iterable[str] | None = None, alpha: float = 1.0, beta: float = 1.0,
                       gamma: float = GAMMA) -> float:
    """``RougeLWithBonus.add_inst`` (spec 5.5) for stripped strings; ``yn_refs`` has one label per ref."""
    entity_bonus = 0.0
    if yn_label is None and entities is not None:
        for entity in entities:
            if entity in cand:
                entity_bonus += len(entity)
    prec_max = rec_max = 0.0
    for i, ref in enumerate(refs):
        basic = float(lcs_length(cand, ref)) if cand and ref else 0.0
        yn_bonus = 0.0
        if yn_label is not None and yn_label == yn_refs[i]:
            yn_bonus = basic
        # The official operand order, so the floats round the same way.
        p_denom = len(cand) + alpha * yn_bonus + beta * entity_bonus
        r_denom = len(ref) + alpha * yn_bonus + beta * entity_bonus
        prec = (basic + alpha * yn_bonus + beta * entity_bonus) / p_denom if p_denom > 0.0 else 0.0
        rec = (basic + alpha * yn_bonus + beta * entity_bonus) / r_denom if r_denom > 0.0 else 0.0
        if i == 0 or prec > prec_max:
            prec_max = prec
        if i == 0 or rec > rec_max:
            rec_max = rec
    if prec_max != 0 and rec_max != 0:
        return ((1 + gamma**2) * prec_max * rec_max) / float(rec_max + gamma**2 * prec_max)
    return 0.0


def bleu_stats_with_bonus(cand: str, refs: Sequence[str], *, yn_label: Any = None, yn_refs: Sequence[Any] = (),
                          entities: Iterable[str] | None = None, alpha: float = 1.0,
                          beta: float = 1.0) -> BleuStats:
    """``BLEUWithBonus.add_inst`` (spec 5.4) as per-question statistics (bonus already weighted in)."""
    base = clipped_matches(cand, refs, MAX_ORDER)
    targets, weight, reuse = _bonus_targets(refs, yn_label, yn_refs, entities, alpha, beta)
    bonus = None if targets is None else base if reuse else clipped_matches(cand, targets, MAX_ORDER)
    return _compose(cand, refs, base, bonus, weight)


def _bonus_targets(refs: Sequence[str], yn_label: Any, yn_refs: Sequence[Any], entities: Iterable[str] | None,
                   alpha: float, beta: float) -> tuple[list[str] | None, float, bool]:
    """What the bonus n-grams are matched against, its weight, and whether that is just ``refs`` again."""
    if yn_label is not None:
        # Labelled n-grams ("gram_label") only match references carrying the predicted label.
        same = [refs[i] for i, label in enumerate(yn_refs) if label == yn_label]
        return same, alpha, len(same) == len(refs)
    if entities is not None:
        return list(entities), beta, False
    return None, 0.0, False


def _compose(cand: str, refs: Sequence[str], base: Sequence[int], bonus: Sequence[int] | None,
             weight: float) -> BleuStats:
    length = len(cand)
    correct: list[float] = list(base)
    guess: list[float] = list(guess_counts(length, MAX_ORDER))
    if bonus is not None:
        # The bonus goes into numerator and denominator alike (spec 5.4).
        for k in range(MAX_ORDER):
            correct[k] += weight * bonus[k]
            guess[k] += weight * bonus[k]
    return BleuStats(tuple(correct), tuple(guess), length, closest_ref_len(length, refs))


@dataclass(slots=True)
class _Scored:
    question: Mrc2018Question
    pred: Mrc2018Question | None
    cand: str
    yn_label: Any
    entities: set[str] | None
    targets: list[str] | None
    weight: float
    reuse: bool


# --------------------------------------------------------------------------- evaluation


def evaluate_mrc2018(
    predictions: Mapping[Any, Mrc2018Question],
    references: Mapping[Any, Mrc2018Question],
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    lic2019_guards: bool = False,
    strict: bool = False,
    pred_path: str = "predictions",
    ref_path: str = "references",
) -> EvalResult:
    """Score loaded files (see :func:`load_mrc2018`) as ``mrc_eval.py`` does.

    ``metrics`` is ``{"ROUGE-L": .., "BLEU-4": ..}`` x100, unrounded.  One
    per-example record per scored reference question: ``id``,
    ``question_type``, ``source``, ``missing``, ``bonus`` (``"yesno"``,
    ``"entity"`` or None), ``rouge_l`` and the BLEU statistics of
    :meth:`BleuStats.as_record` with the weighted bonus included, so that
    :func:`aggregate_records` gives the corpus values of any subset.
    """
    _check_weight("alpha", alpha)
    _check_weight("beta", beta)
    if not references:
        raise InputFormatError("the reference file has no question", path=ref_path)
    warnings = prediction_coverage(predictions, references, strict=strict, pred_path=pred_path, ref_path=ref_path)
    rows: list[_Scored] = []
    for q in references.values():
        if not q.answers:
            continue  # calc_metrics skips a reference without answers (spec 5.2)
        pred = predictions.get(q.qid)
        cand = pred.answers[0] if pred is not None and pred.answers else ""
        entities: set[str] | None = None
        yn_label: Any = None
        if q.question_type == "ENTITY":
            entities = {e for group in q.entity_answers for e in group} or None
        if q.question_type == "YES_NO" and pred is not None and pred.yesno_answers:
            yn_label = pred.yesno_answers[0]
        if yn_label is not None:
            _check_yesno(q, pred, yn_label, empty_cand=not cand)
        targets, weight, reuse = _bonus_targets(q.answers, yn_label, q.yesno_answers, entities, alpha, beta)
        rows.append(_Scored(q, pred, cand, yn_label, entities, targets, weight, reuse))
    # All n-gram matching (base and bonus) in one batch: it is most of the work.
    pairs: list[tuple[str, Sequence[str]]] = [(row.cand, row.question.answers) for row in rows]
    bonus_rows = [row for row in rows if row.targets is not None and not row.reuse]
    pairs.extend((row.cand, row.targets or []) for row in bonus_rows)
    matches = batch_clipped_matches(pairs, MAX_ORDER)
    bonus_of = {id(row): m for row, m in zip(bonus_rows, matches[len(rows):], strict=True)}
    records: list[dict[str, Any]] = []
    for row, base in zip(rows, matches, strict=False):
        q = row.question
        bonus = None if row.targets is None else base if row.reuse else bonus_of[id(row)]
        stats = _compose(row.cand, q.answers, base, bonus, row.weight)
        record: dict[str, Any] = {
            "id": q.qid, "question_type": q.question_type, "source": q.source, "missing": row.pred is None,
            "bonus": "yesno" if row.yn_label is not None else "entity" if row.entities is not None else None,
            "rouge_l": rouge_l_with_bonus(row.cand, q.answers, yn_label=row.yn_label, yn_refs=q.yesno_answers,
                                          entities=row.entities, alpha=alpha, beta=beta),
        }
        record.update(stats.as_record())
        records.append(record)
    if not records:
        raise UndefinedMetricError("no reference question has an answer, so there is nothing to score "
                                   "(the official script fails)", path=ref_path)
    metrics = aggregate_records(records, lic2019_guards=lic2019_guards)
    return EvalResult(metrics, records, warnings)


def _check_weight(name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise ScoringError(f"--{name} must be a finite number >= 0, got {value!r}")


def _check_yesno(q: Mrc2018Question, pred: Mrc2018Question | None, label: Any, *, empty_cand: bool) -> None:
    if len(q.yesno_answers) != len(q.answers):
        raise InputFormatError(
            f"this YES_NO reference has {len(q.answers)} answers but {len(q.yesno_answers)} yes/no labels; "
            "the yes/no bonus needs one label per answer (the official script fails with IndexError)",
            path=q.where, line=q.line, qid=str(q.qid))
    bad = [x for x in q.yesno_answers if not isinstance(x, str)]
    if bad:
        raise InputFormatError(f"yes/no label {bad[0]!r} should be a string", path=q.where, line=q.line,
                               qid=str(q.qid))
    if not isinstance(label, str) and not empty_cand and pred is not None:
        raise InputFormatError(f"predicted yes/no label {label!r} should be a string", path=pred.where,
                               line=pred.line, qid=str(q.qid))


# --------------------------------------------------------------------------- per-example helpers


def aggregate_records(records: Iterable[Mapping[str, Any]], *, lic2019_guards: bool = False) -> dict[str, float]:
    """``{"ROUGE-L", "BLEU-4"}`` (x100) of any subset of per-example records, without re-scoring.

    Raises :class:`UndefinedMetricError` where the official script would
    divide by zero (unless ``lic2019_guards``), and for an empty subset.
    """
    records = list(records)
    if not records:
        raise UndefinedMetricError("no question to score")
    totals = sum_bleu_stats(BleuStats.from_record(r) for r in records)
    rouge = math.fsum(r["rouge_l"] for r in records) / len(records)
    return {"ROUGE-L": rouge * 100, "BLEU-4": mrc_bleu(totals, lic2019_guards=lic2019_guards) * 100}


def breakdown_by_question_type(records: Iterable[Mapping[str, Any]], *,
                               lic2019_guards: bool = False) -> dict[str, dict[str, float]]:
    """``{question_type: {"ROUGE-L": .., "BLEU-4": ..}}`` (x100), in first-seen order.

    A value the official arithmetic cannot produce for that subset (e.g. no
    YES_NO candidate reaches 4 characters) is NaN here, so that one short
    type does not hide the others.
    """
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(str(record.get("question_type")), []).append(record)
    out: dict[str, dict[str, float]] = {}
    for qtype, group in groups.items():
        rouge = math.fsum(r["rouge_l"] for r in group) / len(group) * 100
        try:
            bleu = mrc_bleu(sum_bleu_stats(BleuStats.from_record(r) for r in group),
                            lic2019_guards=lic2019_guards) * 100
        except UndefinedMetricError:
            bleu = math.nan
        out[qtype] = {"ROUGE-L": rouge, "BLEU-4": bleu}
    return out


def official_rounding(metrics: Mapping[str, float]) -> dict[str, float]:
    return {name: round(value, 2) for name, value in metrics.items()}


# --------------------------------------------------------------------------- command line


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mrc2018",
        help="MRC2018 ROUGE-L / BLEU-4 with yes/no and entity bonuses (mrc_eval.py)",
        description="ROUGE-L and BLEU-4 with the bonuses of Yang et al. (2018), exactly as mrc_eval.py; "
                    "values x100 at full precision unless --official-rounding.",
    )
    parser.add_argument("pred_file", help="predictions: JSON lines (or a .zip of such files)")
    parser.add_argument("ref_file", help="references: JSON lines (or a .zip)")
    parser.add_argument("--alpha", type=float, default=1.0, help="weight of the yes/no bonus (default 1.0)")
    parser.add_argument("--beta", type=float, default=1.0, help="weight of the entity bonus (default 1.0)")
    parser.add_argument(
        "--lic2019-guards",
        action="store_true",
        help="where the official script divides by zero in BLEU, use the LIC2019 script's rule "
             "(precision 0 for an order without candidate n-grams, brevity 0 for empty candidates)",
    )
    add_common_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> EvalResult:
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> EvalResult:
    _check_weight("alpha", args.alpha)
    _check_weight("beta", args.beta)
    preds = load_mrc2018(args.pred_file, reference=False)
    refs = load_mrc2018(args.ref_file, reference=True)
    result = evaluate_mrc2018(preds, refs, alpha=args.alpha, beta=args.beta, lic2019_guards=args.lic2019_guards,
                              strict=args.strict, pred_path=args.pred_file, ref_path=args.ref_file)
    if args.official_rounding:
        result.metrics = official_rounding(result.metrics)
    return result
