"""Small gold files of the SQuAD 2.0, QuAC and CoQA suites, and checks shared by the suite tests."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from scoring.errors import ScoringError

NORMANS = (
    "The Normans (Norman: Nourmands; French: Normands) were the people who in the 10th and 11th centuries "
    "gave their name to Normandy, a region in France. They were descended from Norse raiders and pirates "
    "from Denmark, Iceland and Norway who, under their leader Rollo, agreed to swear fealty to King "
    "Charles III of West Francia."
)


COMPLEXITY = (
    "Computational complexity theory is a branch of the theory of computation in theoretical computer "
    "science that focuses on classifying computational problems according to their inherent difficulty. "
    "A computational problem is understood to be a task that is in principle amenable to being solved by "
    "a computer."
)


def _squad_qa(context: str, qid: str, question: str, answers: list[str], *, plausible: str = "",
              level: str | None = None) -> dict[str, Any]:
    qa: dict[str, Any] = {
        "question": question,
        "id": qid,
        "answers": [{"text": a, "answer_start": context.find(a)} for a in answers],
        "is_impossible": not answers,
    }
    if plausible:
        qa["plausible_answers"] = [{"text": plausible, "answer_start": context.find(plausible)}]
    if level is not None:
        qa["level"] = level
    return qa


def squad2_gold() -> dict[str, Any]:
    """Two SQuAD 2.0 articles; the unanswerable questions carry Nakanishi-style difficulty levels."""
    return {
        "version": "v2.0",
        "data": [
            {"title": "Normans", "paragraphs": [{"context": NORMANS, "qas": [
                _squad_qa(NORMANS, "5733be284776f41900661182", "In what country is Normandy located?",
                          ["France", "France", "France"]),
                _squad_qa(NORMANS, "5733be284776f4190066117f", "When were the Normans in Normandy?",
                          ["10th and 11th centuries", "in the 10th and 11th centuries", "10th and 11th centuries"]),
                _squad_qa(NORMANS, "5733be284776f41900661180", "Who was the Norse leader?", ["Rollo", "Rollo"]),
                _squad_qa(NORMANS, "5ad39d53604f3c001a3fe8d1",
                          "Who gave their name to Normandy in the 1000's and 1100's", [],
                          plausible="Normans", level="LEVEL1"),
                _squad_qa(NORMANS, "5ad39d53604f3c001a3fe8d2", "What is France a region of?", [],
                          plausible="Normandy", level="LEVEL2"),
            ]}]},
            {"title": "Computational_complexity_theory", "paragraphs": [{"context": COMPLEXITY, "qas": [
                _squad_qa(COMPLEXITY, "56e16182e3433e1400422e28",
                          "What branch of theoretical computer science deals with broadly classifying "
                          "computational problems by difficulty?",
                          ["Computational complexity theory", "Computational complexity theory"]),
                _squad_qa(COMPLEXITY, "56e16182e3433e1400422e29",
                          "What is the term for a task that generally lends itself to being solved by a computer?",
                          ["A computational problem", "computational problem"]),
                _squad_qa(COMPLEXITY, "5ad5316b5b96ef001a10ab72",
                          "What is a branch of theoretical computer science that classifies problems by their "
                          "sequence?", [], plausible="Computational complexity theory", level="LEVEL1"),
                _squad_qa(COMPLEXITY, "5ad5316b5b96ef001a10ab73",
                          "What is understood to be a task that is in principle not amendable to being solved "
                          "by a computer?", [], plausible="A computational problem", level="LEVEL3"),
            ]}]},
        ],
    }


def squad_qas(gold: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


ELLA = (
    "In 1934 Fitzgerald made her singing debut at the Apollo Theater in Harlem, where she won first prize in "
    "an amateur contest. She joined Chick Webb's orchestra in 1935 and recorded her first hit, "
    "\"A-Tisket, A-Tasket\", in 1938. CANNOTANSWER"
)


TURING = (
    "During the Second World War, Turing worked for the Government Code and Cypher School at Bletchley Park. "
    "He devised a number of techniques for speeding the breaking of German ciphers, including improvements "
    "to the Polish bombe method. CANNOTANSWER"
)


def _quac_qa(context: str, qid: str, question: str, answer: str, yesno: str, followup: str,
             n_refs: int = 3) -> dict[str, Any]:
    ref = {"text": answer, "answer_start": context.find(answer)}
    return {"followup": followup, "yesno": yesno, "question": question, "answers": [dict(ref)] * n_refs,
            "id": qid, "orig_answer": dict(ref)}


def quac_gold() -> dict[str, Any]:
    """Two QuAC dialogs; each question's references agree, so gold answers score 100."""
    ella, turing = "C_2d1a6b7c0e4f4ad8b5f1e0c9a7d3b2e1_1", "C_9f8e7d6c5b4a43219876fedcba012345_0"
    return {"data": [
        {"title": "Ella Fitzgerald", "section_title": "Early career",
         "background": "Ella Jane Fitzgerald was an American jazz singer, sometimes referred to as the First Lady "
                       "of Song.",
         "paragraphs": [{"id": ella, "context": ELLA, "qas": [
             _quac_qa(ELLA, f"{ella}_q#0", "What happened in 1934?",
                      "Fitzgerald made her singing debut at the Apollo Theater in Harlem,", "x", "y"),
             _quac_qa(ELLA, f"{ella}_q#1", "Did she win anything there?",
                      "she won first prize in an amateur contest.", "y", "y"),
             _quac_qa(ELLA, f"{ella}_q#2", "What did she do next?",
                      "She joined Chick Webb's orchestra in 1935", "x", "m", n_refs=2),
             _quac_qa(ELLA, f"{ella}_q#3", "Who was her manager?", "CANNOTANSWER", "x", "n"),
         ]}]},
        {"title": "Alan Turing", "section_title": "Bletchley Park",
         "background": "Alan Mathison Turing was an English mathematician, computer scientist and cryptanalyst.",
         "paragraphs": [{"id": turing, "context": TURING, "qas": [
             _quac_qa(TURING, f"{turing}_q#0", "Where did Turing work during the war?",
                      "the Government Code and Cypher School at Bletchley Park.", "x", "y"),
             _quac_qa(TURING, f"{turing}_q#1", "What did he do there?",
                      "He devised a number of techniques for speeding the breaking of German ciphers,", "x", "y"),
             _quac_qa(TURING, f"{turing}_q#2", "Did he get a medal for it?", "CANNOTANSWER", "x", "n"),
         ]}]},
    ]}


VATICAN = (
    "The Vatican Apostolic Library, more commonly called the Vatican Library or simply the Vat, is the library "
    "of the Holy See, located in Vatican City. Formally established in 1475, although it is much older, it is "
    "one of the oldest libraries in the world and contains one of the most significant collections of "
    "historical texts. It has 75,000 codices from throughout history, as well as 1.1 million printed books. "
    "Scholars have traditionally divided the history of the library into five periods."
)


PLANTS = (
    "Photosynthesis is the process by which green plants use sunlight to make food from carbon dioxide and "
    "water. The process takes place mainly in the leaves, inside small structures called chloroplasts, and "
    "it releases oxygen as a by-product."
)


def _coqa_story(story_id: str, source: str, filename: str, story: str,
                turns: list[tuple[str, list[str], str]]) -> dict[str, Any]:
    """``turns``: (question, [main answer, then one answer per additional annotator], rationale)."""

    def answer(text: str, rationale: str, turn_id: int) -> dict[str, Any]:
        start = story.find(rationale)
        return {"span_start": start, "span_end": start + len(rationale) if start >= 0 else -1,
                "span_text": rationale if start >= 0 else "unknown", "input_text": text, "turn_id": turn_id}

    n_extra = len(turns[0][1]) - 1
    return {
        "source": source, "id": story_id, "filename": filename, "story": story,
        "questions": [{"input_text": q, "turn_id": i + 1} for i, (q, _, _) in enumerate(turns)],
        "answers": [answer(golds[0], r, i + 1) for i, (_, golds, r) in enumerate(turns)],
        "additional_answers": {
            str(k): [answer(golds[k + 1], r, i + 1) for i, (_, golds, r) in enumerate(turns)] for k in range(n_extra)
        },
        "name": filename,
    }


def coqa_gold() -> dict[str, Any]:
    """A Wikipedia story (in domain) and a science one (out of domain); annotators agree up to normalisation."""
    return {"version": "1.0", "data": [
        _coqa_story("3zotghdk5ibi9cex97fepx7jetpops", "wikipedia", "Vatican_Library.txt", VATICAN, [
            ("When was the Vat formally opened?", ["in 1475", "In 1475.", "in 1475"], "Formally established in 1475"),
            ("what is the library for?", ["research", "Research", "research."], "historical texts"),
            ("how many printed books does it contain?", ["1.1 million", "1.1 million", "1.1 million."],
             "1.1 million printed books"),
            ("Who was its first librarian?", ["unknown", "Unknown", "unknown"], ""),
        ]),
        _coqa_story("3h7z272lx76uk5mrhpyl1vcfd1tpl0", "science", "photosynthesis.txt", PLANTS, [
            ("What do plants use to make food?", ["sunlight", "sunlight", "Sunlight"], "use sunlight"),
            ("Where does it mainly happen?", ["in the leaves", "the leaves", "In the leaves."],
             "mainly in the leaves"),
            ("Inside what?", ["small structures called chloroplasts", "small structures called chloroplasts",
                              "Small structures called chloroplasts"], "inside small structures called chloroplasts"),
        ]),
    ]}


def write(tmp_path: Path, document: Any, name: str = "gold.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def encode(document: Any) -> bytes:
    return json.dumps(document).encode("utf-8")


def assert_metric_names(names: Iterable[str]) -> None:
    for name in names:
        assert re.fullmatch(r"[a-z0-9_]{1,64}", name), name


def rejected(inspect: Callable[[], Any], *fragments: str) -> ScoringError:
    """The error ``inspect`` raises, which must name every fragment and never the temporary copy."""
    with pytest.raises(ScoringError) as caught:
        inspect()
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    assert "/tmp" not in message and "tmp" not in (caught.value.path or ""), message
    return caught.value


SPEC = """
slug: {key}-demo
title: {key} demo
metric_suite: {key}
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, quota: {{per_day: 5}}, allowed_kinds: [predictions]}}
datasets:
  - {{slug: main, name: Main, split: II, files: {{dev: {gold}}}}}
"""
