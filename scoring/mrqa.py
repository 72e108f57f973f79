"""MRQA 2019 shared task (``mrqa_official_eval.py``, spec section 3) and its macro-average ranking.

Per file the numbers are the official script's: SQuAD v1.1 normalisation,
EM and F1 maximised over the plain ``answers`` strings (``detected_answers``
are ignored), a missing prediction scoring 0 (or, with ``--skip-no-answer``,
leaving the denominator).  The shared task ranked systems by the mean F1
over its datasets, each weighted equally: :func:`macro_average` and the
``mrqa-macro`` command.

Deliberate differences, all on inputs the official script crashes on or
never sees: a plain (not gzipped) JSON-lines file is accepted; blank lines
are skipped; a malformed line, a non-string answer or prediction, or a
scored question without any answer is an error naming the line or id.

:func:`strip_answers` writes the copy of a dataset that participants'
containers receive: only the fields a system needs (:mod:`scoring.inputs`).
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

from scoring.cli import add_common_options
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.io import Warn, iter_json_lines, load_prediction_map
from scoring.result import EvalResult, summarise
from scoring.squad import CachedScorer, prediction_text, without_gc

if TYPE_CHECKING:
    from scoring.cmrc2018 import Cmrc2018Scorer

# --------------------------------------------------------------------------- gold file


class MrqaQuestion(NamedTuple):
    """What the gold file says about one question id (its last occurrence, as the official dict keeps)."""

    answers: list[str]
    context_id: str | None
    dataset: str
    line: int


class MrqaGold(NamedTuple):
    """A loaded MRQA gold file: ``questions`` maps qid -> :class:`MrqaQuestion`.

    The mapping's order is that of each qid's first occurrence (Python dict
    semantics, which the official ``answers`` dict has too); its values come
    from the last occurrence (spec 3: a repeated qid overwrites the golds).
    A NamedTuple, not a dataclass: importing ``dataclasses`` costs every run
    start-up time for nothing a tuple lacks.
    """

    path: str
    dataset: str
    header: dict[str, Any] | None
    questions: dict[str, MrqaQuestion]
    warnings: list[str]

    @property
    def answers(self) -> dict[str, list[str]]:
        """qid -> gold answer strings: the official ``read_answers``."""
        return {qid: q.answers for qid, q in self.questions.items()}


def dataset_name_from_path(path: str) -> str:
    """``data/SQuAD.jsonl.gz`` -> ``SQuAD``: the name used when a file has no header."""
    name = os.path.basename(path)
    for suffix in (".gz", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or path


def _header_dataset(header: Any) -> str | None:
    inner = header.get("header") if isinstance(header, dict) else None
    name = inner.get("dataset") if isinstance(inner, dict) else None
    return name if isinstance(name, str) and name else None


def _iter_records(path: str) -> Iterator[tuple[int, Any, bool]]:
    """``(line, object, is_header)`` for each non-blank line.

    Only the first line may be a header, and only if it has a ``"header"`` key
    (spec 3); anything else must be a context line.
    """
    first = True
    for number, obj in iter_json_lines(path):
        is_header = first and isinstance(obj, dict) and "header" in obj
        first = False
        yield number, obj, is_header


def _context_qas(obj: Any, *, path: str, line: int) -> list[Any]:
    qas = obj.get("qas") if isinstance(obj, dict) else None
    if not isinstance(qas, list):
        what = "a header" if isinstance(obj, dict) and "header" in obj else type(obj).__name__
        raise InputFormatError(
            f"expected a context object with a 'qas' list (only the first line may be a header), found {what}",
            path=path, line=line,
        )
    return qas


def load_mrqa_gold(path: str | os.PathLike[str], *, strict: bool = False) -> MrqaGold:
    """Read an MRQA gold file (JSON lines, gzipped or not), as ``read_answers`` does.

    Every qa needs a string ``qid`` and an ``answers`` list of strings.  A
    qid seen again later overwrites the earlier golds (a warning), or, with
    ``strict``, is an error naming both lines.
    """
    name = os.fspath(path)
    header: dict[str, Any] | None = None
    dataset = dataset_name_from_path(name)
    questions: dict[str, MrqaQuestion] = {}
    repeated: list[str] = []
    for number, obj, is_header in _iter_records(name):
        if is_header:
            header = obj
            dataset = _header_dataset(obj) or dataset
            continue
        context_id = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(context_id, str):
            context_id = None
        for index, qa in enumerate(_context_qas(obj, path=name, line=number)):
            qid = qa.get("qid") if isinstance(qa, dict) else None
            if not isinstance(qid, str):
                raise InputFormatError(f"qas[{index}] should be an object with a string 'qid'",
                                       path=name, line=number)
            answers = qa.get("answers")
            if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                raise InputFormatError(f"qas[{index}]: 'answers' should be a list of strings",
                                       path=name, line=number, qid=qid)
            previous = questions.get(qid)
            if previous is not None:
                if strict:
                    raise InputFormatError(f"question id already seen on line {previous.line}",
                                           path=name, line=number, qid=qid)
                repeated.append(f"{qid!r} (lines {previous.line} and {number})")
            questions[qid] = MrqaQuestion(answers, context_id, dataset, number)
    warnings = []
    if repeated:
        listed = ", ".join(repeated[:5]) + (f" and {len(repeated) - 5} more" if len(repeated) > 5 else "")
        warnings.append(f"{name}: {len(repeated)} repeated question id(s): {listed}; "
                        "the last occurrence's answers are used, as the official script does")
    return MrqaGold(name, dataset, header, questions, warnings)


# --------------------------------------------------------------------------- evaluation


def evaluate_mrqa(
    gold: MrqaGold | Mapping[str, Sequence[str]],
    predictions: Mapping[str, Any],
    *,
    skip_no_answer: bool = False,
    dataset: str | None = None,
    prediction_path: str = "predictions",
    tokenization: str = "whitespace",
) -> EvalResult:
    """``evaluate`` of mrqa_official_eval.py (spec 3): ``{"exact_match", "f1"}`` x100.

    ``gold`` is a :class:`MrqaGold` or a plain ``{qid: [answer, ...]}``
    mapping; ``dataset`` labels the per-question records (default: the gold
    file's dataset name, or None for a plain mapping).

    ``tokenization="cjk"`` scores each question with CMRC 2018's EM and F1
    instead (:mod:`scoring.cmrc2018`: Chinese characters as tokens), for
    Chinese answers; everything else (missing predictions, the average) is
    MRQA's, which CMRC 2018's script does alike.
    """
    scorer: CachedScorer | Cmrc2018Scorer
    if tokenization == "cjk":
        # Compiled only when asked for: at start-up it costs an MRQA run as much as scoring 1,000 questions.
        from scoring.cmrc2018 import Cmrc2018Scorer  # noqa: PLC0415 - only the cjk tokenization needs it

        scorer = Cmrc2018Scorer()
    elif tokenization == "whitespace":
        scorer = CachedScorer()
    else:
        raise InputFormatError(f"unknown tokenization {tokenization!r}; use 'whitespace' (MRQA's) or 'cjk' "
                               "(CMRC 2018's, for Chinese)")
    label: str | None
    if isinstance(gold, MrqaGold):
        answers: Mapping[str, Sequence[str]] = gold.answers
        label = dataset or gold.dataset
        gold_path = gold.path
        warnings = list(gold.warnings)
    else:
        answers = gold
        label = dataset
        gold_path = "gold"
        warnings = []
        for qid, golds in answers.items():
            if isinstance(golds, str) or not all(isinstance(g, str) for g in golds):
                raise InputFormatError("the gold answers should be a list of strings", path=gold_path, qid=qid)
    answered = [predictions[qid] for qid in answers if qid in predictions]
    scorer.prime(chain(chain.from_iterable(answers.values()), (p for p in answered if isinstance(p, str))))
    exact_total = 0
    f1_total = 0.0
    total = 0
    unanswered: list[str] = []
    per_example: list[dict[str, Any]] = []
    for qid, golds in answers.items():
        if qid not in predictions:
            unanswered.append(qid)
            if skip_no_answer:
                per_example.append({"id": qid, "missing": True, "dataset": label})
            else:
                total += 1
                per_example.append({"id": qid, "exact_match": 0, "f1": 0.0, "missing": True, "dataset": label})
            continue
        if not golds:
            # The official max() over no answers raises ValueError.
            raise InputFormatError("the question has no gold answer to score against", path=gold_path, qid=qid)
        total += 1
        em, f1 = scorer.best_v1(prediction_text(predictions, qid, path=prediction_path), golds)
        exact_total += em
        f1_total += f1
        per_example.append({"id": qid, "exact_match": em, "f1": f1, "missing": False, "dataset": label})
    if total == 0:
        why = "every question lacks a prediction and --skip-no-answer is set" if answers else "it has no question"
        raise UndefinedMetricError(f"nothing to score: {why} (the official script divides by zero)",
                                   path=gold_path)
    if skip_no_answer:
        if unanswered:
            warnings.append(f"{len(unanswered)} question(s) without a prediction are left out "
                            f"(--skip-no-answer), e.g. {unanswered[0]!r}")
    else:
        warnings.extend(summarise([f"Unanswered question {qid} will receive score 0." for qid in unanswered],
                                  "unanswered questions (each scores 0)"))
    metrics = {"exact_match": 100.0 * exact_total / total, "f1": 100.0 * f1_total / total}
    return EvalResult(metrics, per_example, warnings)


def macro_average(per_dataset: Mapping[str, Mapping[str, float]], metric: str = "f1") -> float:
    """The MRQA 2019 ranking score: the mean of ``metric`` over datasets, each weighted equally."""
    if not per_dataset:
        raise UndefinedMetricError(f"macro-average {metric}: there is no dataset to average over")
    values = []
    for name, scores in per_dataset.items():
        if metric not in scores:
            raise InputFormatError(f"macro-average {metric}: dataset {name!r} has no {metric!r} score")
        value = scores[metric]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            found = "null (a failed run?)" if value is None else f"a {type(value).__name__}"
            raise InputFormatError(f"macro-average {metric}: dataset {name!r} has a {metric!r} score that is "
                                   f"{found}, not a number")
        values.append(float(value))
    return sum(values) / len(values)


def evaluate_mrqa_macro(
    pairs: Sequence[tuple[MrqaGold, Mapping[str, Any]]],
    *,
    skip_no_answer: bool = False,
    prediction_paths: Sequence[str] | None = None,
) -> EvalResult:
    """Score several (gold, predictions) pairs and macro-average EM and F1 over their datasets."""
    per_dataset: dict[str, dict[str, float]] = {}
    per_example: list[dict[str, Any]] = []
    warnings: list[str] = []
    for index, (gold, predictions) in enumerate(pairs):
        if gold.dataset in per_dataset:
            raise InputFormatError(
                f"dataset name {gold.dataset!r} is used by two files; each dataset is weighted once, "
                "so give the files distinct headers or names",
                path=gold.path,
            )
        pred_path = prediction_paths[index] if prediction_paths else "predictions"
        result = evaluate_mrqa(gold, predictions, skip_no_answer=skip_no_answer, prediction_path=pred_path)
        per_dataset[gold.dataset] = result.metrics
        per_example.extend(result.per_example)
        warnings.extend(result.warnings)
    metrics: dict[str, Any] = {
        "macro_average": {
            "exact_match": macro_average(per_dataset, "exact_match"),
            "f1": macro_average(per_dataset, "f1"),
        },
        "datasets": per_dataset,
    }
    return EvalResult(metrics, per_example, warnings)


# --------------------------------------------------------------------------- hiding the answers

def iter_stripped_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of an MRQA file as participants' systems read them: only the fields they need.

    The header keeps ``dataset`` and ``split``; contexts ``id``, ``context``
    and ``context_tokens``; questions ``qid``, ``question`` and
    ``question_tokens``, in their order.  Every other field, answers and spans
    and anything a converter added, is left out (see :mod:`scoring.inputs`).
    """
    # The platform's input stripping is no part of scoring a run; its module (and hashlib, hmac) waits.
    from scoring.inputs import iter_input_lines  # noqa: PLC0415 - only stripping needs it

    return iter_input_lines("mrqa", path)


def strip_answers(path_in: str | os.PathLike[str], path_out: str | os.PathLike[str]) -> int:
    """Write ``path_in`` without its answers to ``path_out`` (gzipped if it ends in ``.gz``).

    Returns the number of lines written.  The gzip header carries no time
    stamp, so the same input always gives the same bytes.
    """
    out = os.fspath(path_out)
    lines = list(iter_stripped_lines(path_in))  # fully validated before anything is written
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    if out.endswith(".gz"):
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz:
            gz.write(data)
        data = buffer.getvalue()
    tmp = f"{out}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, out)
    return len(lines)


# --------------------------------------------------------------------------- command line


def _load_pair(dataset: str, predictions: str, *, strict: bool) -> tuple[MrqaGold, dict[str, Any], list[str]]:
    gold = load_mrqa_gold(dataset, strict=strict)
    warnings: list[str] = []
    warn: Warn = warnings.append
    return gold, load_prediction_map(predictions, strict=strict, warn=warn), warnings


@without_gc
def _run_mrqa(args: argparse.Namespace) -> EvalResult:
    gold, predictions, load_warnings = _load_pair(args.dataset, args.predictions, strict=args.strict)
    result = evaluate_mrqa(gold, predictions, skip_no_answer=args.skip_no_answer,
                           prediction_path=args.predictions, tokenization=args.tokenization)
    result.warnings[:0] = load_warnings
    return result


@without_gc
def _run_mrqa_macro(args: argparse.Namespace) -> EvalResult:
    files: list[str] = args.files
    if len(files) % 2:
        raise InputFormatError(
            f"expected DATASET PRED pairs, got an odd number of files ({len(files)}); "
            f"{files[-1]!r} has no partner"
        )
    pairs = []
    load_warnings: list[str] = []
    for dataset, predictions in zip(files[::2], files[1::2], strict=True):
        gold, preds, warnings = _load_pair(dataset, predictions, strict=args.strict)
        pairs.append((gold, preds))
        load_warnings.extend(warnings)
    result = evaluate_mrqa_macro(pairs, skip_no_answer=args.skip_no_answer, prediction_paths=files[1::2])
    result.warnings[:0] = load_warnings
    return result


_MACRO_EPILOG = """\
Each DATASET is scored against the PRED file that follows it, exactly as
mrqa_official_eval.py would; the output lists every dataset's exact_match and
f1 under "datasets" (named by the header's "dataset" field, else the file
name without .jsonl.gz) and their unweighted means under "macro_average":
the MRQA 2019 ranking score is macro_average.f1.

example:
  python -m scoring mrqa-macro first.jsonl.gz first_pred.json second.jsonl.gz second_pred.json
"""


def register(subparsers: Any) -> None:
    single = subparsers.add_parser(
        "mrqa",
        help="MRQA 2019 exact match and F1 (mrqa_official_eval.py)",
        description="MRQA 2019 exact match and F1 for one dataset, identical to mrqa_official_eval.py. "
                    "The official script does not round, so --official-rounding changes nothing.",
    )
    single.add_argument("dataset", metavar="DATASET.jsonl.gz", help="MRQA gold file (JSON lines, gzipped or not)")
    single.add_argument("predictions", metavar="PRED.json", help="predictions: {qid: answer string}")
    single.add_argument("--skip-no-answer", action="store_true",
                        help="leave questions without a prediction out of the denominator")
    single.add_argument("--tokenization", choices=("whitespace", "cjk"), default="whitespace",
                        help="whitespace: the official MRQA EM/F1 (default); cjk: CMRC 2018's EM/F1 for "
                             "Chinese answers (characters as tokens; see python -m scoring cmrc2018 --help)")
    add_common_options(single)
    single.set_defaults(run=_run_mrqa)

    macro = subparsers.add_parser(
        "mrqa-macro",
        help="MRQA 2019 ranking: per-dataset EM/F1 and their macro-average",
        description="Score several MRQA datasets and average their EM and F1, each dataset weighted equally.",
        epilog=_MACRO_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    macro.add_argument("files", nargs="+", metavar="DATASET.jsonl.gz PRED.json",
                       help="pairs: a gold file, then the predictions for it")
    macro.add_argument("--skip-no-answer", action="store_true",
                       help="leave questions without a prediction out of each denominator")
    add_common_options(macro)
    macro.set_defaults(run=_run_mrqa_macro)
