"""Building MRQA-format datasets (MRQA 2019 overview, section 3) and partitioning them by context.

``mrqa-build`` converts SQuAD 1.1/2.0, QuAC and CoQA files into MRQA JSON
lines; ``mrqa-partition`` splits an MRQA file into dev and test portions by
context; ``mrqa-compare`` measures a built file against a released one.

**What the official files do** (read off ``SQuAD.jsonl.gz``, MRQA's SQuAD dev
file, against SQuAD v1.1 dev; ``tests/scoring/test_mrqa_build.py`` checks
each point):

* A header line ``{"header": {"dataset", "split"}}``, then one line per
  context: ``{"id", "context", "qas", "context_tokens"}``.  SQuAD's context is
  the paragraph exactly as given (no title, white space untouched) and its
  ``id`` is ``""``.  Lines are ``json.dumps`` with its defaults (``\\u``
  escapes for non-ASCII).
* Tokens are ``[token, char_offset]`` pairs from spaCy 2.0
  (:mod:`scoring.mrqa_tokens`); context tokens without white space tokens,
  question tokens with them.
* Each qa is ``{"answers", "question", "id", "qid", "question_tokens",
  "detected_answers"}``: ``answers`` holds every gold answer text, in order,
  duplicates included (it is all the official scorer reads); ``id`` is the
  source's question id; ``qid`` is 32 hex digits (a random ``uuid4().hex``
  upstream; here the uuid4-shaped MD5 of the dataset name and source id, so
  a rebuild gives the same qids).
* ``detected_answers`` has one entry per gold answer that lies on token
  boundaries (its first character starts a token, its last ends one), in the
  order of ``answers``, each with ``text``, ``char_spans`` (inclusive end) and
  ``token_spans``.  Equal answers are not merged: three annotators' "Denver
  Broncos" give three entries with the same span.  A question none of whose
  answers lies on token boundaries is dropped (63 of SQuAD dev's 10,570: e.g.
  "11" inside "11-year").
* An answer whose ``answer_start`` is 0 was treated as having no offset (the
  converter evidently tested the offset for truth): its text is searched for
  instead, and every occurrence becomes one of its spans, so one detected
  answer has several spans ("Super Bowl" five times).  The search compares
  tokens after SQuAD normalisation (:func:`scoring.text.normalize_answer`),
  skipping tokens that normalise to nothing, so "The Broncos" matches the
  token "Broncos" alone and the span's text is not the answer's (384 spans of
  the dev file).  The spans come in the iteration order of a Python 3.6/3.7
  set (:func:`_legacy_set_order`), and such an entry lists ``token_spans``
  before ``char_spans``.  ``--trust-zero-offsets`` uses the given offset
  instead.  Sources without offsets (CoQA's free-form answers) use the same
  search.
* Contexts are cut to their first 800 tokens (the text too, after the 800th
  token), and a question none of whose answers is detected within them is
  dropped; MRQA's SQuAD dev has no context that long (706 tokens at most).

**Separators.**  A context made of several documents joins them with
``[DOC]``; a document's title comes first as ``[TLE] title [SEP]`` (as in
MRQA's HotpotQA file); its paragraphs are joined with ``[PAR]``.  MRQA's
HotpotQA file also puts ``[PAR]`` before its first paragraph; the overview
describes the markers as separators, which is what is done here.

**Sources.**  SQuAD 1.1 and 2.0 (2.0's unanswerable questions are dropped
and counted: MRQA is extractive only), one context per paragraph or, with
``--articles``, per article.  QuAC: each dialog's section, without the
``CANNOTANSWER`` QuAC appends; CANNOTANSWER answers are dropped, and questions
left without an answer counted as unanswerable; questions lose the dialog
history they depend on.  CoQA: the story; each turn's free-form answers (the
main one and the additional ones) that occur in the story, searched first
within the turn's rationale, then anywhere; "yes", "no" and "unknown" are not
extractive.  DuReader is not supported: its answers are abstractive summaries
(9 of the demo dev file's 205 occur verbatim in the documents), and the
tokenizer and normalisation are English.

**Partition** (overview, section 3.1: 1,500 test questions per sub-domain,
no context in both portions): contexts, grouped by their text so that a
repeated context goes to one side, are shuffled with the seed and taken for
test while they fit within the target; the rest is dev.  Several inputs are
drawn from in the order given, as MRQA drew from the original test split
before the others.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from scoring.errors import InputFormatError
from scoring.formats import describe_format
from scoring.io import iter_json_lines, load_json, read_bytes
from scoring.mrqa import dataset_name_from_path
from scoring.mrqa_tokens import Token, tokenize
from scoring.result import EvalResult
from scoring.squad import squad_questions
from scoring.text import normalize_answer

MAX_CONTEXT_TOKENS = 800
TEST_QUESTIONS = 1500
SOURCES = ("squad", "quac", "coqa")
_QUAC_NO_ANSWER = "CANNOTANSWER"
_COQA_NOT_EXTRACTIVE = frozenset({"yes", "no", "unknown"})  # compared after normalize_answer

# --------------------------------------------------------------------------- source-neutral form


@dataclass
class SourceAnswer:
    """A gold answer: its text and where it starts in the context, if known.

    ``start=None`` means "search": every occurrence in the context, or first
    within ``window`` (character offsets, end exclusive) if given.  A
    ``free_form`` answer (CoQA's) is an answer only where it occurs: if the
    search finds it nowhere it leaves ``answers`` too.
    """

    text: str
    start: int | None
    window: tuple[int, int] | None = None
    free_form: bool = False


@dataclass
class SourceQuestion:
    id: str
    question: str
    answers: list[SourceAnswer]


@dataclass
class SourceContext:
    context: str
    questions: list[SourceQuestion]
    id: str = ""


@dataclass
class BuildStats:
    """Counts a build reports: what came in, what was dropped and why, what was written."""

    contexts_read: int = 0
    questions_read: int = 0
    unanswerable: int = 0
    not_extractive_answers: int = 0
    searched_answers: int = 0
    undetected_answers: int = 0
    dropped_unaligned: int = 0
    dropped_outside_cut: int = 0
    contexts_cut: int = 0
    contexts_without_questions: int = 0
    contexts_written: int = 0
    questions_written: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "contexts": {"read": self.contexts_read, "written": self.contexts_written,
                         "cut_to_max_tokens": self.contexts_cut,
                         "left_without_questions": self.contexts_without_questions},
            "questions": {"read": self.questions_read, "written": self.questions_written,
                          "unanswerable_dropped": self.unanswerable,
                          "no_answer_on_token_boundaries_dropped": self.dropped_unaligned,
                          "answer_outside_cut_dropped": self.dropped_outside_cut},
            "answers": {"searched_for": self.searched_answers, "not_detected": self.undetected_answers,
                        "not_extractive_left_out": self.not_extractive_answers},
        }


def join_documents(documents: Sequence[tuple[str | None, Sequence[str]]]) -> tuple[str, list[list[int]]]:
    """One context from ``(title or None, paragraphs)`` documents, and where each paragraph starts in it.

    ``[DOC]`` between documents, ``[TLE] title [SEP]`` before a document's
    paragraphs, ``[PAR]`` between paragraphs.  One untitled paragraph is the
    context as it is.
    """
    parts: list[str] = []
    starts: list[list[int]] = []
    length = 0

    def add(text: str) -> None:
        nonlocal length
        parts.append(text)
        length += len(text)

    for d, (title, paragraphs) in enumerate(documents):
        if d:
            add(" [DOC] ")
        if title is not None:
            add(f"[TLE] {title} [SEP] ")
        starts.append([])
        for p, paragraph in enumerate(paragraphs):
            if p:
                add(" [PAR] ")
            starts[-1].append(length)
            add(paragraph)
    return "".join(parts), starts


# --------------------------------------------------------------------------- sources


def _string(obj: Any, key: str, *, path: str, where: str) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, str):
        raise InputFormatError(f"{where} should have a string {key!r}", path=path)
    return value


def _offset(answer: Any, key: str, *, path: str, where: str) -> int:
    value = answer.get(key) if isinstance(answer, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputFormatError(f"{where} should have an integer {key!r}", path=path)
    return value


def squad_contexts(dataset: Mapping[str, Any], stats: BuildStats, *, path: str = "dataset",
                   articles: bool = False, titles: bool = False,
                   trust_zero_offsets: bool = False) -> Iterator[SourceContext]:
    """Contexts of a SQuAD 1.1/2.0 file: one per paragraph, or per article with ``articles``.

    Unanswerable questions (``is_impossible``, or no answer) are counted and
    left out.  An ``answer_start`` of 0 becomes a search, as in MRQA's files,
    unless ``trust_zero_offsets``.
    """
    squad_questions(dataset, path=path)  # checks the structure down to the answer texts
    for a, article in enumerate(dataset["data"]):
        title = article.get("title") if titles else None
        if title is not None and not isinstance(title, str):
            raise InputFormatError(f"data[{a}] should have a string 'title'", path=path)
        paragraphs = article["paragraphs"]
        texts = [_string(p, "context", path=path, where=f"data[{a}].paragraphs[{i}]")
                 for i, p in enumerate(paragraphs)]
        groups = [list(range(len(paragraphs)))] if articles else [[i] for i in range(len(paragraphs))]
        for group in groups:
            context, starts = join_documents([(title, [texts[i] for i in group])])
            questions: list[SourceQuestion] = []
            for i, shift in zip(group, starts[0]):
                for q, qa in enumerate(paragraphs[i]["qas"]):
                    stats.questions_read += 1
                    where = f"data[{a}].paragraphs[{i}].qas[{q}]"
                    if qa.get("is_impossible") or not qa["answers"]:
                        stats.unanswerable += 1
                        continue
                    answers = []
                    for n, answer in enumerate(qa["answers"]):
                        start = _offset(answer, "answer_start", path=path, where=f"{where}.answers[{n}]")
                        if start == 0 and not trust_zero_offsets:
                            # Searched within its own paragraph first (the whole context in MRQA's
                            # one-paragraph contexts), so --articles does not pick up other paragraphs.
                            window = (shift, shift + len(texts[i]))
                            answers.append(SourceAnswer(answer["text"], None, window=window))
                        else:
                            answers.append(SourceAnswer(answer["text"], start + shift))
                    questions.append(SourceQuestion(
                        qa["id"], _string(qa, "question", path=path, where=where), answers))
            stats.contexts_read += 1
            yield SourceContext(context, questions)


def quac_contexts(dataset: Mapping[str, Any], stats: BuildStats, *, path: str = "dataset",
                  titles: bool = False) -> Iterator[SourceContext]:
    """Contexts of a QuAC file: each dialog's section, without QuAC's trailing CANNOTANSWER."""
    squad_questions(dataset, path=path)
    for a, dialog in enumerate(dataset["data"]):
        title: str | None = None
        if titles:
            names = [dialog.get(k) for k in ("title", "section_title")]
            title = ": ".join(n for n in names if isinstance(n, str) and n) or None
        for i, paragraph in enumerate(dialog["paragraphs"]):
            text = _string(paragraph, "context", path=path, where=f"data[{a}].paragraphs[{i}]")
            # QuAC appends " CANNOTANSWER" so that its no-answer marker is a span; it is not text.
            marker = " " + _QUAC_NO_ANSWER
            if text.endswith(marker):
                text = text[: -len(marker)]
            context, starts = join_documents([(title, [text])])
            shift = starts[0][0]
            questions = []
            for q, qa in enumerate(paragraph["qas"]):
                stats.questions_read += 1
                where = f"data[{a}].paragraphs[{i}].qas[{q}]"
                answers = [
                    SourceAnswer(ans["text"], _offset(ans, "answer_start", path=path,
                                                      where=f"{where}.answers[{n}]") + shift)
                    for n, ans in enumerate(qa["answers"]) if ans["text"] != _QUAC_NO_ANSWER
                ]
                if not answers:
                    stats.unanswerable += 1
                    continue
                questions.append(SourceQuestion(qa["id"], _string(qa, "question", path=path, where=where), answers))
            stats.contexts_read += 1
            yield SourceContext(context, questions, id=str(paragraph.get("id", "")))


def coqa_contexts(dataset: Mapping[str, Any], stats: BuildStats, *, path: str = "dataset") -> Iterator[SourceContext]:
    """Contexts of a CoQA file: the story, with each turn's extractive free-form answers."""
    stories = dataset.get("data")
    if not isinstance(stories, list):
        raise InputFormatError("expected a CoQA dataset: a 'data' list of stories", path=path)
    for s, story in enumerate(stories):
        where = f"data[{s}]"
        text = _string(story, "story", path=path, where=where)
        story_id = _string(story, "id", path=path, where=where)
        turns = story.get("questions")
        main = story.get("answers")
        if not isinstance(turns, list) or not isinstance(main, list) or len(turns) != len(main):
            raise InputFormatError(f"{where} should have 'questions' and 'answers' lists of one length", path=path)
        extra = story.get("additional_answers") or {}
        if not isinstance(extra, dict):
            raise InputFormatError(f"{where}.additional_answers should be an object", path=path)
        questions = []
        for t, turn in enumerate(turns):
            stats.questions_read += 1
            golds = [main[t], *(answers[t] for answers in extra.values()
                                if isinstance(answers, list) and t < len(answers))]
            answers = []
            for n, gold in enumerate(golds):
                answer = _string(gold, "input_text", path=path, where=f"{where} turn {t + 1} answer {n}")
                if normalize_answer(answer) in _COQA_NOT_EXTRACTIVE or not normalize_answer(answer):
                    stats.not_extractive_answers += 1
                    continue
                window = None
                start, end = gold.get("span_start"), gold.get("span_end")
                if isinstance(start, int) and isinstance(end, int) and 0 <= start < end:
                    window = (start, end)
                answers.append(SourceAnswer(answer, None, window=window, free_form=True))
            if not answers:
                stats.unanswerable += 1
                continue
            turn_id = turn.get("turn_id", t + 1) if isinstance(turn, dict) else t + 1
            question = _string(turn, "input_text", path=path, where=f"{where}.questions[{t}]")
            questions.append(SourceQuestion(f"{story_id}_{turn_id}", question, answers))
        stats.contexts_read += 1
        yield SourceContext(text, questions, id=story_id)


# --------------------------------------------------------------------------- locating answers


def _legacy_tuple_hash(items: tuple[int, ...]) -> int:
    """``hash(items)`` for a tuple of small non-negative ints in CPython 3.7 and earlier (64-bit)."""
    mask = (1 << 64) - 1
    x = 0x345678
    multiplier = 1000003
    remaining = len(items)
    for item in items:
        remaining -= 1
        x = ((x ^ item) * multiplier) & mask
        multiplier = (multiplier + 82520 + remaining + remaining) & mask
    x = (x + 97531) & mask
    return mask - 1 if x == mask else x  # -1 is reserved for errors, so CPython makes it -2


def _legacy_set_order(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The iteration order of a CPython 3.6/3.7 set into which ``spans`` (distinct) were added in turn.

    MRQA's converter collected a searched answer's occurrences in a set, so
    its files list the spans in this order ([0, 1], [86, 87], [51, 52], ...);
    replaying the set's open addressing (linear probes of 9, perturbation
    shift 5, growth to 4 x used at 3/5 full) gives the same order for all 752
    searched answers of the SQuAD dev file.  Python 3.8 changed the tuple hash.
    """
    size = 8
    table: list[tuple[int, int] | None] = [None] * size

    def insert(into: list[tuple[int, int] | None], key: tuple[int, int]) -> None:
        mask = len(into) - 1
        code = _legacy_tuple_hash(key)
        perturb = code
        i = code & mask
        while True:
            if into[i] is None:
                into[i] = key
                return
            if i + 9 <= mask:
                for j in range(i + 1, i + 10):
                    if into[j] is None:
                        into[j] = key
                        return
            perturb >>= 5
            i = (i * 5 + 1 + perturb) & mask

    used = 0
    for span in spans:
        insert(table, span)
        used += 1
        if used * 5 >= (size - 1) * 3:
            size = 8
            while size <= used * 4:
                size <<= 1
            old = [k for k in table if k is not None]
            table = [None] * size
            for k in old:
                insert(table, k)
    return [k for k in table if k is not None]


class _TokenizedContext:
    """A context's tokens with the lookups that locating answers needs."""

    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = tokens
        self.by_start = {offset: i for i, (_, offset) in enumerate(tokens)}
        self.by_end = {offset + len(text): i for i, (text, offset) in enumerate(tokens)}

    @cached_property
    def normalized(self) -> list[str]:
        # Only searched answers need it (a few percent of SQuAD's); it is a third of the build time.
        return [normalize_answer(text) for text, _ in self.tokens]

    def char_span(self, first: int, last: int) -> list[int]:
        text, offset = self.tokens[last]
        return [self.tokens[first][1], offset + len(text) - 1]

    def aligned(self, start: int, text: str) -> tuple[int, int] | None:
        """The token span of ``text`` at ``start`` if it begins and ends on token boundaries."""
        first = self.by_start.get(start)
        last = self.by_end.get(start + len(text))
        if first is None or last is None or last < first or not text:
            return None
        return first, last

    def occurrences(self, text: str, window: tuple[int, int] | None = None) -> list[tuple[int, int]]:
        """Token spans whose normalised tokens, empty ones skipped, are ``text``'s."""
        wanted = [n for n in (normalize_answer(t) for t, _ in tokenize(text)) if n]
        if not wanted:
            return []
        norm = self.normalized
        found: list[tuple[int, int]] = []
        for i in range(len(norm)):
            if norm[i] != wanted[0]:
                continue
            j, k, last = i, 0, i
            while j < len(norm) and k < len(wanted):
                if norm[j]:
                    if norm[j] != wanted[k]:
                        break
                    last = j
                    k += 1
                j += 1
            if k == len(wanted):
                found.append((i, last))
        if window is not None:
            lo, hi = window
            inside = [(f, t) for f, t in found
                      if self.tokens[f][1] >= lo and self.tokens[t][1] + len(self.tokens[t][0]) <= hi]
            found = inside or found
        return found


def _qid(dataset: str, source_id: str, taken: set[str]) -> str:
    """32 hex digits like MRQA's ``uuid4().hex``, but derived from the ids so a rebuild repeats them."""
    salt = 0
    while True:
        seed = f"{dataset}\x00{source_id}" + (f"\x00{salt}" if salt else "")
        qid = uuid.UUID(bytes=hashlib.md5(seed.encode("utf-8")).digest(), version=4).hex
        if qid not in taken:
            taken.add(qid)
            return qid
        salt += 1


def build_records(contexts: Iterable[SourceContext], stats: BuildStats, *, dataset: str,
                  max_tokens: int = MAX_CONTEXT_TOKENS) -> Iterator[dict[str, Any]]:
    """MRQA context records (without the header) for ``contexts``; counts go to ``stats``."""
    taken: set[str] = set()
    for source in contexts:
        tokens = tokenize(source.context)
        located = _TokenizedContext(tokens)
        context = source.context
        if len(tokens) > max_tokens:
            stats.contexts_cut += 1
            last_text, last_offset = tokens[max_tokens - 1]
            context = context[: last_offset + len(last_text)]
        qas: list[dict[str, Any]] = []
        for question in source.questions:
            detected: list[dict[str, Any]] = []
            answers: list[str] = []
            beyond_cut = False
            for answer in question.answers:
                if answer.start is not None:
                    span = located.aligned(answer.start, answer.text)
                    spans = [span] if span is not None else []
                else:
                    stats.searched_answers += 1
                    spans = located.occurrences(answer.text, answer.window)
                if answer.free_form and not spans:
                    stats.not_extractive_answers += 1
                    continue
                answers.append(answer.text)
                inside = [s for s in spans if s[1] < max_tokens]
                beyond_cut = beyond_cut or len(inside) < len(spans)
                if not inside:
                    stats.undetected_answers += 1
                    continue
                if answer.start is not None:
                    first, last = inside[0]
                    detected.append({"text": answer.text, "char_spans": [located.char_span(first, last)],
                                     "token_spans": [[first, last]]})
                else:
                    ordered = _legacy_set_order(inside)
                    # Key order as in MRQA's files for searched answers.
                    detected.append({"text": answer.text, "token_spans": [list(s) for s in ordered],
                                     "char_spans": [located.char_span(f, t) for f, t in ordered]})
            if not detected:
                if beyond_cut:
                    stats.dropped_outside_cut += 1
                else:
                    stats.dropped_unaligned += 1
                continue
            qas.append({
                "answers": answers,
                "question": question.question,
                "id": question.id,
                "qid": _qid(dataset, question.id, taken),
                "question_tokens": [list(t) for t in tokenize(question.question, keep_space=True)],
                "detected_answers": detected,
            })
        if not qas:
            stats.contexts_without_questions += 1
            continue
        stats.contexts_written += 1
        stats.questions_written += len(qas)
        yield {"id": source.id, "context": context, "qas": qas,
               "context_tokens": [list(t) for t in tokens[:max_tokens]]}


# --------------------------------------------------------------------------- files


def write_mrqa_lines(path: str, lines: Iterable[str]) -> int:
    """Write JSON lines to ``path`` (gzipped, with no time stamp, if it ends in ``.gz``); returns the count.

    Written to a temporary file first, so a failed build leaves no half file.
    """
    buffer = io.StringIO()
    count = 0
    for line in lines:
        buffer.write(line)
        buffer.write("\n")
        count += 1
    data = buffer.getvalue().encode("utf-8")
    if path.endswith(".gz"):
        packed = io.BytesIO()
        # Level 6: a third of level 9's time for 3% more bytes on SQuAD dev.
        with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=6) as gz:
            gz.write(data)
        data = packed.getvalue()
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return count


def header_line(dataset: str, split: str) -> str:
    return json.dumps({"header": {"dataset": dataset, "split": split}})


def detect_source(path: str) -> str:
    """``squad``, ``quac`` or ``coqa`` for a file in one of those formats, else an error saying what it is."""
    kind = describe_format(read_bytes(path))
    for name, label in (("squad", "SQuAD"), ("quac", "QuAC"), ("coqa", "CoQA")):
        if kind is not None and label in kind:
            return name
    found = f"it looks like {kind}" if kind else "its format is not recognised"
    raise InputFormatError(f"cannot convert to MRQA: {found}; supported are SQuAD 1.1/2.0, QuAC and CoQA "
                           "JSON files (DuReader is not: its answers are abstractive)", path=path)


_DEFAULT_NAMES = {"squad": "SQuAD", "quac": "QuAC", "coqa": "CoQA"}


@dataclass
class Build:
    header: str
    records: list[dict[str, Any]]
    stats: BuildStats


def build_mrqa(path: str, *, source: str = "auto", dataset: str | None = None, split: str = "dev",
               max_tokens: int = MAX_CONTEXT_TOKENS, articles: bool = False, titles: bool = False,
               trust_zero_offsets: bool = False) -> Build:
    """Convert the file at ``path`` to MRQA records (see the module docstring for the rules)."""
    if source == "auto":
        source = detect_source(path)
    if source not in SOURCES:
        raise InputFormatError(f"unknown source format {source!r}; use one of {', '.join(SOURCES)}")
    if max_tokens < 1:
        raise InputFormatError(f"the token limit should be positive, got {max_tokens}")
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputFormatError("expected a JSON object with a 'data' list", path=path)
    name = dataset or _DEFAULT_NAMES[source]
    stats = BuildStats()
    contexts: Iterator[SourceContext]
    if source == "squad":
        contexts = squad_contexts(data, stats, path=path, articles=articles, titles=titles,
                                  trust_zero_offsets=trust_zero_offsets)
    elif source == "quac":
        contexts = quac_contexts(data, stats, path=path, titles=titles)
    else:
        contexts = coqa_contexts(data, stats, path=path)
    records = list(build_records(contexts, stats, dataset=name, max_tokens=max_tokens))
    dropped = stats.unanswerable + stats.dropped_unaligned + stats.dropped_outside_cut
    if dropped:
        stats.warnings.append(
            f"{path}: {dropped} of {stats.questions_read} questions dropped: {stats.unanswerable} unanswerable, "
            f"{stats.dropped_unaligned} without an answer on token boundaries, {stats.dropped_outside_cut} "
            f"with their answers beyond the first {max_tokens} tokens ({stats.contexts_cut} contexts cut)"
        )
    return Build(header_line(name, split), records, stats)


def _run_build(args: argparse.Namespace) -> EvalResult:
    build = build_mrqa(args.source_file, source=args.source, dataset=args.dataset, split=args.split,
                       max_tokens=args.max_tokens, articles=args.articles, titles=args.titles,
                       trust_zero_offsets=args.trust_zero_offsets)
    write_mrqa_lines(args.output, [build.header, *(json.dumps(r) for r in build.records)])
    header = json.loads(build.header)["header"]
    return EvalResult({**header, "output": args.output, **build.stats.summary()}, [], build.stats.warnings)


# --------------------------------------------------------------------------- partition


@dataclass
class MrqaFile:
    """An MRQA file's header (if any) and context records, in order."""

    path: str
    header: dict[str, Any] | None
    records: list[dict[str, Any]]

    @property
    def dataset(self) -> str:
        inner = self.header.get("header") if self.header else None
        name = inner.get("dataset") if isinstance(inner, dict) else None
        return name if isinstance(name, str) and name else dataset_name_from_path(self.path)


def read_mrqa_file(path: str) -> MrqaFile:
    header: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    for number, obj in iter_json_lines(path):
        if not records and header is None and isinstance(obj, dict) and "header" in obj:
            header = obj
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("qas"), list) or not isinstance(obj.get("context"), str):
            raise InputFormatError("expected a context object with a string 'context' and a 'qas' list",
                                   path=path, line=number)
        records.append(obj)
    return MrqaFile(path, header, records)


def partition_records(inputs: Sequence[Sequence[dict[str, Any]]], *, test_questions: int = TEST_QUESTIONS,
                      seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split context records into (dev, test) by context, test holding at most ``test_questions`` questions.

    Records with the same ``context`` text form one group and go to the same
    side.  Groups are drawn from ``inputs[0]`` first (shuffled with ``seed``),
    then ``inputs[1]``...; a group is taken for test when it fits within the
    target, until the target is reached.  Each portion keeps the input order.
    """
    total = sum(len(r["qas"]) for records in inputs for r in records)
    if test_questions < 1 or test_questions >= total:
        raise InputFormatError(f"the test portion should have between 1 and {total - 1} questions "
                               f"(the input has {total}), not {test_questions}")
    groups: dict[str, list[tuple[int, int]]] = {}
    tier_of: dict[str, int] = {}
    for f, records in enumerate(inputs):
        for r, record in enumerate(records):
            groups.setdefault(record["context"], []).append((f, r))
            tier_of.setdefault(record["context"], f)
    rng = random.Random(seed)
    order: list[str] = []
    for tier in range(len(inputs)):
        texts = [text for text in groups if tier_of[text] == tier]  # first-appearance order: deterministic
        rng.shuffle(texts)
        order.extend(texts)
    chosen: set[tuple[int, int]] = set()
    taken = 0
    for text in order:
        size = sum(len(inputs[f][r]["qas"]) for f, r in groups[text])
        if size and taken + size <= test_questions:
            chosen.update(groups[text])
            taken += size
            if taken == test_questions:
                break
    dev: list[dict[str, Any]] = []
    test: list[dict[str, Any]] = []
    for f, records in enumerate(inputs):
        for r, record in enumerate(records):
            (test if (f, r) in chosen else dev).append(record)
    return dev, test


def _run_partition(args: argparse.Namespace) -> EvalResult:
    files = [read_mrqa_file(path) for path in args.inputs]
    dataset = args.dataset or files[0].dataset
    warnings = [f"{f.path}: its dataset is {f.dataset!r}, the output's is {dataset!r}"
                for f in files if f.dataset != dataset]
    dev, test = partition_records([f.records for f in files], test_questions=args.test_questions, seed=args.seed)
    summary: dict[str, Any] = {"dataset": dataset, "seed": args.seed, "target_test_questions": args.test_questions}
    for split, records, out in (("dev", dev, args.dev_out), ("test", test, args.test_out)):
        write_mrqa_lines(out, [header_line(dataset, split), *(json.dumps(r) for r in records)])
        summary[split] = {"output": out, "contexts": len(records), "questions": sum(len(r["qas"]) for r in records)}
    return EvalResult(summary, [], warnings)


# --------------------------------------------------------------------------- comparison


def compare_mrqa(ours: MrqaFile, reference: MrqaFile) -> dict[str, Any]:
    """How a built file agrees with a released one, question by question (matched by source ``id``).

    Figures for the questions both have: equal ``answers`` lists, equal
    detected answers' texts and char spans (span order included), fully equal
    detected answers, equal question tokens; for contexts matched by text,
    equal context tokens.  Questions without a source ``id`` match by ``qid``.
    """
    def questions(f: MrqaFile) -> dict[str, dict[str, Any]]:
        return {str(qa.get("id") or qa.get("qid")): qa for r in f.records for qa in r["qas"]}

    mine, theirs = questions(ours), questions(reference)
    both = [k for k in theirs if k in mine]

    def agree(key: Any) -> int:
        return sum(key(mine[k]) == key(theirs[k]) for k in both)

    contexts_mine = {r["context"]: r for r in ours.records}
    shared_contexts = [r for r in reference.records if r["context"] in contexts_mine]
    return {
        "questions": {"ours": len(mine), "reference": len(theirs), "both": len(both),
                      "only_ours": len(mine) - len(both), "only_reference": len(theirs) - len(both)},
        "answers_equal": agree(lambda qa: qa.get("answers")),
        "detected_char_spans_equal": agree(
            lambda qa: [(d.get("text"), d.get("char_spans")) for d in qa.get("detected_answers", [])]),
        "detected_answers_equal": agree(lambda qa: qa.get("detected_answers")),
        "question_tokens_equal": agree(lambda qa: qa.get("question_tokens")),
        "contexts": {"ours": len(ours.records), "reference": len(reference.records), "both": len(shared_contexts),
                     "tokens_equal": sum(contexts_mine[r["context"]].get("context_tokens") == r.get("context_tokens")
                                         for r in shared_contexts)},
    }


def _run_compare(args: argparse.Namespace) -> EvalResult:
    return EvalResult(compare_mrqa(read_mrqa_file(args.ours), read_mrqa_file(args.reference)))


# --------------------------------------------------------------------------- command line


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


_BUILD_EPILOG = """\
Output: MRQA JSON lines as MRQA 2019 released them (header, then one context
per line with context_tokens, and qas with answers, qid, question_tokens and
detected_answers: text, char_spans with inclusive ends, token_spans).  Tokens
are spaCy 2.0's, re-implemented.  Contexts are cut after --max-tokens tokens;
a question is dropped when none of its answers lies on token boundaries within
them, and unanswerable ones (SQuAD 2.0 is_impossible, QuAC CANNOTANSWER,
CoQA yes/no/unknown) are dropped too: MRQA is extractive.  The counts are
printed as JSON, the drops also on stderr.

Sources: SQuAD 1.1/2.0, QuAC, CoQA (DuReader is not supported: abstractive
answers).  As in MRQA's SQuAD files, an answer_start of 0 is searched for
(every occurrence, one detected answer with several spans) unless
--trust-zero-offsets.

example:
  python -m scoring mrqa-build dev-v1.1.json SQuAD.dev.jsonl.gz
"""

_PARTITION_EPILOG = """\
Contexts (grouped by their text) are shuffled with --seed and taken for the
test portion while they fit within --test-questions; the rest is dev.  With
several inputs the test portion is drawn from the first until it is exhausted,
then from the next (MRQA drew from the original test split first).  The same
inputs, target and seed give the same files.

example:
  python -m scoring mrqa-partition dataset.jsonl.gz --dev-out dataset.dev.jsonl.gz \\
      --test-out dataset.test.jsonl.gz --test-questions 1500 --seed 13
"""


def register(subparsers: Any) -> None:
    build = subparsers.add_parser(
        "mrqa-build",
        help="convert SQuAD 1.1/2.0, QuAC or CoQA to MRQA 2019 JSON lines",
        description="Convert a SQuAD 1.1/2.0, QuAC or CoQA file into MRQA JSON lines (MRQA 2019 overview, "
                    "section 3), as MRQA's own files are made.",
        epilog=_BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument("source_file", metavar="SOURCE.json", help="SQuAD, QuAC or CoQA JSON file")
    build.add_argument("output", metavar="OUT.jsonl.gz", help="MRQA file to write (gzipped if it ends in .gz)")
    build.add_argument("--from", dest="source", choices=("auto", *SOURCES), default="auto",
                       help="the source format (default: recognised from the file)")
    build.add_argument("--dataset", help="the header's dataset name (default: SQuAD, QuAC or CoQA)")
    build.add_argument("--split", default="dev", help="the header's split (default: dev)")
    build.add_argument("--max-tokens", type=_positive, default=MAX_CONTEXT_TOKENS,
                       help=f"cut contexts after this many tokens (default: {MAX_CONTEXT_TOKENS}, as MRQA)")
    build.add_argument("--articles", action="store_true",
                       help="SQuAD: one context per article, its paragraphs joined with [PAR] "
                            "(default: one per paragraph, as MRQA)")
    build.add_argument("--titles", action="store_true",
                       help="begin each context with [TLE] title [SEP] (SQuAD: the article title; "
                            "QuAC: title and section title)")
    build.add_argument("--trust-zero-offsets", action="store_true",
                       help="take answer_start 0 as an offset instead of searching for the answer "
                            "(MRQA's SQuAD files search)")
    build.set_defaults(run=_run_build)

    part = subparsers.add_parser(
        "mrqa-partition",
        help="split an MRQA dataset into dev and test portions by context (seeded)",
        description="Partition MRQA files into dev and test portions with no context in both, the test "
                    "portion near a target number of questions (MRQA 2019: 1,500 per sub-domain).",
        epilog=_PARTITION_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    part.add_argument("inputs", nargs="+", metavar="IN.jsonl.gz", help="MRQA files, drawn from in this order")
    part.add_argument("--dev-out", required=True, metavar="DEV.jsonl.gz", help="where to write the dev portion")
    part.add_argument("--test-out", required=True, metavar="TEST.jsonl.gz", help="where to write the test portion")
    part.add_argument("--test-questions", type=_positive, default=TEST_QUESTIONS,
                      help=f"target size of the test portion in questions (default: {TEST_QUESTIONS})")
    part.add_argument("--seed", type=_non_negative, default=0, help="shuffling seed (default: 0)")
    part.add_argument("--dataset", help="the headers' dataset name (default: the first input's)")
    part.set_defaults(run=_run_partition)

    compare = subparsers.add_parser(
        "mrqa-compare",
        help="compare a built MRQA file with a released one (questions, answers, spans, tokens)",
        description="Count where two MRQA files agree: questions (matched by source id), answers, "
                    "detected answers' char spans, question and context tokens.",
    )
    compare.add_argument("ours", metavar="BUILT.jsonl.gz")
    compare.add_argument("reference", metavar="RELEASED.jsonl.gz")
    compare.set_defaults(run=_run_compare)
