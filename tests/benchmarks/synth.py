"""Seeded synthetic inputs in each benchmark's own file format, for timing the scorers.

The shapes follow metrics-spec.md section 9, which describes the inputs the
official scripts were timed on: pseudo-words (English-like benchmarks) or
random CJK characters (DuReader); SQuAD/MRQA 3 golds of 1-8 tokens per question
in 120-200 token contexts; SQuAD v2.0 half unanswerable with an na_prob file;
DuReader 1-3 reference answers of 20-120 characters, 60 % DESCRIPTION / 25 %
ENTITY / 15 % YES_NO; QuAC 10 questions per dialog, 4 references, 20 %
CANNOTANSWER; CoQA 15 turns per story, 4 golds.

Predictions are realistic on purpose: mostly overlapping the golds (some exact,
some partial, some wrong, a few missing), so every scorer does its real work
(no short-cut on identical strings, no empty candidates).  The same seed gives
byte-identical files.

Command line: ``python -m tests.benchmarks.synth --n 20000 --out DIR``.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SEED = 20_000
KINDS: tuple[str, ...] = ("squad1", "squad2", "mrqa", "dureader", "quac", "coqa")

QUESTIONS_PER_PARAGRAPH = 5  # SQuAD dev has ~5 questions per paragraph
PARAGRAPHS_PER_ARTICLE = 40
QUAC_QUESTIONS_PER_DIALOG = 10  # 20,000 questions / 2,000 dialogs
COQA_TURNS_PER_STORY = 15  # 20,000 turns / 1,334 stories

# Function words first, so the Zipf weights make them frequent (and articles
# give normalize_answer something to remove).
_FUNCTION_WORDS = (
    "the", "a", "of", "and", "in", "to", "an", "was", "is", "for", "on", "with", "by", "as",
    "at", "from", "his", "her", "that", "it", "were", "which", "after", "their", "its",
)
_ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "ch", "cl", "dr", "gr", "kr", "pl", "sh", "st", "th", "tr")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "nd", "rt", "st", "x")


# --------------------------------------------------------------------- writing

def _write_json(path: Path, obj: Any, *, ascii_only: bool = True) -> Path:
    # Compact, like the released dev files; CJK stays raw UTF-8 as in DuReader's files.
    path.write_text(json.dumps(obj, ensure_ascii=ascii_only), encoding="utf-8")
    return path


def _write_json_lines(path: Path, rows: Iterable[Any], *, ascii_only: bool = True) -> Path:
    text = "".join(json.dumps(row, ensure_ascii=ascii_only) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")
    return path


def _write_json_lines_gz(path: Path, rows: Iterable[Any]) -> Path:
    data = "".join(json.dumps(row) + "\n" for row in rows).encode("utf-8")
    # mtime=0 and no file name in the header keep the bytes reproducible.
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz:
        gz.write(data)
    return path


def _hex_id(rng: random.Random, index: int, width: int) -> str:
    """A hex id of ``width`` digits, unique because the index is its tail."""
    return f"{rng.getrandbits(4 * (width - 8)):0{width - 8}x}{index:08x}"


# ------------------------------------------------------------------ vocabulary

@dataclass(frozen=True)
class Passage:
    """A whitespace-tokenised text and each token's character offset."""

    text: str
    tokens: list[str]
    offsets: list[int]

    def span(self, start: int, end: int) -> str:
        """Text of tokens start..end inclusive, as a substring of the passage."""
        return self.text[self.offsets[start]: self.offsets[end] + len(self.tokens[end])]


class Words:
    """Zipf-distributed pseudo-words with a little punctuation, case and numbers."""

    def __init__(self, rng: random.Random, size: int = 12_000) -> None:
        self.rng = rng
        vocab = list(_FUNCTION_WORDS)
        seen = set(vocab)
        while len(vocab) < size:
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS)
                for _ in range(rng.choice((1, 1, 2, 2, 2, 3)))
            )
            if word not in seen:
                seen.add(word)
                vocab.append(word)
        self.vocab = vocab
        total = 0.0
        self.cum_weights: list[float] = []
        for rank in range(len(vocab)):
            total += 1.0 / (rank + 2.7)
            self.cum_weights.append(total)

    def _decorate(self, word: str) -> str:
        r = self.rng.random()
        if r < 0.05:
            return word.capitalize()
        if r < 0.10:
            return word + self.rng.choice(",,,.;:")
        if r < 0.12:
            return self.rng.choice(
                (str(self.rng.randint(1000, 2020)), f"{self.rng.randint(1, 99)},{self.rng.randint(100, 999)}",
                 f"{self.rng.randint(1, 9)}.{self.rng.randint(0, 9)}%", str(self.rng.randint(2, 500)))
            )
        return word

    def tokens(self, count: int) -> list[str]:
        return [self._decorate(w) for w in self.rng.choices(self.vocab, cum_weights=self.cum_weights, k=count)]

    def sentence(self, low: int, high: int, end: str = ".") -> str:
        toks = self.tokens(self.rng.randint(low, high))
        toks[0] = toks[0].capitalize()
        return " ".join(toks) + end

    def passage(self, low: int, high: int, tail: str = "") -> Passage:
        tokens = self.tokens(self.rng.randint(low, high))
        if tail:
            tokens.append(tail)
        offsets: list[int] = []
        pos = 0
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok) + 1
        return Passage(" ".join(tokens), tokens, offsets)


def _shift_span(rng: random.Random, start: int, end: int, n_tokens: int, max_shift: int) -> tuple[int, int]:
    """A span overlapping-ish ``start..end``: each boundary moved by up to ``max_shift`` tokens."""
    s = min(max(0, start + rng.randint(-max_shift, max_shift)), n_tokens - 1)
    e = min(max(0, end + rng.randint(-max_shift, max_shift)), n_tokens - 1)
    return (s, e) if s <= e else (e, s)


def _random_span(rng: random.Random, n_tokens: int, low: int, high: int) -> tuple[int, int]:
    length = rng.randint(low, high)
    start = rng.randrange(0, max(1, n_tokens - length))
    return start, min(n_tokens - 1, start + length - 1)


def _surface_variant(rng: random.Random, text: str) -> str:
    """The same answer as a model might print it: case, article or final dot changed."""
    r = rng.random()
    if r < 0.2:
        return text.lower()
    if r < 0.3:
        return "the " + text
    if r < 0.4:
        return text + "."
    return text


# ------------------------------------------------------- SQuAD v1.1 / v2.0 / MRQA

@dataclass
class _SpanQuestion:
    qid: str
    question: str
    golds: list[tuple[str, int]]  # (text, answer_start); empty = unanswerable
    pred: str | None  # None = missing


def _span_golds(rng: random.Random, passage: Passage) -> list[tuple[str, int]]:
    """Three golds of 1-8 tokens: one span and two annotators' variants of it."""
    n = len(passage.tokens)
    start, end = _random_span(rng, n, 1, 8)
    golds = []
    for k in range(3):
        s, e = (start, end) if k == 0 or rng.random() < 0.5 else _shift_span(rng, start, end, n, 1)
        e = min(e, s + 7)
        golds.append((passage.span(s, e), passage.offsets[s]))
    return golds


def _span_prediction(rng: random.Random, passage: Passage, golds: list[tuple[str, int]]) -> str | None:
    """Mostly right: 45 % exact (up to normalisation), 33 % partial, 17 % wrong, 3 % empty, 2 % missing."""
    r = rng.random()
    if r < 0.02:
        return None
    if r < 0.05:
        return ""
    if r < 0.50:
        return _surface_variant(rng, rng.choice(golds)[0])
    n = len(passage.tokens)
    if r < 0.83:
        text, start_char = golds[0]
        start = bisect.bisect_right(passage.offsets, start_char) - 1
        end = start + len(text.split()) - 1
        s, e = _shift_span(rng, start, end, n, 3)
        return passage.span(s, e)
    s, e = _random_span(rng, n, 1, 8)
    return passage.span(s, e)


def _span_questions(
    rng: random.Random, words: Words, n: int, id_width: int, unanswerable: float
) -> list[tuple[Passage, list[_SpanQuestion]]]:
    """Paragraphs of 120-200 tokens, ``QUESTIONS_PER_PARAGRAPH`` questions each, ``n`` in all."""
    paragraphs: list[tuple[Passage, list[_SpanQuestion]]] = []
    index = 0
    while index < n:
        passage = words.passage(120, 200)
        questions = []
        for _ in range(min(QUESTIONS_PER_PARAGRAPH, n - index)):
            qid = _hex_id(rng, index, id_width)
            question = words.sentence(5, 12, "?")
            if rng.random() < unanswerable:
                golds: list[tuple[str, int]] = []
                # A model abstains (empty string) on most unanswerable questions.
                pred: str | None = "" if rng.random() < 0.55 else passage.span(*_random_span(rng, len(passage.tokens), 1, 6))
            else:
                golds = _span_golds(rng, passage)
                pred = _span_prediction(rng, passage, golds)
            questions.append(_SpanQuestion(qid, question, golds, pred))
            index += 1
        paragraphs.append((passage, questions))
    return paragraphs


def _squad_dataset(paragraphs: list[tuple[Passage, list[_SpanQuestion]]], version: str, words: Words) -> dict[str, Any]:
    articles: list[dict[str, Any]] = []
    for p_index, (passage, questions) in enumerate(paragraphs):
        if p_index % PARAGRAPHS_PER_ARTICLE == 0:
            articles.append({"title": "_".join(words.tokens(2)), "paragraphs": []})
        qas = []
        for q in questions:
            qa: dict[str, Any] = {
                "answers": [{"answer_start": start, "text": text} for text, start in q.golds],
                "question": q.question,
                "id": q.qid,
            }
            if version == "v2.0":
                qa["is_impossible"] = not q.golds
                if not q.golds:
                    # Real v2.0 files carry plausible answers on impossible questions.
                    s, e = _random_span(words.rng, len(passage.tokens), 1, 5)
                    qa["plausible_answers"] = [{"text": passage.span(s, e), "answer_start": passage.offsets[s]}]
            qas.append(qa)
        articles[-1]["paragraphs"].append({"context": passage.text, "qas": qas})
    return {"data": articles, "version": version}


def _predictions(paragraphs: list[tuple[Passage, list[_SpanQuestion]]]) -> dict[str, str]:
    return {q.qid: q.pred for _, qs in paragraphs for q in qs if q.pred is not None}


def generate_squad1(n: int, out_dir: Path, seed: int) -> dict[str, Path]:
    rng = random.Random(f"squad1-{seed}")
    words = Words(rng)
    paragraphs = _span_questions(rng, words, n, 24, unanswerable=0.0)
    return {
        "dataset": _write_json(out_dir / "dataset.json", _squad_dataset(paragraphs, "1.1", words)),
        "pred": _write_json(out_dir / "pred.json", _predictions(paragraphs)),
    }


def generate_squad2(n: int, out_dir: Path, seed: int) -> dict[str, Path]:
    rng = random.Random(f"squad2-{seed}")
    words = Words(rng)
    paragraphs = _span_questions(rng, words, n, 24, unanswerable=0.5)
    # evaluate-v2.0.py crashes on any missing prediction (spec 2.3): predict everything.
    for _, qs in paragraphs:
        for q in qs:
            if q.pred is None:
                q.pred = ""
    na_prob = {}
    for _, qs in paragraphs:
        for q in qs:
            # Informative but imperfect: unanswerable questions tend to get higher probabilities.
            u = rng.random()
            na_prob[q.qid] = 1.0 - u * u if not q.golds else u * u
    return {
        "dataset": _write_json(out_dir / "dataset.json", _squad_dataset(paragraphs, "v2.0", words)),
        "pred": _write_json(out_dir / "pred.json", _predictions(paragraphs)),
        "na_prob": _write_json(out_dir / "na_prob.json", na_prob),
    }


def _token_spans(passage: Passage, text: str, start_char: int) -> list[list[int]]:
    first = bisect.bisect_right(passage.offsets, start_char) - 1
    return [[first, first + len(text.split()) - 1]]


def _mrqa_line(passage: Passage, questions: list[_SpanQuestion]) -> dict[str, Any]:
    qas = []
    for q in questions:
        q_tokens = q.question.split()
        q_offsets = [0]
        for tok in q_tokens[:-1]:
            q_offsets.append(q_offsets[-1] + len(tok) + 1)
        qas.append({
            "answers": [text for text, _ in q.golds],
            "question": q.question,
            "id": q.qid[:24],
            "qid": q.qid,
            "question_tokens": [[t, o] for t, o in zip(q_tokens, q_offsets, strict=True)],
            "detected_answers": [
                {"text": text, "char_spans": [[start, start + len(text) - 1]],
                 "token_spans": _token_spans(passage, text, start)}
                for text, start in q.golds
            ],
        })
    return {
        "id": "",
        "context": passage.text,
        "context_tokens": [[t, o] for t, o in zip(passage.tokens, passage.offsets, strict=True)],
        "qas": qas,
    }


def generate_mrqa(n: int, out_dir: Path, seed: int) -> dict[str, Path]:
    rng = random.Random(f"mrqa-{seed}")
    words = Words(rng)
    paragraphs = _span_questions(rng, words, n, 32, unanswerable=0.0)
    rows: list[dict[str, Any]] = [{"header": {"dataset": "SynthQA", "split": "dev"}}]
    rows.extend(_mrqa_line(p, qs) for p, qs in paragraphs)
    return {
        "dataset": _write_json_lines_gz(out_dir / "dataset.jsonl.gz", rows),
        "pred": _write_json(out_dir / "pred.json", _predictions(paragraphs)),
    }


# ----------------------------------------------------------------- DuReader

class Hanzi:
    """Zipf-distributed CJK characters with Chinese punctuation and a few ASCII runs."""

    def __init__(self, rng: random.Random, size: int = 3_500) -> None:
        self.rng = rng
        chars = rng.sample(range(0x4E00, 0x9FA6), size)
        self.chars = [chr(c) for c in chars]
        total = 0.0
        self.cum_weights: list[float] = []
        for rank in range(size):
            total += 1.0 / (rank + 10)
            self.cum_weights.append(total)

    def text(self, length: int) -> str:
        chars = self.rng.choices(self.chars, cum_weights=self.cum_weights, k=length)
        for i in range(length):
            r = self.rng.random()
            if r < 0.06:
                chars[i] = self.rng.choice("，，，。、；")
            elif r < 0.075:
                chars[i] = self.rng.choice("0123456789abcxyz%")
        return "".join(chars)


def _mutate(rng: random.Random, hanzi: Hanzi, text: str) -> str:
    """A model's paraphrase: a window of the answer with some characters replaced or inserted."""
    keep = max(4, int(len(text) * rng.uniform(0.6, 1.0)))
    start = rng.randint(0, max(0, len(text) - keep))
    chars = list(text[start: start + keep])
    for _ in range(int(len(chars) * rng.uniform(0.05, 0.25))):
        pos = rng.randrange(len(chars))
        if rng.random() < 0.5:
            chars[pos] = hanzi.text(1)
        else:
            chars.insert(pos, hanzi.text(rng.randint(1, 3)))
    if rng.random() < 0.05:
        chars.insert(rng.randrange(len(chars)), " ")  # stray spaces are dropped by both metrics
    return "".join(chars)


def _entities(rng: random.Random, answer: str) -> list[str]:
    """1-3 substrings of the answer (2-6 characters), like DuReader's entity annotations."""
    out: list[str] = []
    for _ in range(rng.randint(1, 3)):
        size = rng.randint(2, 6)
        start = rng.randint(0, len(answer) - size)
        out.append(answer[start: start + size])
    return out


def _dureader_pair(rng: random.Random, hanzi: Hanzi, qid: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    r = rng.random()
    qtype = "DESCRIPTION" if r < 0.60 else "ENTITY" if r < 0.85 else "YES_NO"
    answers = [hanzi.text(rng.randint(20, 120)) for _ in range(rng.randint(1, 3))]
    ref: dict[str, Any] = {
        "question_id": qid,
        "question_type": qtype,
        "source": rng.choice(("search", "zhidao")),
        "question": hanzi.text(rng.randint(8, 20)) + "？",
        "answers": answers,
        # One label / entity list per reference answer (MRC2018 indexes them per answer, spec 5.5).
        "yesno_answers": [rng.choice(("Yes", "No", "Depends")) for _ in answers] if qtype == "YES_NO" else [],
        "entity_answers": [_entities(rng, a) for a in answers] if qtype == "ENTITY" else [[] for _ in answers],
    }
    if rng.random() < 0.01:
        return ref, None
    if rng.random() < 0.10:
        candidate = hanzi.text(rng.randint(20, 120))
    else:
        candidate = _mutate(rng, hanzi, rng.choice(answers))
    pred_entities: list[str] = []
    if qtype == "ENTITY":
        pool = [e for ents in ref["entity_answers"] for e in ents]
        pred_entities = rng.sample(pool, rng.randint(0, min(3, len(pool))))
        if rng.random() < 0.3:
            pred_entities.append(hanzi.text(rng.randint(2, 5)))
    yesno: list[str] = []
    if qtype == "YES_NO":
        yesno = [ref["yesno_answers"][0] if rng.random() < 0.7 else rng.choice(("Yes", "No", "Depends"))]
    pred = {
        "question_id": qid,
        "question_type": qtype,
        "answers": [candidate],
        "yesno_answers": yesno,
        "entity_answers": [pred_entities],
    }
    return ref, pred


def generate_dureader(n: int, out_dir: Path, seed: int) -> dict[str, Path]:
    """References and predictions as JSON lines, one question per line (``ref.json``, ``pred.json``)."""
    rng = random.Random(f"dureader-{seed}")
    hanzi = Hanzi(rng)
    refs: list[dict[str, Any]] = []
    preds: list[dict[str, Any]] = []
    for i in range(n):
        ref, pred = _dureader_pair(rng, hanzi, 180_000 + i)
        refs.append(ref)
        if pred is not None:
            preds.append(pred)
    rng.shuffle(preds)  # prediction order never matches the reference order in practice
    return {
        "ref": _write_json_lines(out_dir / "ref.json", refs, ascii_only=False),
        "pred": _write_json_lines(out_dir / "pred.json", preds, ascii_only=False),
    }


# -------------------------------------------------------------------- QuAC

CANNOT = "CANNOTANSWER"


def _quac_refs(rng: random.Random, passage: Passage, cannot: bool) -> list[tuple[str, int]]:
    """Four references: long overlapping spans, or CANNOTANSWER (sometimes mixed, for handle_cannot)."""
    n = len(passage.tokens) - 1  # the last token is CANNOTANSWER
    cannot_at = passage.offsets[-1]
    start, end = _random_span(rng, n, 6, 25)
    spans = []
    for _ in range(4):
        s, e = _shift_span(rng, start, end, n, 4)
        spans.append((passage.span(s, e), passage.offsets[s]))
    if cannot:
        k = 4 if rng.random() < 0.8 else 3
    else:
        k = 1 if rng.random() < 0.1 else 0
    return [(CANNOT, cannot_at)] * k + spans[k:]


def _quac_prediction(rng: random.Random, passage: Passage, refs: list[tuple[str, int]], cannot: bool) -> str:
    n = len(passage.tokens) - 1
    if cannot:
        return CANNOT if rng.random() < 0.6 else passage.span(*_random_span(rng, n, 4, 20))
    r = rng.random()
    if r < 0.08:
        return CANNOT
    span_refs = [ref for ref in refs if ref[0] != CANNOT]
    text, start_char = rng.choice(span_refs)
    if r < 0.30:
        return text
    if r < 0.90:
        start = bisect.bisect_right(passage.offsets, start_char) - 1
        end = start + len(text.split()) - 1
        return passage.span(*_shift_span(rng, start, end, n, 6))
    return passage.span(*_random_span(rng, n, 4, 20))


def _quac_dialog(
    rng: random.Random, words: Words, dialog_id: str, n_questions: int
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    passage = words.passage(250, 450, tail=CANNOT)
    qas = []
    pred: dict[str, list[str]] = {"qid": [], "best_span_str": [], "yesno": [], "followup": []}
    for q in range(n_questions):
        qid = f"{dialog_id}_q#{q}"
        cannot = rng.random() < 0.2
        refs = _quac_refs(rng, passage, cannot)
        yesno = rng.choice("xxxxyn")
        followup = rng.choice("yyymnn")
        qas.append({
            "id": qid,
            "question": words.sentence(3, 9, "?"),
            "yesno": yesno,
            "followup": followup,
            "answers": [{"text": text, "answer_start": start} for text, start in refs],
            "orig_answer": {"text": refs[0][0], "answer_start": refs[0][1]},
        })
        if rng.random() < 0.005:
            continue  # a missing prediction
        pred["qid"].append(qid)
        pred["best_span_str"].append(_quac_prediction(rng, passage, refs, cannot))
        pred["yesno"].append(yesno if rng.random() < 0.85 else rng.choice("xyn"))
        pred["followup"].append(followup if rng.random() < 0.75 else rng.choice("ymn"))
    article = {
        "title": " ".join(words.tokens(2)).title(),
        "section_title": " ".join(words.tokens(3)).title(),
        "background": words.sentence(20, 40),
        "paragraphs": [{"id": dialog_id, "context": passage.text, "qas": qas}],
    }
    return article, pred


def generate_quac(n: int, out_dir: Path, seed: int) -> dict[str, Path]:
    """``dataset.json`` (QuAC's SQuAD-like val file) and ``pred.jsonl`` (one line per dialog)."""
    rng = random.Random(f"quac-{seed}")
    words = Words(rng)
    articles: list[dict[str, Any]] = []
    pred_lines: list[dict[str, list[str]]] = []
    for d, count in enumerate(_split(n, QUAC_QUESTIONS_PER_DIALOG)):
        article, pred = _quac_dialog(rng, words, f"C_{_hex_id(rng, d, 32)}_{d % 2}", count)
        articles.append(article)
        if pred["qid"]:
            pred_lines.append(pred)
    return {
        "dataset": _write_json(out_dir / "dataset.json", {"data": articles}),
        "pred": _write_json_lines(out_dir / "pred.jsonl", pred_lines),
    }


# -------------------------------------------------------------------- CoQA

_COQA_SOURCES = (("mctest", 2), ("gutenberg", 2), ("race", 3), ("cnn", 2), ("wikipedia", 2),
                 ("reddit", 1), ("science", 1))


def _split(total: int, per_group: int) -> list[int]:
    """``total`` items in ceil(total/per_group) groups whose sizes differ by at most one."""
    groups = max(1, math.ceil(total / per_group))
    base, extra = divmod(total, groups)
    return [base + (1 if g < extra else 0) for g in range(groups)]


def _coqa_answer(rng: random.Random, passage: Passage, start: int, end: int, turn: int) -> dict[str, Any]:
    free_form = passage.span(start, end)
    r = rng.random()
    if r < 0.15:
        free_form = rng.choice(("yes", "no", "Yes", "No"))
    elif r < 0.17:
        free_form = "unknown"
    elif r < 0.4:
        # Annotators rephrase: drop a word, lower-case...
        words = free_form.split()
        free_form = " ".join(words[1:] if len(words) > 1 else words).lower()
    span_start = passage.offsets[start]
    span_text = passage.span(start, end)
    return {"span_start": span_start, "span_end": span_start + len(span_text), "span_text": span_text,
            "input_text": free_form, "turn_id": turn}


def _coqa_story(rng: random.Random, words: Words, index: int, turns: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    passage = words.passage(200, 350)
    n = len(passage.tokens)
    story_id = _hex_id(rng, index, 30)
    sources, weights = zip(*_COQA_SOURCES, strict=True)
    story: dict[str, Any] = {
        "source": rng.choices(sources, weights=weights)[0],
        "id": story_id,
        "filename": f"{story_id}.txt",
        "story": passage.text,
        "name": f"{story_id}.txt",
        "questions": [],
        "answers": [],
        "additional_answers": {"0": [], "1": [], "2": []},
    }
    preds = []
    for turn in range(1, turns + 1):
        story["questions"].append({"input_text": words.sentence(2, 8, "?"), "turn_id": turn})
        start, end = _random_span(rng, n, 1, 5)
        main = _coqa_answer(rng, passage, start, end, turn)
        story["answers"].append(main)
        for k in ("0", "1", "2"):
            same = rng.random() < 0.5
            s, e = (start, end) if same else _shift_span(rng, start, end, n, 1)
            story["additional_answers"][k].append(main if same else _coqa_answer(rng, passage, s, e, turn))
        if rng.random() < 0.005:
            continue  # a missing prediction
        r = rng.random()
        if r < 0.45:
            answer = _surface_variant(rng, main["input_text"])
        elif r < 0.85:
            answer = passage.span(*_shift_span(rng, start, end, n, 2))
        else:
            answer = passage.span(*_random_span(rng, n, 1, 5))
        preds.append({"id": story_id, "turn_id": turn, "answer": answer})
    return story, preds


def generate_coqa(n: int, out_dir: Path, seed: int) -> dict[str, Path]:
    """``dataset.json`` (CoQA dev format, 3 additional annotators) and ``pred.json`` (a list of turns)."""
    rng = random.Random(f"coqa-{seed}")
    words = Words(rng)
    stories: list[dict[str, Any]] = []
    preds: list[dict[str, Any]] = []
    for index, turns in enumerate(_split(n, COQA_TURNS_PER_STORY)):
        story, story_preds = _coqa_story(rng, words, index, turns)
        stories.append(story)
        preds.extend(story_preds)
    return {
        "dataset": _write_json(out_dir / "dataset.json", {"version": "1.0", "data": stories}),
        "pred": _write_json(out_dir / "pred.json", preds),
    }


# ------------------------------------------------------------------- public

_GENERATORS: dict[str, Callable[[int, Path, int], dict[str, Path]]] = {
    "squad1": generate_squad1,
    "squad2": generate_squad2,
    "mrqa": generate_mrqa,
    "dureader": generate_dureader,
    "quac": generate_quac,
    "coqa": generate_coqa,
}


def generate(kind: str, n: int, out_dir: Path, *, seed: int = DEFAULT_SEED) -> dict[str, Path]:
    """Write ``n`` questions of benchmark ``kind`` into ``out_dir``; return the files by role.

    Roles: ``dataset`` and ``pred`` (``ref`` and ``pred`` for DuReader), plus
    ``na_prob`` for SQuAD v2.0.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    out_dir.mkdir(parents=True, exist_ok=True)
    return _GENERATORS[kind](n, out_dir, seed)


def generate_all(
    n: int, root: Path, *, seed: int = DEFAULT_SEED, kinds: Sequence[str] = KINDS
) -> dict[str, dict[str, Path]]:
    """One sub-folder of ``root`` per kind."""
    return {kind: generate(kind, n, root / kind, seed=seed) for kind in kinds}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.synth", description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="questions per benchmark (default 20000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, required=True, help="folder to write one sub-folder per benchmark into")
    parser.add_argument("--only", default=",".join(KINDS), help=f"comma-separated subset of {','.join(KINDS)}")
    args = parser.parse_args(argv)
    kinds = [k for k in args.only.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown kind(s): {', '.join(unknown)}")
    for kind, files in generate_all(args.n, args.out, seed=args.seed, kinds=kinds).items():
        print(kind, " ".join(str(p) for p in files.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
