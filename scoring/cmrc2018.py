"""CMRC 2018 (``cmrc2018_evaluate.py`` of ymcui/cmrc2018, v6), and Chinese answers in MRQA-format files.

What the official script computes (v6, ``baseline/cmrc2018_evaluate.py``: "compatible for both original
and SQuAD-style CMRC 2018 datasets, support python3"):

* Input.  The dataset is SQuAD-style (``{"data": [{"paragraphs": [{"qas": [...]}]}]}``) or the original
  CMRC 2018 list of ``{"context_id", "context_text", "qas"}``; a qa's id is ``id``, else ``query_id``
  (never stripped); its answers are ``[{"text": ...}]`` or plain strings.  Predictions ``{qid: answer}``;
  ``str()`` is applied to the prediction and to each answer.
* Punctuation: the script's list ``- : _ * ^ / \\ ~ ` + =  ， 。 ： ？ ！ “ ” ； ’ 《 》 …… · 、 「 」 （ ） － ～ 『 』``.
  It is tested one character at a time, so the two-character entry ``……`` never matches and ``…`` is kept;
  ASCII ``. , ! ? ' " ( )`` and ``‘`` are not on the list either.
* EM (``calc_em_score``): ``lower()``, ``strip()``, then every listed punctuation character deleted; 1 if
  the prediction equals some answer so, else 0.  Inner white space counts (``"北京 。"`` is not ``"北京"``).
* Tokens (``mixed_segmentation(s, rm_punc=True)``): the same ``lower().strip()`` and deletion, then every
  character in U+4E00..U+9FA5 is a token and each run of other characters goes to NLTK's ``word_tokenize``
  (Hangul, kana, CJK Extension A and U+9FA6..U+9FFF included: Korean is tokenised into NLTK words).  A
  deleted character does not end a run, so ``"a-b"`` is the one token ``"ab"``.
* F1 (``calc_f1_score``): ``lcs`` = the length of the longest common *substring* (contiguous) of the two
  token lists; 0 if it is 0, else P = lcs/|pred|, R = lcs/|answer|, F1 = 2PR/(P+R).  An empty or
  punctuation-only side scores F1 0 (while its EM may be 1).
* Several answers: the max of F1 and the max of EM, separately.
* Aggregation: every qa occurrence counts in TOTAL; one without a prediction is written to stderr
  ("Unanswered question: ID"), counted in SKIP and scores 0.  F1 and EM are ``100 * sum / TOTAL`` in file
  order, AVERAGE = (EM + F1) / 2.  The output is ``{"AVERAGE", "F1", "EM", "TOTAL", "SKIP", "FILE"}`` with
  the three scores formatted ``'%.3f'`` (strings) and FILE the prediction path as given.

Ours prints the scores as numbers at full precision; ``--official-rounding`` prints the official strings.

What differs from the official script, and why:

1. **Sentence split.**  ``word_tokenize(run)`` first splits ``run`` into sentences with NLTK's Punkt model,
   whose data (``punkt``/``punkt_tab``) is a separate download that this machine, and the platform's
   workers, cannot fetch.  We tokenise each run as one sentence with NLTK's own ``NLTKWordTokenizer`` (what
   ``word_tokenize`` runs on each sentence, i.e. ``word_tokenize(run, preserve_line=True)``).  The tokens
   differ only where Punkt ends a sentence *inside* a run at a word ending in ``.``: the official splits
   the period off (``"mr. smith went. he left"`` -> ``mr. smith went . he left``), we keep it on the word
   (``mr. smith went. he left``).  A period at the end of a run is split off by both; ``?`` and ``!`` always
   are; runs without such a period (nearly every extractive answer) tokenise identically.
2. **NLTK version.**  The numbers equal the official script run with the NLTK pinned in requirements.txt
   (3.10.4).  The 2018 releases' ``word_tokenize`` used an older Treebank tokenizer that treats some
   quotes and punctuation differently.
3. **Where the official script crashes** we stop with one line naming the cause: no question at all
   (ZeroDivisionError), a question with a prediction but no answer (``max()`` of an empty list), an answer
   object without ``text``, a qa without ``id``/``query_id``, a dataset of the wrong shape.  An ``answers``
   that is not a list is refused too, although the official takes a string's characters (or an object's
   keys) as separate answers.
4. **Non-string values** (a prediction or answer that is a number, null...) are ``str()``-ed as the
   official does, with a warning; ``--strict`` refuses them, as it refuses repeated prediction keys.  A
   qa id that is not a string can never match a prediction key (JSON keys are strings): it is unanswered,
   as in the official, and warned about.
5. Files may be gzipped; a UTF-8 byte-order mark is tolerated.

The same EM/F1 score MRQA-format files whose answers are Chinese: ``evaluate_mrqa(...,
tokenization="cjk")`` (``python -m scoring mrqa --tokenization cjk``, and the MRQA suite's
``suite_options: {tokenization: cjk}``), with MRQA's own aggregation, which counts an unanswered question 0
in the denominator just as this script does.  :func:`cjk_share` tells when a gold file needs it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from scoring.cli import add_common_options
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.io import gc_paused, json_type, load_json, load_prediction_map
from scoring.result import EvalResult, summarise

# The official ``sp_char`` list, in its order.  ``……`` is one entry of two characters: the script tests
# ``char in sp_char`` one character at a time, so it never matches, and neither does a single ``…``.
OFFICIAL_PUNCTUATION: tuple[str, ...] = (
    "-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=",
    "，", "。", "：", "？", "！", "“", "”", "；", "’", "《", "》", "……", "·", "、",
    "「", "」", "（", "）", "－", "～", "『", "』",
)
_DELETE = str.maketrans("", "", "".join(p for p in OFFICIAL_PUNCTUATION if len(p) == 1))
# The official ``re.search(r'[\u4e00-\u9fa5]', char)``: the characters that are tokens by themselves.
_HAN = re.compile("[\u4e00-\u9fa5]")
_HAN_OR_RUN = re.compile("[\u4e00-\u9fa5]|[^\u4e00-\u9fa5]+")

TOKENIZATIONS = ("whitespace", "cjk")


@lru_cache(maxsize=1)
def _run_tokenizer() -> Callable[[str], list[str]]:
    # Imported on first use: NLTK costs a third of a second, which other commands need not pay.
    from nltk.tokenize.destructive import NLTKWordTokenizer  # type: ignore[import-untyped]  # noqa: PLC0415 - see the comment above

    tokenize: Callable[[str], list[str]] = NLTKWordTokenizer().tokenize
    return tokenize


def tokenize_run(run: str) -> list[str]:
    """NLTK ``word_tokenize(run)`` without its Punkt sentence split (difference 1 of the module docstring)."""
    return _run_tokenizer()(run)


def remove_punctuation(text: str) -> str:
    """The official ``remove_punctuation``: ``lower()``, ``strip()``, then the listed characters deleted."""
    return text.lower().strip().translate(_DELETE)


def mixed_segmentation(text: str) -> list[str]:
    """The official ``mixed_segmentation(text, rm_punc=True)``, the tokens F1 compares.

    Every character in U+4E00..U+9FA5 is a token; each maximal run of other characters, after the
    punctuation is deleted (a deleted character does not end a run), is tokenised by NLTK.
    """
    tokens: list[str] = []
    for piece in _HAN_OR_RUN.findall(remove_punctuation(text)):
        if len(piece) == 1 and _HAN.match(piece):
            tokens.append(piece)
        else:
            tokens.extend(tokenize_run(piece))
    return tokens


def common_substring_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common contiguous run of tokens (the official ``find_lcs``'s ``mmax``)."""
    if len(a) < len(b):
        a, b = b, a
    in_b = set(b)
    if in_b.isdisjoint(a):
        return 0
    best = 0
    # A token that b lacks gives a row of zeros: skipped, so a long prediction costs little.
    zeros = [0] * (len(b) + 1)
    previous = zeros
    for x in a:
        if x not in in_b:
            previous = zeros
            continue
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                length = current[j + 1] = previous[j] + 1
                if length > best:
                    best = length
        previous = current
    return best


def f1_score(prediction_tokens: Sequence[str], answer_tokens: Sequence[str]) -> float:
    """The official per-answer F1 from the longest common substring; 0 when nothing is shared."""
    lcs = common_substring_length(answer_tokens, prediction_tokens)
    if lcs == 0:
        return 0.0
    # Same operations in the same order as the official, so the floats are identical.
    precision = 1.0 * lcs / len(prediction_tokens)
    recall = 1.0 * lcs / len(answer_tokens)
    return (2 * precision * recall) / (precision + recall)


class Cmrc2018Scorer:
    """EM and F1 against several answers, segmenting each distinct string once.

    Same interface as :class:`scoring.squad.CachedScorer` (``prime``, ``best_v1``), so MRQA's
    evaluation can score with either.
    """

    __slots__ = ("_em", "_tokens")

    def __init__(self) -> None:
        self._em: dict[str, str] = {}
        self._tokens: dict[str, list[str]] = {}

    def em_form(self, text: str) -> str:
        form = self._em.get(text)
        if form is None:
            form = self._em[text] = remove_punctuation(text)
        return form

    def tokens(self, text: str) -> list[str]:
        tokens = self._tokens.get(text)
        if tokens is None:
            tokens = self._tokens[text] = mixed_segmentation(text)
        return tokens

    def prime(self, texts: Iterable[str]) -> None:
        """Nothing to batch here: strings are segmented on first use (kept for the common interface)."""

    def best_v1(self, prediction: str, answers: Sequence[str]) -> tuple[int, float]:
        """(max EM, max F1) over ``answers``, which must not be empty; F1 in [0, 1]."""
        pred_form = self.em_form(prediction)
        em = 1 if any(self.em_form(answer) == pred_form for answer in answers) else 0
        pred_tokens = self.tokens(prediction)
        f1 = max(f1_score(pred_tokens, self.tokens(answer)) for answer in answers)
        return em, f1


# --------------------------------------------------------------------------- CJK detection

_CJK = re.compile(
    "[\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility jamo
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f]"  # CJK Extensions B-G
)


def cjk_share(answers: Iterable[str]) -> float:
    """The share of answers that contain Chinese, Japanese or Korean script (blank answers are ignored).

    Such answers are not separated into words by spaces (or, in Korean, carry their particles), so
    white-space tokens make a near miss a complete miss.  0.0 when there is no answer to look at.
    """
    counted = hits = 0
    for answer in answers:
        if answer.strip():
            counted += 1
            if _CJK.search(answer):
                hits += 1
    return hits / counted if counted else 0.0


# --------------------------------------------------------------------------- dataset


class Cmrc2018Question(NamedTuple):
    """One qa of a CMRC 2018 dataset, in file order; ``qid`` as the file has it (normally a string)."""

    qid: Any
    answers: list[str]
    where: str


def _text(value: Any, what: str, *, path: str, qid: Any, strict: bool, warnings: list[str]) -> str:
    """``str(value)``, as the official script applies to answers and predictions; non-strings are warned about."""
    if isinstance(value, str):
        return value
    if strict:
        raise InputFormatError(f"{what} should be a string, found {json_type(value)}", path=path,
                               qid=qid if isinstance(qid, str) else None)
    text = str(value)
    warnings.append(f"{path}: id {qid!r}: {what} is {json_type(value)}, not a string; "
                    f"scored as {text!r}, as the official str() does")
    return text


def cmrc2018_questions(
    dataset: Any, *, path: str = "dataset", strict: bool = False, warnings: list[str] | None = None
) -> list[Cmrc2018Question]:
    """Every qa of a SQuAD-style or original-format CMRC 2018 dataset, checked, in file order."""
    warnings = [] if warnings is None else warnings
    articles = dataset.get("data") if isinstance(dataset, dict) else dataset
    if not isinstance(articles, list):
        raise InputFormatError(
            "expected a CMRC 2018 dataset: a SQuAD-style object with a 'data' list, or the original "
            f"list of contexts; found {json_type(articles if isinstance(dataset, dict) else dataset)}"
            + (" under 'data'" if isinstance(dataset, dict) and "data" in dataset else ""),
            path=path,
        )
    out: list[Cmrc2018Question] = []
    for a, article in enumerate(articles):
        if not isinstance(article, dict):
            raise InputFormatError(f"data[{a}] should be an object, found {json_type(article)}", path=path)
        if "paragraphs" in article:
            paragraphs = article["paragraphs"]
            if not isinstance(paragraphs, list):
                raise InputFormatError(f"data[{a}].paragraphs should be a list", path=path)
            places = [(f"data[{a}].paragraphs[{p}]", para) for p, para in enumerate(paragraphs)]
        else:
            places = [(f"data[{a}]", article)]
        for place, para in places:
            qas = para.get("qas") if isinstance(para, dict) else None
            if not isinstance(qas, list):
                raise InputFormatError(f"{place} should be an object with a 'qas' list", path=path)
            for q, qa in enumerate(qas):
                out.append(_question(qa, f"{place}.qas[{q}]", path=path, strict=strict, warnings=warnings))
    return out


def _question(qa: Any, where: str, *, path: str, strict: bool, warnings: list[str]) -> Cmrc2018Question:
    if not isinstance(qa, dict):
        raise InputFormatError(f"{where} should be an object, found {json_type(qa)}", path=path)
    if "id" in qa:
        qid = qa["id"]
    elif "query_id" in qa:
        qid = qa["query_id"]
    else:
        raise InputFormatError(f"{where} has neither 'id' nor 'query_id'", path=path)
    if not isinstance(qid, str):
        if strict or isinstance(qid, (list, dict)):
            raise InputFormatError(f"{where}: the question id should be a string, found {json_type(qid)}",
                                   path=path)
        warnings.append(f"{path}: {where}: the question id {qid!r} is {json_type(qid)}, not a string; no "
                        "prediction key can match it, so it is unanswered (as in the official script)")
    shown = qid if isinstance(qid, str) else None
    raw = qa.get("answers")
    if not isinstance(raw, list):
        found = "nothing" if "answers" not in qa else json_type(raw)
        raise InputFormatError(f"{where}: 'answers' should be a list of answers, found {found}",
                               path=path, qid=shown)
    answers = []
    for k, answer in enumerate(raw):
        if isinstance(answer, dict):
            if "text" not in answer:
                raise InputFormatError(f"{where}.answers[{k}] has no 'text'", path=path, qid=shown)
            answer = answer["text"]
        answers.append(_text(answer, f"answers[{k}]", path=path, qid=qid, strict=strict, warnings=warnings))
    return Cmrc2018Question(qid, answers, where)


# --------------------------------------------------------------------------- evaluation


def evaluate_cmrc2018(
    questions: Sequence[Cmrc2018Question] | Mapping[str, Sequence[str]],
    predictions: Mapping[str, Any],
    *,
    prediction_file: str = "predictions",
    dataset_path: str = "dataset",
    strict: bool = False,
) -> EvalResult:
    """The official ``evaluate`` and output: ``{"AVERAGE", "F1", "EM", "TOTAL", "SKIP", "FILE"}``, unrounded.

    ``questions`` from :func:`cmrc2018_questions`, or a plain ``{qid: [answer, ...]}``.  Per-question
    records are ``{"id", "exact_match", "f1", "missing"}`` with F1 in [0, 1].
    """
    if isinstance(questions, Mapping):
        questions = [Cmrc2018Question(qid, list(answers), f"id {qid!r}") for qid, answers in questions.items()]
    if not questions:
        raise UndefinedMetricError("the dataset has no questions (the official script divides by zero)",
                                   path=dataset_path)
    warnings: list[str] = []
    scorer = Cmrc2018Scorer()
    f1_sum: float = 0
    em_sum = 0
    skipped: list[str] = []
    per_example: list[dict[str, Any]] = []
    for question in questions:
        qid = question.qid
        if qid not in predictions:
            skipped.append(f"Unanswered question: {qid}")
            per_example.append({"id": qid, "exact_match": 0, "f1": 0.0, "missing": True})
            continue
        if not question.answers:
            # The official max() over no F1 raises ValueError.
            raise InputFormatError(f"{question.where}: the question has no answer to score the prediction "
                                   "against (the official script crashes here)", path=dataset_path, qid=qid)
        prediction = _text(predictions[qid], "the prediction", path=prediction_file, qid=qid, strict=strict,
                           warnings=warnings)
        em, f1 = scorer.best_v1(prediction, question.answers)
        f1_sum += f1
        em_sum += em
        per_example.append({"id": qid, "exact_match": em, "f1": f1, "missing": False})
    total = len(questions)
    f1_score_ = 100.0 * f1_sum / total
    em_score = 100.0 * em_sum / total
    metrics: dict[str, Any] = {
        "AVERAGE": (em_score + f1_score_) * 0.5,
        "F1": f1_score_,
        "EM": em_score,
        "TOTAL": total,
        "SKIP": len(skipped),
        "FILE": prediction_file,
    }
    warnings.extend(summarise(skipped, "unanswered questions (each scores 0)"))
    return EvalResult(metrics, per_example, warnings)


def official_rounding(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The official output: AVERAGE, F1 and EM as ``'%.3f'`` strings."""
    # format(x, ".3f") is the same conversion as "%.3f" % x.
    return {key: f"{value:.3f}" if key in ("AVERAGE", "F1", "EM") else value for key, value in metrics.items()}


# --------------------------------------------------------------------------- command line


def run(args: argparse.Namespace) -> EvalResult:
    with gc_paused():
        load_warnings: list[str] = []
        dataset = load_json(args.dataset)
        predictions = load_prediction_map(args.predictions, strict=args.strict, warn=load_warnings.append)
        questions = cmrc2018_questions(dataset, path=args.dataset, strict=args.strict, warnings=load_warnings)
        result = evaluate_cmrc2018(questions, predictions, prediction_file=args.predictions,
                                   dataset_path=args.dataset, strict=args.strict)
    result.warnings[:0] = load_warnings
    if args.official_rounding:
        result.metrics = official_rounding(result.metrics)
    return result


_EPILOG = """\
Chinese characters (U+4E00..U+9FA5) are tokens; other text is tokenised with
NLTK's word tokenizer, without the Punkt sentence split of word_tokenize (its
data cannot be downloaded here): a period ending a sentence inside a
non-Chinese run stays on its word ("went." rather than "went" ".").  Where
the official script crashes (no question; a predicted question without
answers; a malformed file) or would take a non-list 'answers' apart, we stop
with one line naming the cause.  Scores print at full precision;
--official-rounding prints the official '%.3f' strings.  A question without
a prediction scores 0 and counts in TOTAL and SKIP.
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "cmrc2018",
        help="CMRC 2018 EM and F1 for Chinese answers (cmrc2018_evaluate.py)",
        description="CMRC 2018 exact match and F1 (mixed Chinese/English segmentation, longest common "
                    "substring), identical to cmrc2018_evaluate.py v6.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", metavar="DATASET.json",
                        help="SQuAD-style CMRC 2018 dataset, or the original list of contexts")
    parser.add_argument("predictions", metavar="PRED.json", help="predictions: {question id: answer string}")
    add_common_options(parser)
    parser.set_defaults(run=run)
