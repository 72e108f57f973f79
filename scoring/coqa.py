"""CoQA (``evaluate-v1.0.py``), spec section 7: EM and F1 by source, in-domain, out-of-domain, overall.

The official script rounds every number to one decimal; we report full
precision unless asked for ``official_rounding`` (``--official-rounding``),
which rounds exactly as it does (``round(x, 1)``).  Reproduced on purpose:

* each turn's golds are the main answer then each ``additional_answers`` list
  in the file's order; with more than one gold, a turn scores the mean over
  the n leave-one-out subsets of the max EM / F1 against the other n-1 golds
  (spec 7.2), for model predictions as for ``--human``;
* normalisation and F1 are SQuAD v2.0's: a pair of empty answers scores 1;
* a missing prediction scores 0 but still counts (spec 7.3); sums run over
  turns in the gold file's order, bucket by bucket, as the official ones.

Where the official script crashes or misbehaves we stop with an error that
names the story and turn instead: a source outside the seven known ones
(``KeyError``), an ``answers`` list shorter than ``questions``
(``IndexError``), ``--human`` on a turn with a single gold (it exits).  A story
without ``additional_answers`` (the official ``KeyError``; e.g. the training
set) is scored against its main answers only.  An empty dataset is an error
rather than a page of zeros.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from scoring.cli import add_common_options, write_json
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.io import Warn, _ignore, gc_paused, load_json
from scoring.result import EvalResult, summarise
from scoring.text import TokenBag

IN_DOMAIN = ("mctest", "gutenberg", "race", "cnn", "wikipedia")
OUT_DOMAIN = ("reddit", "science")
# evaluate-v1.0.py:16-18: the output names each source bucket by its domain.
DOMAIN_NAMES = {
    "mctest": "children_stories", "gutenberg": "literature", "race": "mid-high_school", "cnn": "news",
    "wikipedia": "wikipedia", "science": "science", "reddit": "reddit",
}

TurnKey = tuple[Hashable, Hashable]  # (story id, turn id), the official dict key


class CoqaGold(NamedTuple):
    """What ``gold_answers_to_dict`` builds (spec 7.1), plus its notices."""

    turns: dict[TurnKey, list[str]]  # (story id, turn id) -> golds, in file order
    sources: dict[Hashable, str]  # story id -> source; a repeated story id keeps the last
    warnings: list[str]
    path: str = "dataset"


# --------------------------------------------------------------------------- gold file


def load_coqa_dataset(path: str | os.PathLike[str], *, strict: bool = False) -> CoqaGold:
    """Load and check a CoQA data file (``{"version", "data": [story, ...]}``)."""
    name = os.fspath(path)
    return coqa_gold(load_json(name), path=name, strict=strict)


def coqa_gold(dataset: Any, *, path: str = "dataset", strict: bool = False) -> CoqaGold:
    """The gold answers of an already-loaded CoQA file, checked (spec 7.1).

    Turn ids that do not follow the question index, or differ between a
    question and its answers, are reported as warnings, as the official
    script does; a repeated (story, turn) keeps its last golds, with a warning
    (an error with ``strict``).  Every story with questions needs a known
    ``source``.
    """
    stories = dataset.get("data") if isinstance(dataset, dict) else None
    if not isinstance(stories, list):
        raise InputFormatError("expected a CoQA data file: a JSON object with a 'data' list of stories",
                               path=path)
    turns: dict[TurnKey, list[str]] = {}
    sources: dict[Hashable, str] = {}
    notices: list[str] = []
    repeated: list[TurnKey] = []
    for s, story in enumerate(stories):
        story_id, source, keyed = _story(story, s, path, notices)
        sources[story_id] = source
        for key, golds in keyed:
            if key in turns:
                repeated.append(key)
                if strict:
                    raise InputFormatError(f"story {key[0]!r} turn {key[1]!r} appears more than once",
                                           path=path)
            turns[key] = golds
    if not turns:
        raise InputFormatError("the dataset has no questions", path=path)
    for story_id in dict.fromkeys(key[0] for key in turns):
        if sources[story_id] not in DOMAIN_NAMES:
            raise InputFormatError(
                f"story {story_id!r} has source {sources[story_id]!r}; CoQA sources are "
                f"{', '.join(IN_DOMAIN + OUT_DOMAIN)} (the official script fails with KeyError)",
                path=path,
            )
    warnings = summarise(notices, "turn id notices")
    if repeated:
        shown = ", ".join(f"{k[0]!r} turn {k[1]!r}" for k in repeated[:5])
        warnings.append(f"{path}: {len(repeated)} (story, turn) pair(s) appear more than once ({shown}); "
                        "the last one's answers are used, as the official script does")
    return CoqaGold(turns, sources, warnings, path)


class CoqaGoldFile(NamedTuple):
    """A CoQA gold file read by :func:`load_coqa_gold`: the document and its gold answers."""

    document: dict[str, Any]
    gold: CoqaGold


def load_coqa_gold(path: str | os.PathLike[str]) -> CoqaGoldFile:
    """A CoQA gold file checked as a leaderboard needs it: :func:`coqa_gold` strictly (no
    (story, turn) twice), and every question has its text (``input_text``); errors name the
    question by :func:`scoring.inputs.coqa_qid`."""
    # Only the platform's gold check names questions this way; a scoring run need not compile inputs.py.
    from scoring.inputs import coqa_qid  # noqa: PLC0415 - only the leaderboard's gold check needs it

    name = os.fspath(path)
    document = load_json(name)
    gold = coqa_gold(document, path=name, strict=True)
    for s, story in enumerate(document["data"]):
        for i, question in enumerate(story["questions"]):
            if not isinstance(question.get("input_text"), str):
                raise InputFormatError(
                    f"data[{s}] (story {story['id']!r}): questions[{i}] should have a string 'input_text'",
                    path=name, qid=coqa_qid(story["id"], question["turn_id"]),
                )
    return CoqaGoldFile(document, gold)


def _story(
    story: Any, s: int, path: str, notices: list[str]
) -> tuple[Hashable, str, list[tuple[TurnKey, list[str]]]]:
    """One story's id, source and ``((story id, turn id), golds)`` pairs, checked."""
    where = f"data[{s}]"
    if not isinstance(story, dict):
        raise InputFormatError(f"{where} should be a story object, found {type(story).__name__}", path=path)
    story_id = story.get("id")
    if not isinstance(story_id, str):
        raise InputFormatError(f"{where} should have a string 'id'", path=path)
    where = f"{where} (story {story_id!r})"
    source = story.get("source")
    if not isinstance(source, str):
        raise InputFormatError(f"{where} should have a string 'source'", path=path)
    questions = story.get("questions")
    answers = story.get("answers")
    extra = story.get("additional_answers", {})
    if not isinstance(questions, list) or not isinstance(answers, list):
        raise InputFormatError(f"{where} should have 'questions' and 'answers' lists", path=path)
    if not isinstance(extra, dict) or not all(isinstance(v, list) for v in extra.values()):
        raise InputFormatError(f"{where}: 'additional_answers' should be an object of answer lists",
                               path=path)
    answer_lists: list[tuple[str, list[Any]]] = [("answers", answers)]
    answer_lists += [(f"additional_answers[{k!r}]", v) for k, v in extra.items()]
    for label, answer_list in answer_lists:
        if len(answer_list) < len(questions):
            raise InputFormatError(
                f"{where}: {label} has {len(answer_list)} entries for {len(questions)} questions "
                "(the official script fails with IndexError)",
                path=path,
            )
    keyed: list[tuple[TurnKey, list[str]]] = []
    for i, qa in enumerate(questions):
        turn_id = qa.get("turn_id") if isinstance(qa, dict) else None
        if turn_id is None or isinstance(turn_id, (list, dict)):
            raise InputFormatError(f"{where}: questions[{i}] should have a 'turn_id' number", path=path)
        if i + 1 != turn_id:
            notices.append(f"{path}: story {story_id!r}: questions[{i}] has turn_id {turn_id!r}, "
                           f"expected {i + 1} (the official script warns and keys the turn by it)")
        golds: list[str] = []
        for label, answer_list in answer_lists:
            answer = answer_list[i]
            text = answer.get("input_text") if isinstance(answer, dict) else None
            if not isinstance(text, str):
                raise InputFormatError(
                    f"{where}: {label}[{i}] should be an object with a string 'input_text'", path=path
                )
            if answer.get("turn_id") != turn_id:
                notices.append(f"{path}: story {story_id!r}: {label}[{i}] has turn_id "
                               f"{answer.get('turn_id')!r} but its question has {turn_id!r}")
            golds.append(text)
        keyed.append(((story_id, turn_id), golds))
    return story_id, source, keyed


# --------------------------------------------------------------------------- predictions


def load_coqa_predictions(
    path: str | os.PathLike[str], *, strict: bool = False, warn: Warn = _ignore
) -> dict[TurnKey, str]:
    """Load a CoQA prediction file: a JSON list of ``{"id", "turn_id", "answer"}``."""
    name = os.fspath(path)
    return coqa_predictions(load_json(name), path=name, strict=strict, warn=warn)


def coqa_predictions(
    predictions: Any, *, path: str = "predictions", strict: bool = False, warn: Warn = _ignore
) -> dict[TurnKey, str]:
    """``preds_to_dict`` (spec 7.1): ``(id, turn_id) -> answer``; a repeated pair keeps the last answer."""
    if not isinstance(predictions, list):
        raise InputFormatError(
            "expected a JSON list of {\"id\", \"turn_id\", \"answer\"} objects, "
            f"found {type(predictions).__name__}",
            path=path,
        )
    out: dict[TurnKey, str] = {}
    repeated: list[TurnKey] = []
    for n, pred in enumerate(predictions):
        try:
            key: TurnKey = (pred["id"], pred["turn_id"])
            answer = pred["answer"]
            hash(key)
        except (TypeError, KeyError):
            raise _prediction_error(pred, n, path) from None
        if type(answer) is not str:
            raise _prediction_error(pred, n, path)
        if key in out:
            if strict:
                raise InputFormatError(
                    f"entry {n}: story {key[0]!r} turn {key[1]!r} is predicted more than once", path=path
                )
            repeated.append(key)
        out[key] = answer
    if repeated:
        shown = ", ".join(f"{k[0]!r} turn {k[1]!r}" for k in repeated[:5])
        warn(f"{path}: {len(repeated)} (id, turn_id) pair(s) predicted more than once ({shown}); "
             "the last answer is used")
    return out


def _prediction_error(pred: Any, n: int, path: str) -> InputFormatError:
    """What is wrong with prediction entry ``n``."""
    where = f"entry {n}"
    if not isinstance(pred, dict):
        return InputFormatError(f"{where} should be an object with 'id', 'turn_id' and 'answer', "
                                f"found {type(pred).__name__}", path=path)
    for field in ("id", "turn_id", "answer"):
        if field not in pred:
            return InputFormatError(f"{where} has no {field!r} field", path=path)
    for field in ("id", "turn_id"):
        if isinstance(pred[field], (list, dict)):
            return InputFormatError(f"{where}: {field!r} should be a string or a number, "
                                    f"found {type(pred[field]).__name__}", path=path)
    return InputFormatError(
        f"{where} (story {pred['id']!r} turn {pred['turn_id']!r}): 'answer' should be a string, "
        f"found {type(pred['answer']).__name__}",
        path=path,
    )


# --------------------------------------------------------------------------- scoring


def _turn_score(pred: TokenBag, golds: list[TokenBag]) -> tuple[float, float]:
    """``_compute_turn_score`` (spec 7.2): leave-one-out mean of max EM / max F1 when n > 1."""
    ems = [1 if pred.tokens == gold.tokens else 0 for gold in golds]  # equal normal forms
    f1s = [pred.f1_v2(gold) for gold in golds]
    n = len(golds)
    if n == 1:
        return 0.0 + ems[0], 0.0 + f1s[0]
    return _leave_one_out(ems, n), _leave_one_out(f1s, n)


def _leave_one_out(scores: Sequence[float], n: int) -> float:
    # Sum over i of the max over the others, in i order as the official loop:
    # leaving out the (first) best leaves the second best, any other the best.
    top = max(scores)
    k = scores.index(top)
    second = max(scores[j] for j in range(n) if j != k)
    total = 0.0
    for i in range(n):
        total += second if i == k else top
    return total / n


def _human_score(golds: list[TokenBag]) -> tuple[float, float]:
    """``get_raw_scores_human`` (spec 7.3): each gold against the others, once per pair."""
    n = len(golds)
    em_best = [0] * n
    f1_best = [0.0] * n
    for i in range(n - 1):
        for j in range(i + 1, n):
            em = 1 if golds[i].tokens == golds[j].tokens else 0
            f1 = golds[i].f1_v2(golds[j])  # symmetric
            em_best[i] = max(em_best[i], em)
            em_best[j] = max(em_best[j], em)
            f1_best[i] = max(f1_best[i], f1)
            f1_best[j] = max(f1_best[j], f1)
    em_sum = 0.0
    f1_sum = 0.0
    for i in range(n):
        em_sum += em_best[i]
        f1_sum += f1_best[i]
    return em_sum / n, f1_sum / n


def evaluate_coqa(
    gold: CoqaGold | Mapping[str, Any],
    predictions: Mapping[TurnKey, str] | Sequence[Any],
    *,
    official_rounding: bool = False,
) -> EvalResult:
    """``model_performance`` of evaluate-v1.0.py (spec 7): EM/F1 x100 by domain.

    ``gold`` comes from :func:`load_coqa_dataset` (or is the loaded JSON),
    ``predictions`` from :func:`load_coqa_predictions` (or is the loaded
    list).  Per-example records, in gold order: ``id`` (the story id),
    ``turn_id``, ``source``, ``em``, ``f1`` (in [0, 1]) and ``missing``.
    """
    if not isinstance(gold, CoqaGold):
        gold = coqa_gold(gold)
    if not isinstance(predictions, Mapping):
        predictions = coqa_predictions(predictions)
    with gc_paused():
        texts = [text for golds in gold.turns.values() for text in golds]
        texts += [predictions[key] for key in gold.turns if key in predictions]
        bags = TokenBag.by_text(texts)
        records: list[dict[str, Any]] = []
        missing: list[str] = []
        for key, golds in gold.turns.items():
            story_id, turn_id = key
            answer = predictions.get(key)
            if answer is None:
                missing.append(f"Missing prediction for {story_id} and turn_id: {turn_id}")
                em, f1 = 0.0, 0.0
            else:
                em, f1 = _turn_score(bags[answer], [bags[g] for g in golds])
            records.append({"id": story_id, "turn_id": turn_id, "source": gold.sources[story_id],
                            "em": em, "f1": f1, "missing": answer is None})
    unused = len(predictions) - (len(gold.turns) - len(missing))
    warnings = list(gold.warnings) + summarise(missing, "missing predictions (each scores 0)")
    if unused:
        warnings.append(f"{unused} prediction(s) match no (story id, turn id) of the dataset and are ignored "
                        "(turn ids must have the same JSON type as in the dataset)")
    return EvalResult(_domain_scores(records, official_rounding), records, warnings)


def evaluate_coqa_human(gold: CoqaGold | Mapping[str, Any], *, official_rounding: bool = False) -> EvalResult:
    """``human_performance`` of evaluate-v1.0.py (``--human``, spec 7.3).

    Needs at least two golds per turn; the official script exits at the first
    turn with one, and so do we, naming it.
    """
    if not isinstance(gold, CoqaGold):
        gold = coqa_gold(gold)
    with gc_paused():
        bags = TokenBag.by_text([text for golds in gold.turns.values() for text in golds])
        records: list[dict[str, Any]] = []
        for (story_id, turn_id), golds in gold.turns.items():
            if len(golds) < 2:
                raise UndefinedMetricError(
                    f"story {story_id!r} turn {turn_id!r} has a single gold answer; human performance scores "
                    "each gold against the others, so every turn needs at least two "
                    "(the official script exits here)",
                    path=gold.path,
                )
            em, f1 = _human_score([bags[g] for g in golds])
            records.append({"id": story_id, "turn_id": turn_id, "source": gold.sources[story_id],
                            "em": em, "f1": f1, "missing": False})
    return EvalResult(_domain_scores(records, official_rounding), records, list(gold.warnings))


def _domain_scores(records: Sequence[dict[str, Any]], official_rounding: bool) -> dict[str, Any]:
    """``get_domain_scores`` (evaluate-v1.0.py:172-222), sums in the official order."""
    totals: dict[str, list[Any]] = {source: [0, 0, 0] for source in IN_DOMAIN + OUT_DOMAIN}
    for record in records:
        bucket = totals[record["source"]]
        bucket[0] += record["em"]
        bucket[1] += record["f1"]
        bucket[2] += 1

    def cell(em_total: float, f1_total: float, turns: int) -> dict[str, Any]:
        em = em_total / max(1, turns) * 100
        f1 = f1_total / max(1, turns) * 100
        if official_rounding:
            em, f1 = round(em, 1), round(f1, 1)
        return {"em": em, "f1": f1, "turns": turns}

    scores: dict[str, Any] = {}
    domain_totals: list[list[Any]] = []
    for group in (IN_DOMAIN, OUT_DOMAIN):
        group_total: list[Any] = [0.0, 0.0, 0]
        for source in group:
            em_total, f1_total, turns = totals[source]
            scores[DOMAIN_NAMES[source]] = cell(em_total, f1_total, turns)
            group_total[0] += em_total
            group_total[1] += f1_total
            group_total[2] += turns
        domain_totals.append(group_total)
    (in_em, in_f1, in_turns), (out_em, out_f1, out_turns) = domain_totals
    scores["in_domain"] = cell(in_em, in_f1, in_turns)
    scores["out_domain"] = cell(out_em, out_f1, out_turns)
    scores["overall"] = cell(in_em + out_em, in_f1 + out_f1, in_turns + out_turns)
    return scores


# --------------------------------------------------------------------------- command line


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "coqa",
        help="CoQA (evaluate-v1.0.py): EM and F1 by domain, in-domain, out-of-domain, overall",
        description="CoQA's official evaluate-v1.0.py, same arguments and numbers (spec 7), at full "
                    "precision unless --official-rounding (one decimal, as the official script).",
    )
    parser.add_argument("--data-file", dest="data_file", required=True, help="the CoQA data file")
    parser.add_argument("--pred-file", dest="pred_file",
                        help="predictions: a JSON list of {id, turn_id, answer}")
    parser.add_argument("--out-file", "-o", metavar="eval.json", help="also write the metrics JSON here")
    parser.add_argument("--verbose", "-v", action="store_true", help="accepted for compatibility; ignored")
    parser.add_argument("--human", action="store_true",
                        help="human performance: each gold answer scored against the others (no predictions)")
    add_common_options(parser)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> EvalResult:
    if args.human == bool(args.pred_file):
        # The official script prints two JSON documents for both, and nothing for neither.
        raise InputFormatError("give either --pred-file (model performance) or --human (human performance)")
    with gc_paused():
        gold = load_coqa_dataset(args.data_file, strict=args.strict)
        if args.human:
            result = evaluate_coqa_human(gold, official_rounding=args.official_rounding)
        else:
            load_warnings: list[str] = []
            predictions = load_coqa_predictions(args.pred_file, strict=args.strict, warn=load_warnings.append)
            result = evaluate_coqa(gold, predictions, official_rounding=args.official_rounding)
            result.warnings[:0] = load_warnings
    if args.out_file:
        write_json(args.out_file, result.metrics)
    return result
