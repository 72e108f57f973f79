#!/usr/bin/env python3
"""Readerboard's baseline system: the best sentence by question-word overlap, then a short span of it.

Container contract: reads $READERBOARD_INPUT/manifest.json (default /input) and writes, for every
dataset it lists, $READERBOARD_OUTPUT/<output> (default /output) = JSON {qid: answer string}.
Formats: "mrqa" (gzipped JSON lines: a header line, then contexts with their "qas"), "dureader"
(JSON lines: question_id, question, documents[].paragraphs), and the one-document formats "squad2"
and "quac" (data[].paragraphs[]: context and qas with id and question) and "coqa" (data[]: story and
questions with turn_id and input_text; answered under "<id>_<turn_id>", as the platform keys
turns), and "deepread" (stories[] with their sentences[].text, questions[] with id, story and question;
answered with a whole sentence, as Deep Read challenges score).  Unanswerable questions get a span like
any other.  Python 3.11 stdlib only.

English: the sentence with the highest IDF-weighted overlap with the question's (lower-cased,
punctuation-free, crudely stemmed) words, the earliest on ties; then its window of at most MAX_SPAN
words that holds no question word nor punctuation, scored by closeness to the matched question words,
with bonuses for numbers (how many/when), capitalised words (who/where), capitalised or numeric words.
Chinese (no spaces): sentences split on 。！？ and compared by character bigrams; the answer is the
best sentence continued with its paragraph, cut at ZH_MAX_CHARS characters.
A record that cannot be read is logged to stderr and its questions are answered "". Exit status: 0;
1 when a whole dataset could not be read (its file is still written); 2 without a manifest.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator

MAX_SPAN = 4
ENTITY_BONUS = 0.5  # per capitalised or numeric word of the window
PLAIN_BONUS = -0.3  # per other word
ZH_MAX_CHARS = 150
WORD = re.compile(r"\w+(?:['’.,-]\w+)*")
SENTENCE_END = re.compile(r"(?:(?<=[.!?][\"'”’)\]])|(?<=[.!?]))\s+(?=[\"'“‘(\[]?[A-Z0-9])|\n+|\[(?:PAR|DOC|TLE|SEP)\]")
ZH_SENTENCE_END = re.compile(r"(?<=[。！？!?])(?![。！？!?])|\n+")
CJK = re.compile(r"[\u3400-\u9fff]")
STOP = frozenset(
    "a an the of in on at to for from by with about as into than and or but not no nor is are was were "
    "be been being am do does did done has have had having it its this that these those there their "
    "they them he him his she her we our you your i me my what which who whom whose when where why how "
    "whatever can could would should will shall may might must s".split()
)
NUMBER_QUESTION = re.compile(r"\b(how (many|much|long|old|far|large|big|tall|often)|when|"
                             r"what (year|percent\w*|number|date|day|time|age)|in which year)\b")
NUMBER_WORD = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|"
                         r"hundred|thousand|million|billion)\b", re.I)
NAME_QUESTION = re.compile(r"\b(who|whom|whose|where)\b")


def log(message: str) -> None:
    print(f"baseline: {message}", file=sys.stderr, flush=True)


def norm(word: str) -> str:
    return re.sub(r"\W", "", word.lower())


def terms(text: str) -> list[str]:
    """Stems of the words of ``text`` that are not stop words (5-letter prefixes: "determined" ~ "determine")."""
    return [w[:5] for w in (norm(m.group()) for m in WORD.finditer(text)) if w and w not in STOP]


def bigrams(text: str) -> list[str]:
    chars = [c for c in text if c.isalnum()]
    return [a + b for a, b in zip(chars, chars[1:])] or chars


def is_chinese(text: str) -> bool:
    text = "".join(text.split())[:2000]
    return bool(text) and len(CJK.findall(text)) > 0.3 * len(text)


def split_sentences(text: str, zh: bool = False) -> list[tuple[int, int]]:
    """(start, end) offsets of the non-blank sentences of ``text``, end punctuation included."""
    cuts = [(m.start(), m.end()) for m in (ZH_SENTENCE_END if zh else SENTENCE_END).finditer(text)]
    starts = [0] + [end for _, end in cuts]
    out = []
    for s, e in zip(starts, [start for start, _ in cuts] + [len(text)]):
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


class Idf:
    """Inverse document frequency over the sentences of a whole dataset (a sentence is a document)."""

    def __init__(self, sentences: Iterable[Iterable[str]]) -> None:
        self.df: Counter[str] = Counter()
        self.n = 0
        for units in sentences:
            self.df.update(set(units))
            self.n += 1

    def __call__(self, unit: str) -> float:
        return math.log((self.n + 1) / (self.df[unit] + 0.5))


class Passage:
    """The text of one record (an MRQA context, a DuReader question's paragraphs), split into sentences once."""

    def __init__(self, paragraphs: list[str], zh: bool) -> None:
        self.zh = zh
        self.sentences = [(text, s, e) for text in paragraphs for s, e in split_sentences(text, zh)]
        self.units = [(bigrams if zh else terms)(text[s:e]) for text, s, e in self.sentences]

    def answer(self, question: str, idf: Idf) -> str:
        if not self.sentences:
            return ""
        k = best_sentence(set((bigrams if self.zh else terms)(question)), self.units, idf)
        text, s, e = self.sentences[k]
        return text[s:s + ZH_MAX_CHARS].strip() if self.zh else choose_span(question, text[s:e], idf)


def best_sentence(question: set[str], sentences: list[list[str]], idf: Idf) -> int:
    """Index of the sentence with the highest IDF-weighted overlap with ``question`` (earliest on ties)."""
    scores = [sum(idf(u) for u in question & set(s)) for s in sentences]
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def choose_span(question: str, sentence: str, idf: Idf) -> str:
    """The window of at most MAX_SPAN words of ``sentence`` next to the question's words, without them."""
    qterms = set(terms(question))
    toks = [(m.start(), m.end(), w) for m in WORD.finditer(sentence) if (w := norm(m.group()))]
    if not toks:
        return sentence.strip()
    in_q = [w not in STOP and w[:5] in qterms for _, _, w in toks]
    matched = [i for i, q in enumerate(in_q) if q]
    breaks = {i for i in range(1, len(toks)) if sentence[toks[i - 1][1]:toks[i][0]].strip()}  # punctuation
    capital = [sentence[s].isupper() for s, _, _ in toks]
    q_lower = question.lower()
    wants_number, wants_name = bool(NUMBER_QUESTION.search(q_lower)), bool(NAME_QUESTION.search(q_lower))
    best, best_score = sentence[toks[0][0]:toks[-1][1]], -math.inf
    for i in range(len(toks)):
        for j in range(i + 1, min(i + MAX_SPAN, len(toks)) + 1):  # the window toks[i:j]
            if (j - 1 > i and j - 1 in breaks) or in_q[j - 1]:
                break
            if in_q[i] or toks[i][2] in STOP or toks[j - 1][2] in STOP:
                continue
            text = sentence[toks[i][0]:toks[j - 1][1]]
            score = sum(idf(toks[m][2][:5]) / (1 + (i - m if m < i else m - j + 1)) for m in matched)
            if wants_number and (any(c.isdigit() for c in text) or NUMBER_WORD.search(text)):
                score += 3
            if wants_name and any(capital[k] for k in range(max(i, 1), j)):  # not the sentence's first word
                score += 2
            score += sum(ENTITY_BONUS if capital[k] or toks[k][2][0].isdigit() else PLAIN_BONUS for k in range(i, j))
            if score > best_score:
                best, best_score = text, score
    return best


# --------------------------------------------------------------------------- reading the formats

Record = tuple[list[tuple[str, str | None]], list[str]]  # ([(qid, question or None if unreadable)], paragraphs)


def read_lines(path: str) -> Iterator[str]:
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rt", encoding="utf-8") if gz else open(path, encoding="utf-8")) as fh:
        yield from (line for line in fh if line.strip())


def parse(line: str, fmt: str) -> Record | None:
    obj = json.loads(line)
    if fmt == "dureader":
        paragraphs = [str(p) for doc in obj.get("documents") or [] for p in doc.get("paragraphs") or [] if p]
        return [(str(obj["question_id"]), str(obj.get("question") or ""))], paragraphs
    if "header" in obj and "qas" not in obj:
        return None
    return [(str(qa["qid"]), str(qa.get("question") or "")) for qa in obj.get("qas") or []], [str(obj.get("context") or "")]


DOCUMENT_FORMATS = ("squad2", "quac", "coqa")


def document_records(path: str, fmt: str) -> list[Record]:
    """The questions and passages of a one-document input file (the squad2, quac and coqa formats)."""
    document = json.loads("".join(read_lines(path)))
    out: list[Record] = []
    for article in document.get("data") or []:
        if fmt == "coqa":
            qas = [(f"{article['id']}_{q['turn_id']}", str(q.get("input_text") or ""))
                   for q in article.get("questions") or []]
            out.append((qas, [str(article.get("story") or "")]))
            continue
        for paragraph in article.get("paragraphs") or []:
            qas = [(str(qa["id"]), str(qa.get("question") or "")) for qa in paragraph.get("qas") or []]
            out.append((qas, [str(paragraph.get("context") or "")]))
    return out


def records(path: str, fmt: str) -> list[Record]:
    if fmt in DOCUMENT_FORMATS:
        return document_records(path, fmt)
    out: list[Record] = []
    try:
        for number, line in enumerate(read_lines(path), 1):
            try:
                record = parse(line, fmt)
            except Exception as exc:  # one bad record must not stop the others: answer what ids it shows ""
                log(f"{path}:{number}: unreadable record ({type(exc).__name__}: {exc})")
                record = [(qid, None) for qid in re.findall(r'"(?:qid|question_id)"\s*:\s*"?([^",}]+)', line)], []
            if record is not None:
                out.append(record)
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # a truncated or corrupt file: keep what was read
        if not out:
            raise
        log(f"{path}: stopped reading after {len(out)} records ({type(exc).__name__}: {exc})")
    return out


def run_deepread(path: str) -> dict[str, str]:
    """A Deep Read file: each question gets its story's best sentence, whole (the answer must be a sentence)."""
    document = json.loads("".join(read_lines(path)))
    stories = {str(story.get("id")): [str(s.get("text") or "") for s in story.get("sentences") or []]
               for story in document.get("stories") or []}
    units = {sid: [terms(text) for text in texts] for sid, texts in stories.items()}
    idf = Idf(u for story_units in units.values() for u in story_units)
    predictions: dict[str, str] = {}
    for question in document.get("questions") or []:
        story = str(question.get("story"))
        texts = stories.get(story) or []
        predictions[str(question["id"])] = texts[best_sentence(
            set(terms(str(question.get("question") or ""))), units[story], idf)] if texts else ""
    return predictions


def run_dataset(path: str, fmt: str) -> dict[str, str]:
    if fmt == "deepread":
        return run_deepread(path)
    recs = records(path, fmt)
    zh = is_chinese("".join(p for _, paragraphs in recs[:20] for p in paragraphs))
    passages = [Passage(paragraphs, zh) for _, paragraphs in recs]
    idf = Idf(units for p in passages for units in p.units)
    predictions: dict[str, str] = {}
    for (qas, _), passage in zip(recs, passages):
        for qid, question in qas:
            try:
                predictions[qid] = "" if question is None else passage.answer(question, idf)
            except Exception as exc:
                log(f"{path}: question {qid}: {type(exc).__name__}: {exc}")
                predictions[qid] = ""
    return predictions


def main() -> int:
    in_dir = os.environ.get("READERBOARD_INPUT", "/input")
    out_dir = os.environ.get("READERBOARD_OUTPUT", "/output")
    try:
        with open(os.path.join(in_dir, "manifest.json"), encoding="utf-8") as fh:
            manifest = json.load(fh)
        datasets = list(manifest["datasets"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"cannot read {in_dir}/manifest.json: {exc}")
        return 2
    print(f"baseline: {manifest.get('challenge')} / {manifest.get('phase')} / {manifest.get('portion')}: "
          f"{len(datasets)} datasets", flush=True)
    status = 0
    for ds in datasets:
        started = time.monotonic()
        if not isinstance(ds, dict):
            log(f"manifest: not a dataset: {ds!r}")
            status = 1
            continue
        name = ds.get("name")
        output = os.path.basename(str(ds.get("output") or f"{name}.json"))
        try:
            predictions = run_dataset(os.path.join(in_dir, os.path.basename(ds["input"])), ds.get("format", "mrqa"))
        except Exception as exc:
            log(f"{name}: {type(exc).__name__}: {exc}")
            predictions, status = {}, 1
        tmp = os.path.join(out_dir, f".{output}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(predictions, fh, ensure_ascii=False)
        os.replace(tmp, os.path.join(out_dir, output))
        print(f"baseline: {name}: {len(predictions)} questions in {time.monotonic() - started:.2f}s -> {output}",
              flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
