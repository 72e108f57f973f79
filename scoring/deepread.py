"""Deep Read answer scoring (Hirschman, Light, Breck & Burger 1999, ACL, section 2).

The paper scores a reading-comprehension system three ways:

* **P&R**: precision and recall on stemmed content words of the system's
  response against the publisher's answer key.  All words are stemmed and the
  stop words removed; "repeated words in the answer key match or fail
  together", so both sides are compared as **sets** of stems::

      recall    = |response ∩ key| / |key|
      precision = |response ∩ key| / |response|

* **HumSent**: 1 if the sentence the system picked is one of the answer
  sentences a human annotator marked, else 0.
* **AutSent**: the same against sentences marked automatically: the paper's
  routine marks, in the story, the sentence(s) with the **highest recall**
  against the answer key (our default; ties are all acceptable, and a story
  where no sentence shares a content word with the key has none).
  ``autsent_threshold=t`` instead accepts every sentence whose recall is at
  least ``t``.

"In all cases, the score for a set of questions was the average of the scores
for each question" (section 2): every metric here is a macro average over
questions, printed x100.

Choices the paper leaves open, made here and tested:

* **Several acceptable keys** for a question: we score against the key with
  the highest recall (then the highest precision; then the first), so the
  reported precision and recall come from the same key.  AutSent marks a
  sentence by its best recall over the keys.
* **Stop list** (the paper's, section 2 footnote): forms of *be*, *have* and
  *do*; personal pronouns (I, me, you, he, him, she, her, it, we, us, they,
  them) and possessive pronouns (my, mine, your, yours, his, hers, its, our,
  ours, their, theirs); *and*, *or*; *to*, *in*, *at*, *of*; *a*, *the*;
  *this*, *that*, *which*.  Reflexives (himself...) are not on it.
  The paper's own "Library of Congress" example (Figure 2) is in the tests:
  sentence 1 scores precision 2/7 and recall 2/2, sentence 2 recall 1/2,
  AutSent picks sentence 1.  For sentence 2 ("From the start, it was our
  national library.") the paper prints precision 1/6, but this stop list
  leaves 4 content words (from, start, national, library), so we give 1/4.
* **Tokens**: lower-cased runs of letters and digits; an apostrophe inside a
  word splits a clitic: ``n't`` becomes *not*, ``'ll`` *will*, and ``'s``,
  ``'re``, ``'ve``, ``'d``, ``'m`` (forms of be/have, the possessive marker,
  or an ambiguous had/would) are dropped; other apostrophes are removed
  (``o'clock`` -> ``oclock``).  Stop words are matched before stemming
  (``does`` would otherwise stem to ``doe``).
* **Stemmer**: Porter (1980) exactly as published (see :func:`porter_stem`).
* **Undefined cases**: a response with no content word (empty, missing, or
  only stop words) has precision 0 and recall 0.  A key with no content word
  cannot be scored; a question whose keys all have none is left out of P&R
  (its record says so, with a warning) but still counts for HumSent/AutSent.
* **Where applicable**: HumSent is reported when some question has marked
  answer sentences and the predictions pick sentences; AutSent when some
  question belongs to a story with sentences and the predictions pick
  sentences.  A question without the data for a sentence metric is left out
  of that metric; a question whose prediction picks no sentence scores 0.

Input (JSON)::

    DATA.json  {"stories":   [{"id": "rm2-01", "sentences": [{"id": "1", "text": "..."}, ...]}],
                "questions": [{"id": "rm2-01-1", "story": "rm2-01", "question": "Who ...?",
                               "answers": ["key one", "another acceptable key"],
                               "answer_sentences": ["3"]}]}
    PRED.json  {"rm2-01-1": "answer text",
                "rm2-01-2": {"sentence": "4"},
                "rm2-01-3": {"answer": "text", "sentence": "4"}}

``stories``, ``story``, ``question`` and ``answer_sentences`` are optional;
sentence ids may be strings or integers.  A prediction that picks a sentence
and gives no answer text is scored for P&R on that sentence's text, as Deep
Read's own responses (sentences) were.

**Sentence answers** (``--sentence-answers``; the platform's ``deepread``
suite): a system answers with the text of a sentence, as Deep Read did, and
:func:`match_sentences` reads an answer string that is a sentence of its
question's story (white space aside, nothing else) as picking that sentence;
any other string picks none and scores 0 on HumSent and AutSent.  Where a
story has the same sentence twice, the copy a human marked is the one picked:
the text cannot tell them apart.  HumSent and AutSent are then reported
whatever the answers pick (``sentence_metrics``), so a file that matches no
sentence scores 0 rather than leaving them out.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from scoring.cli import add_common_options
from scoring.errors import InputFormatError, ScoringError
from scoring.io import load_json, load_prediction_map, require
from scoring.result import EvalResult

# --- Porter stemmer (Porter 1980, "An algorithm for suffix stripping", Program 14(3)) ----------

_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    """Porter's consonant: not a vowel, and a ``y`` only after a vowel (or at the start)."""
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: the number of vowel-consonant sequences."""
    m = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _is_consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:  # *v*
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_double_consonant(stem: str) -> bool:  # *d
    return len(stem) >= 2 and stem[-1] == stem[-2] and _is_consonant(stem, len(stem) - 1)


def _ends_cvc(stem: str) -> bool:  # *o: consonant-vowel-consonant, the last not w, x or y
    n = len(stem)
    return (n >= 3 and _is_consonant(stem, n - 3) and not _is_consonant(stem, n - 2)
            and _is_consonant(stem, n - 1) and stem[-1] not in "wxy")


def _step1a(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith("ies"):
        return w[:-2]
    if w.endswith("ss"):
        return w
    if w.endswith("s"):
        return w[:-1]
    return w


def _step1b(w: str) -> str:
    if w.endswith("eed"):
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix):
            stem = w[:-len(suffix)]
            if not _has_vowel(stem):
                return w
            return _step1b_tidy(stem)
    return w


def _step1b_tidy(w: str) -> str:
    """After removing -ed/-ing: restore an e, or undouble a final consonant."""
    if w.endswith(("at", "bl", "iz")):
        return w + "e"
    if _ends_double_consonant(w) and w[-1] not in "lsz":
        return w[:-1]
    if _measure(w) == 1 and _ends_cvc(w):
        return w + "e"
    return w


def _step1c(w: str) -> str:
    if w.endswith("y") and _has_vowel(w[:-1]):
        return w[:-1] + "i"
    return w


# Steps 2-4: the longest matching suffix is chosen; if its condition fails, nothing else is tried.
_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
)
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""),
)
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize",
)


def _longest(w: str, suffixes: Sequence[str]) -> str | None:
    best: str | None = None
    for suffix in suffixes:
        if w.endswith(suffix) and (best is None or len(suffix) > len(best)):
            best = suffix
    return best


def _replace(w: str, rules: Sequence[tuple[str, str]], min_measure: int) -> str:
    table = dict(rules)
    suffix = _longest(w, tuple(table))
    if suffix is None:
        return w
    stem = w[:-len(suffix)]
    return stem + table[suffix] if _measure(stem) > min_measure else w


def _step4(w: str) -> str:
    suffix = _longest(w, _STEP4)
    if suffix is None:
        return w
    stem = w[:-len(suffix)]
    if _measure(stem) <= 1:
        return w
    if suffix == "ion" and not stem.endswith(("s", "t")):
        return w
    return stem


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _ends_cvc(stem)):
            w = stem
    if _measure(w) > 1 and _ends_double_consonant(w) and w.endswith("l"):
        w = w[:-1]
    return w


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The Porter (1980) stem of a lower-case word, as the paper's rules define it.

    Words of one or two letters are left alone (as in Porter's reference
    implementations).  This is the algorithm as published: the reference
    implementations' later departures (``bli``->``ble``, ``logi``->``log`` in
    step 2) are not applied.
    """
    if len(word) <= 2:
        return word
    w = _step1a(word)
    w = _step1b(w)
    w = _step1c(w)
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    w = _step4(w)
    return _step5(w)


# --- content words ---------------------------------------------------------------------------

STOP_WORDS: frozenset[str] = frozenset(
    # forms of be, have, do
    "be am is are was were been being "
    "have has had having "
    "do does did done doing "
    # personal and possessive pronouns
    "i me you he him she her it we us they them "
    "my mine your yours his hers its our ours their theirs "
    # conjunctions, prepositions, articles, demonstrative and relative pronouns
    "and or to in at of a the this that which".split()
)

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
# ASCII text without apostrophes (most text) splits faster with translate() than with the regex.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
_CLITICS = {"s": None, "re": None, "ve": None, "d": None, "m": None, "ll": "will"}


def _tokens(text: str) -> list[str]:
    lowered = text.lower()
    if lowered.isascii() and "'" not in lowered:  # the same tokens as the regex, faster
        return lowered.translate(_ASCII_SEPARATORS).split()
    out: list[str] = []
    for raw in _WORD.findall(lowered):
        token = raw.replace("\u2019", "'")
        if "'" not in token:
            out.append(token)
            continue
        if token.endswith("n't"):
            out.extend((token[:-3].replace("'", ""), "not"))
            continue
        head, _, tail = token.rpartition("'")
        if tail in _CLITICS:
            out.append(head.replace("'", ""))
            replacement = _CLITICS[tail]
            if replacement:
                out.append(replacement)
        else:
            out.append(token.replace("'", ""))
    return out


def content_words(text: str) -> frozenset[str]:
    """The set of stemmed content words of ``text`` (stop words removed before stemming)."""
    return frozenset([porter_stem(t) for t in _tokens(text) if t and t not in STOP_WORDS])


def precision_recall(response: frozenset[str], key: frozenset[str]) -> tuple[float, float]:
    """Set precision and recall of a response against one (non-empty) key."""
    if not response:
        return 0.0, 0.0
    common = len(response & key)
    return common / len(response), common / len(key)


# --- data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Story:
    id: str
    sentences: dict[str, str]  # sentence id -> text, in story order


@dataclass(frozen=True)
class Question:
    id: str
    answers: tuple[str, ...]
    story: str | None = None
    answer_sentences: frozenset[str] | None = None  # human-marked (HumSent); None when not annotated


@dataclass(frozen=True)
class DeepReadData:
    questions: list[Question]
    stories: dict[str, Story] = field(default_factory=dict)


@dataclass(frozen=True)
class Prediction:
    answer: str | None = None
    sentence: str | None = None


def _sentence_id(value: Any, path: str, qid: str | None, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputFormatError(f"{what} should be a string or an integer sentence id, found {value!r}",
                               path=path, qid=qid)
    return str(value)


def load_deepread_data(path: str | os.PathLike[str]) -> DeepReadData:
    """Read and validate a Deep Read data file (see the module docstring for the format)."""
    name = os.fspath(path)
    data = load_json(name)
    if not isinstance(data, dict):
        raise InputFormatError(f"expected a JSON object with 'questions' (and 'stories'), found {type(data).__name__}",
                               path=name)
    stories: dict[str, Story] = {}
    raw_stories = data.get("stories", [])
    if not isinstance(raw_stories, list):
        raise InputFormatError("field 'stories' should be a list", path=name)
    for number, raw in enumerate(raw_stories, start=1):
        where = f" in story {number}"
        sid = require(raw, "id", str, path=name, what=where)
        raw_sentences = require(raw, "sentences", list, path=name, qid=sid, what=" of the story")
        sentences: dict[str, str] = {}
        for s_number, sentence in enumerate(raw_sentences, start=1):
            s_where = f" of sentence {s_number}"
            if not isinstance(sentence, dict) or "id" not in sentence:
                raise InputFormatError(f"sentence {s_number} should be an object with 'id' and 'text'",
                                       path=name, qid=sid)
            s_id = _sentence_id(sentence["id"], name, sid, f"field 'id'{s_where}")
            text = require(sentence, "text", str, path=name, qid=sid, what=s_where)
            if s_id in sentences:
                raise InputFormatError(f"sentence id {s_id!r} appears twice in the story", path=name, qid=sid)
            sentences[s_id] = text
        if sid in stories:
            raise InputFormatError("story id appears more than once", path=name, qid=sid)
        stories[sid] = Story(id=sid, sentences=sentences)

    raw_questions = require(data, "questions", list, path=name)
    questions: list[Question] = []
    seen: set[str] = set()
    for number, raw in enumerate(raw_questions, start=1):
        qid = require(raw, "id", str, path=name, what=f" in question {number}")
        answers = require(raw, "answers", list, path=name, qid=qid)
        if not answers or not all(isinstance(a, str) for a in answers):
            raise InputFormatError("field 'answers' should be a non-empty list of strings", path=name, qid=qid)
        story = raw.get("story")
        if story is not None:
            if not isinstance(story, str):
                raise InputFormatError("field 'story' should be a string", path=name, qid=qid)
            if story not in stories:
                raise InputFormatError(f"story {story!r} is not in 'stories'", path=name, qid=qid)
        marked: frozenset[str] | None = None
        if raw.get("answer_sentences") is not None:
            raw_marked = require(raw, "answer_sentences", list, path=name, qid=qid)
            marked = frozenset(_sentence_id(s, name, qid, "an answer sentence") for s in raw_marked)
            if story is not None:
                unknown = sorted(marked - stories[story].sentences.keys())
                if unknown:
                    raise InputFormatError(f"answer sentence {unknown[0]!r} is not a sentence of story {story!r}",
                                           path=name, qid=qid)
        if qid in seen:
            # A repeated question would be scored twice; the data is the organiser's, so always an error.
            raise InputFormatError("question id appears more than once", path=name, qid=qid)
        seen.add(qid)
        questions.append(Question(id=qid, answers=tuple(answers), story=story, answer_sentences=marked))
    if not questions:
        raise InputFormatError("no questions", path=name)
    return DeepReadData(questions=questions, stories=stories)


class DeepReadGold(NamedTuple):
    """A Deep Read gold file read by :func:`load_deepread_gold`: the document and its data."""

    document: dict[str, Any]
    data: DeepReadData


def load_deepread_gold(path: str | os.PathLike[str]) -> DeepReadGold:
    """A Deep Read gold file checked as a leaderboard needs it (docs/organizers/data.md, "Deep Read challenges").

    Beyond :func:`load_deepread_data`: every question is asked about a story (systems answer
    with one of its sentences), has its text, a HumSent key (``answer_sentences``; ``[]`` where
    no sentence answers it, which the paper counts as 0 for everyone), and answer keys with a
    content word; and every story has sentences, none of them blank.
    """
    name = os.fspath(path)
    data = load_deepread_data(name)
    document = load_json(name)  # the loader keeps no question text; the file has passed it already
    for s, story in enumerate(document.get("stories", [])):
        where = f"stories[{s}]"
        if not story["sentences"]:
            raise InputFormatError(f"{where} has no sentences, so its questions cannot be answered",
                                   path=name, qid=story["id"])
        for n, sentence in enumerate(story["sentences"]):
            if not sentence["text"].strip():
                # An empty answer would "pick" it.
                raise InputFormatError(f"{where}.sentences[{n}] (id {sentence['id']!r}) is blank", path=name,
                                       qid=story["id"])
    for q, (raw, question) in enumerate(zip(document["questions"], data.questions, strict=True)):
        where = f"questions[{q}]"
        if question.story is None:
            raise InputFormatError(f"{where} has no 'story': a question is asked about a story, and systems "
                                   "answer it with one of the story's sentences", path=name, qid=question.id)
        text = raw.get("question")
        if not isinstance(text, str) or not text.strip():
            raise InputFormatError(f"{where} should have the question's text in 'question'", path=name,
                                   qid=question.id)
        if question.answer_sentences is None:
            raise InputFormatError(
                f"{where} has no 'answer_sentences': the ids of the sentences that answer it (HumSent, which "
                "ranks); give [] where none does (it still counts, and scores 0 for everyone)",
                path=name, qid=question.id,
            )
        for key in question.answers:
            if not content_words(key):
                raise InputFormatError(
                    f"{where}: answer key {key!r} has no content word once stop words are removed, so no "
                    "answer can match it (precision and recall are undefined); reword or remove it",
                    path=name, qid=question.id,
                )
    return DeepReadGold(document, data)


def load_deepread_predictions(path: str | os.PathLike[str], *, strict: bool = False,
                              warn: Callable[[str], None] = lambda _: None) -> dict[str, Prediction]:
    """Read ``{qid: "answer"}`` or ``{qid: {"answer": ..., "sentence": ...}}`` predictions."""
    name = os.fspath(path)
    raw = load_prediction_map(name, strict=strict, warn=warn, value_kind="string or object")
    out: dict[str, Prediction] = {}
    for qid, value in raw.items():
        if isinstance(value, str):
            out[qid] = Prediction(answer=value)
            continue
        if not isinstance(value, dict) or not ({"answer", "sentence"} & value.keys()):
            raise InputFormatError('prediction should be an answer string or an object with "answer" '
                                   'and/or "sentence"', path=name, qid=qid)
        answer = value.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise InputFormatError("field 'answer' should be a string", path=name, qid=qid)
        sentence = value.get("sentence")
        out[qid] = Prediction(
            answer=answer,
            sentence=None if sentence is None else _sentence_id(sentence, name, qid, "field 'sentence'"),
        )
    return out


# --- scoring ---------------------------------------------------------------------------------


def _best_key(response: frozenset[str], keys: Sequence[frozenset[str]]) -> tuple[int, float, float] | None:
    """(key index, precision, recall) of the key with the best recall, then precision; None if no key counts."""
    best: tuple[int, float, float] | None = None
    for index, key in enumerate(keys):
        if not key:
            continue
        precision, recall = precision_recall(response, key)
        if best is None or (recall, precision) > (best[2], best[1]):
            best = (index, precision, recall)
    return best


def _sentence_recall(sentence: frozenset[str], keys: Sequence[frozenset[str]]) -> float:
    return max((precision_recall(sentence, key)[1] for key in keys if key), default=0.0)


def _accepted(sentences: Mapping[str, frozenset[str]], keys: Sequence[frozenset[str]],
              threshold: float | None) -> frozenset[str]:
    recalls = {sid: _sentence_recall(words, keys) for sid, words in sentences.items()}
    if threshold is not None:
        return frozenset(sid for sid, r in recalls.items() if r >= threshold)
    best = max(recalls.values(), default=0.0)
    if best <= 0.0:
        return frozenset()
    return frozenset(sid for sid, r in recalls.items() if r == best)


def autsent_sentences(story: Story, keys: Sequence[frozenset[str]], threshold: float | None = None) -> frozenset[str]:
    """The sentences AutSent accepts: best recall against the keys (paper), or recall >= threshold."""
    return _accepted({sid: content_words(text) for sid, text in story.sentences.items()}, keys, threshold)


def evaluate_deepread(
    data: DeepReadData,
    predictions: Mapping[str, Prediction],
    *,
    autsent_threshold: float | None = None,
    strict: bool = False,
    source: str | None = None,
    sentence_metrics: bool = False,
) -> EvalResult:
    """P&R, HumSent and AutSent (x100, macro over questions) with per-question records.

    ``source`` names the prediction file in error messages.  With ``strict`` a
    prediction for an unknown question is an error (otherwise it is ignored).
    ``sentence_metrics``: report HumSent and AutSent even when no prediction
    picks a sentence (each question then scores 0 on them), as for sentence
    answers, where picking none is a wrong answer, not a different kind of system.
    """
    if autsent_threshold is not None and not 0.0 < autsent_threshold <= 1.0:
        raise ValueError("autsent_threshold must be in (0, 1]")
    question_ids = {q.id for q in data.questions}
    if strict:
        for qid in predictions:
            if qid not in question_ids:
                raise InputFormatError("prediction for a question that is not in the data", path=source, qid=qid)
    picks_sentences = sentence_metrics or any(p.sentence is not None for p in predictions.values())
    warnings: list[str] = []
    records: list[dict[str, Any]] = []
    sums = {"precision": 0.0, "recall": 0.0, "HumSent": 0.0, "AutSent": 0.0}
    counts = {"pr": 0, "HumSent": 0, "AutSent": 0}
    missing: list[str] = []
    unscorable: list[str] = []
    story_words: dict[str, dict[str, frozenset[str]]] = {}  # each story's sentences, analysed once
    for question in data.questions:
        prediction = predictions.get(question.id)
        story = data.stories.get(question.story) if question.story is not None else None
        if prediction is None:
            missing.append(question.id)
            prediction = Prediction()
        sentence_text = _picked_sentence(question, story, prediction, source)
        response_text = prediction.answer if prediction.answer is not None else (sentence_text or "")
        keys = [content_words(a) for a in question.answers]
        record: dict[str, Any] = {"id": question.id}
        best = _best_key(content_words(response_text), keys)
        if best is None:
            unscorable.append(question.id)
            record.update(precision=None, recall=None)
        else:
            record.update(precision=best[1] * 100.0, recall=best[2] * 100.0, key=best[0])
            sums["precision"] += best[1]
            sums["recall"] += best[2]
            counts["pr"] += 1
        if picks_sentences and question.answer_sentences is not None:
            hit = float(prediction.sentence is not None and prediction.sentence in question.answer_sentences)
            record["humsent"] = hit * 100.0
            sums["HumSent"] += hit
            counts["HumSent"] += 1
        if picks_sentences and story is not None and story.sentences and any(keys):
            hit = 0.0
            if prediction.sentence is not None:
                words = story_words.get(story.id)
                if words is None:
                    words = story_words[story.id] = {sid: content_words(t) for sid, t in story.sentences.items()}
                hit = float(prediction.sentence in _accepted(words, keys, autsent_threshold))
            record["autsent"] = hit * 100.0
            sums["AutSent"] += hit
            counts["AutSent"] += 1
        if question.story is not None:
            record["story"] = question.story
        if prediction.sentence is not None:
            record["sentence"] = prediction.sentence
        record["missing"] = question.id not in predictions
        records.append(record)

    if missing:
        warnings.append(f"{len(missing)} question(s) have no prediction and score 0 (first: {missing[0]!r})")
    if unscorable:
        warnings.append(f"{len(unscorable)} question(s) have no content word in any answer key and are left out "
                        f"of precision/recall (first: {unscorable[0]!r})")
    metrics: dict[str, Any] = {}
    if counts["pr"]:
        metrics["precision"] = 100.0 * sums["precision"] / counts["pr"]
        metrics["recall"] = 100.0 * sums["recall"] / counts["pr"]
    else:
        metrics["precision"] = metrics["recall"] = float("nan")
    for name in ("HumSent", "AutSent"):
        if counts[name]:
            metrics[name] = 100.0 * sums[name] / counts[name]
    metrics["total"] = len(data.questions)
    metrics["scored"] = counts["pr"]
    for name in ("HumSent", "AutSent"):
        if counts[name] and counts[name] != len(data.questions):
            metrics[f"{name}_total"] = counts[name]
    return EvalResult(metrics=metrics, per_example=records, warnings=warnings)


def _same_text(text: str) -> str:
    return " ".join(text.split())


def match_sentences(data: DeepReadData, predictions: Mapping[str, Prediction]) -> dict[str, Prediction]:
    """The predictions with each answer that is a sentence of its question's story read as picking it.

    White space aside, the answer must be the sentence's text exactly: a system that
    answers with a sentence copies it from the story.  A prediction that already
    picks a sentence, or whose question has no story, is kept as it is.  Of
    sentences with the same text, the first one the question's annotator marked
    is picked (else the first): the answer cannot say which copy it meant.
    """
    by_text: dict[str, dict[str, list[str]]] = {}  # story id -> normalised text -> sentence ids in order
    out = dict(predictions)
    for question in data.questions:
        prediction = predictions.get(question.id)
        if (prediction is None or prediction.sentence is not None or prediction.answer is None
                or question.story is None):
            continue
        texts = by_text.get(question.story)
        if texts is None:
            texts = by_text[question.story] = {}
            for sid, text in data.stories[question.story].sentences.items():
                texts.setdefault(_same_text(text), []).append(sid)
        candidates = texts.get(_same_text(prediction.answer))
        if not candidates:
            continue
        marked = question.answer_sentences or frozenset()
        picked = next((sid for sid in candidates if sid in marked), candidates[0])
        out[question.id] = Prediction(answer=prediction.answer, sentence=picked)
    return out


def _picked_sentence(question: Question, story: Story | None, prediction: Prediction,
                     source: str | None) -> str | None:
    """The text of the sentence the prediction picked (validated against the question's story)."""
    if prediction.sentence is None:
        return None
    if story is None:
        if prediction.answer is not None:
            return None  # scored on its answer text; the sentence cannot be checked without a story
        raise InputFormatError(f"the prediction picks sentence {prediction.sentence!r} but the question has "
                               "no story in the data", path=source, qid=question.id)
    text = story.sentences.get(prediction.sentence)
    if text is None:
        raise InputFormatError(f"sentence {prediction.sentence!r} is not in story {story.id!r}",
                               path=source, qid=question.id)
    return text


# --- command line ----------------------------------------------------------------------------


def register(subparsers: Any) -> None:

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "deepread",
        help="Deep Read (Hirschman et al. 1999): P&R on stemmed content words, HumSent, AutSent",
        description="Score Deep Read style answers: precision and recall on stemmed content words, "
                    "and sentence accuracy against human (HumSent) and automatic (AutSent) answer sentences.",
    )
    parser.add_argument("data", metavar="DATA.json")
    parser.add_argument("predictions", metavar="PRED.json")
    parser.add_argument("--autsent-threshold", type=float, default=None, metavar="RECALL",
                        help="AutSent accepts sentences with recall >= RECALL "
                             "(default: the paper's rule, the story's highest-recall sentences)")
    parser.add_argument("--sentence-answers", action="store_true",
                        help="answers are sentences: an answer string that is a sentence of its question's "
                             "story (white space aside) picks it, any other picks none, and HumSent and "
                             "AutSent are always reported (as the platform's deepread suite scores)")
    add_common_options(parser, rounding=False)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> EvalResult:

    if args.autsent_threshold is not None and not 0.0 < args.autsent_threshold <= 1.0:
        raise ScoringError("--autsent-threshold must be in (0, 1]")
    warnings: list[str] = []
    data = load_deepread_data(args.data)
    predictions = load_deepread_predictions(args.predictions, strict=args.strict, warn=warnings.append)
    if args.sentence_answers:
        predictions = match_sentences(data, predictions)
    result = evaluate_deepread(data, predictions, autsent_threshold=args.autsent_threshold,
                               strict=args.strict, source=args.predictions, sentence_metrics=args.sentence_answers)
    result.warnings[:0] = warnings
    return result
