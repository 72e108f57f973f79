"""Records of each input format with every field the format has, and canaries where systems must not look.

A canary is a unique string starting with ``CANARY-``: it is planted in every
answer-bearing text field and in fields a converter might add at every level.
Answer-bearing fields that hold numbers or booleans (spans, ``is_selected``,
``is_impossible``...) cannot carry one, so tests check their names against
:data:`ANSWER_KEYS`.  The MRQA and DuReader records are also valid gold for
their suites, so the platform's tests can upload them as they are.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

from scoring.inputs import Fields

CANARY = "CANARY-"

# Every field name that holds an answer, points at one, or says whether there is one.
ANSWER_KEYS = frozenset({
    # MRQA
    "answers", "detected_answers", "char_spans", "token_spans",
    # DuReader / MRC2018
    "entity_answers", "yesno_answers", "segmented_answers", "fake_answers", "answer_spans", "answer_docs",
    "match_scores", "is_selected", "most_related_para",
    # SQuAD 2.0
    "plausible_answers", "is_impossible", "answer_start",
    # QuAC
    "orig_answer", "yesno", "followup",
    # CoQA
    "additional_answers", "span_start", "span_end", "span_text",
    # Deep Read (answers, above, are its answer keys): the sentences a person marked as answering
    "answer_sentences",
})


def canary(tag: str) -> str:
    return CANARY + tag


def canaries_in(data: bytes | str) -> list[str]:
    """Every canary that survived, by its tag (an empty list is what the tests want)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return re.findall(r"CANARY-[\w.#\[\]-]+", text)


def allowed_keys(fields: Fields) -> set[str]:
    """Every field name an allowlist lets through, at any depth."""
    out = set(fields.keep) | set(fields.objects) | set(fields.lists)
    for inner in (*fields.objects.values(), *fields.lists.values()):
        out |= allowed_keys(inner)
    return out


def keys_of(document: Any) -> set[str]:
    if isinstance(document, dict):
        return set(document) | {k for v in document.values() for k in keys_of(v)}
    if isinstance(document, list):
        return {k for v in document for k in keys_of(v)}
    return set()


# --------------------------------------------------------------------------- MRQA

TERN = "The ferry Tern was launched in 1956 at Leith."
TERN_TOKENS = [["The", 0], ["ferry", 4], ["Tern", 10], ["was", 15], ["launched", 19], ["in", 28], ["1956", 31]]
TERN_QUESTIONS = ("What was launched in 1956?", "Where was the ferry launched?")
MRQA_HEADER = {"header": {"dataset": "TernQA", "split": "dev", "converted_by": canary("header.converted_by")},
               "notes": canary("header-line.notes")}


def mrqa_qa(qid: str, question: str) -> dict[str, Any]:
    return {
        "qid": qid,
        "question": question,
        "question_tokens": [[word, 0] for word in question.split()],
        "id": canary(f"{qid}.source-id"),  # the source dataset's own id, which would name it
        "answers": [canary(f"{qid}.answers")],
        "detected_answers": [{"text": canary(f"{qid}.detected_answers.text"), "char_spans": [[10, 13]],
                              "token_spans": [[2, 2]]}],
        "char_spans": [[10, 13]],
        "token_spans": [[2, 2]],
        "answer_start": 10,
        "annotator_note": canary(f"{qid}.annotator_note"),
    }


def mrqa_context(cid: str, *qids: str) -> dict[str, Any]:
    return {
        "id": cid,
        "context": TERN,
        "context_tokens": TERN_TOKENS,
        "qas": [mrqa_qa(qid, question) for qid, question in zip(qids, TERN_QUESTIONS, strict=False)],
        "source_url": canary(f"{cid}.source_url"),
        "answer_sentences": [canary(f"{cid}.answer_sentences")],
    }


def mrqa_lines() -> list[dict[str, Any]]:
    return [MRQA_HEADER, mrqa_context("ctx-tern-1", "q-tern-1", "q-tern-2"), mrqa_context("ctx-tern-2", "q-tern-3")]


def mrqa_gzip(lines: list[dict[str, Any]]) -> bytes:
    return gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode("utf-8"), mtime=0)


# --------------------------------------------------------------------------- DuReader

def dureader_document(n: int, *, selected: bool) -> dict[str, Any]:
    paragraphs = [f"上海迪士尼乐园第{n}段说明。", "游客可以携带密封食品入园。"]
    return {
        "is_selected": selected,
        "title": f"上海迪士尼可以带吃的进去吗_{n}",
        "most_related_para": 1,
        "segmented_title": ["上海", "迪士尼", "可以", "带", "吃的", "进去", "吗"],
        "segmented_paragraphs": [list(p) for p in paragraphs],
        "paragraphs": paragraphs,
        "bs_rank_pos": n,
        "answer_paragraph": canary(f"doc{n}.answer_paragraph"),
        "url": canary(f"doc{n}.url"),
    }


def dureader_record(question_id: int = 186358) -> dict[str, Any]:
    tag = f"q{question_id}"
    return {
        "question_id": question_id,
        "question": "上海迪士尼可以带吃的进去吗",
        "segmented_question": ["上海", "迪士尼", "可以", "带", "吃的", "进去", "吗"],
        "question_type": "YES_NO",
        "fact_or_opinion": "FACT",
        "yesno_type": "FACT",
        "source": "search",
        "documents": [dureader_document(0, selected=True), dureader_document(1, selected=False)],
        "answers": [canary(f"{tag}.answers.0"), canary(f"{tag}.answers.1")],
        "entity_answers": [[canary(f"{tag}.entity_answers")], []],
        "yesno_answers": [canary(f"{tag}.yesno_answers"), "Yes"],
        "segmented_answers": [[canary(f"{tag}.segmented_answers")], ["可以"]],
        "fake_answers": [canary(f"{tag}.fake_answers")],
        "answer_spans": [[0, 15]],
        "answer_docs": [0],
        "match_scores": [0.93],
        "annotator": canary(f"{tag}.annotator"),
    }


def dureader_lines() -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (dureader_record(186358),
                                                                       dureader_record(186359))).encode("utf-8")


# --------------------------------------------------------------------------- SQuAD 2.0

NORMANS = "The Normans gave their name to Normandy, a region in France."


def squad2_document() -> dict[str, Any]:
    return {
        "version": "v2.0",
        "data": [{
            "title": "Normans",
            "source_url": canary("article.source_url"),
            "paragraphs": [{
                "context": NORMANS,
                "qas": [
                    {"question": "In what country is Normandy located?", "id": "5733be284776f41900661182",
                     "answers": [{"text": canary("182.answers.text"), "answer_start": 55}],
                     "is_impossible": False, "level": "LEVEL1", "reviewer": canary("182.reviewer")},
                    {"question": "Who gave their name to Normandy in the 1000s?", "id": "5ad39d53604f3c001a3fe8d1",
                     "answers": [], "plausible_answers": [{"text": canary("8d1.plausible_answers.text"),
                                                           "answer_start": 4}],
                     "is_impossible": True, "level": "LEVEL2", "answer_hint": canary("8d1.answer_hint")},
                ],
                "paragraph_note": canary("paragraph.paragraph_note"),
            }],
        }],
        "split_note": canary("document.split_note"),
    }


# --------------------------------------------------------------------------- QuAC

ELLA = "In 1934 Fitzgerald made her singing debut at the Apollo Theater in Harlem. CANNOTANSWER"
ELLA_DIALOG = "C_2d1a6b7c0e4f4ad8b5f1e0c9a7d3b2e1_1"


def quac_qa(n: int, question: str) -> dict[str, Any]:
    qid = f"{ELLA_DIALOG}_q#{n}"
    return {
        "followup": canary(f"q{n}.followup"),
        "yesno": canary(f"q{n}.yesno"),
        "question": question,
        "answers": [{"text": canary(f"q{n}.answers.text"), "answer_start": 8}],
        "id": qid,
        "orig_answer": {"text": canary(f"q{n}.orig_answer.text"), "answer_start": 8},
        "worker_id": canary(f"q{n}.worker_id"),
    }


def quac_document() -> dict[str, Any]:
    return {"data": [{
        "title": "Ella Fitzgerald",
        "section_title": "Early career",
        "background": "Ella Jane Fitzgerald was an American jazz singer.",
        "wiki_url": canary("article.wiki_url"),
        "paragraphs": [{
            "id": ELLA_DIALOG,
            "context": ELLA,
            "qas": [quac_qa(0, "What happened in 1934?"), quac_qa(1, "Did she win anything?")],
            "dialog_answers": [canary("paragraph.dialog_answers")],
        }],
    }]}


# --------------------------------------------------------------------------- CoQA

KITTEN = "Once upon a time, in a barn near a farm house, there lived a little white kitten named Cotton."
COQA_STORY = "3dr23u6we5exclen4th8uq9rb42tel"


def coqa_answer(turn: int, kind: str) -> dict[str, Any]:
    return {"span_start": 59, "span_end": 93, "span_text": canary(f"t{turn}.{kind}.span_text"),
            "input_text": canary(f"t{turn}.{kind}.input_text"), "turn_id": turn, "bad_turn": canary(f"t{turn}.{kind}.bad")}


def coqa_document() -> dict[str, Any]:
    return {"version": "1.0", "data": [{
        "source": "mctest",
        "id": COQA_STORY,
        "filename": canary("story.filename"),
        "story": KITTEN,
        "questions": [
            {"input_text": "what color was cotton?", "turn_id": 1, "bad_turn": canary("t1.question.bad")},
            {"input_text": "where did she live?", "turn_id": 2},
        ],
        "answers": [coqa_answer(1, "answers"), coqa_answer(2, "answers")],
        "additional_answers": {str(k): [coqa_answer(1, f"extra{k}"), coqa_answer(2, f"extra{k}")] for k in range(3)},
        "name": canary("story.name"),
        "rationale_notes": canary("story.rationale_notes"),
    }]}


# --------------------------------------------------------------------------- Deep Read

KITE_STORY = "rm3-12"


def deepread_document() -> dict[str, Any]:
    """A Deep Read data file (scoring.deepread): answer keys are free text, the marked sentences are ids."""
    return {
        "stories": [{
            "id": KITE_STORY,
            "title": "The Red Kite",
            "publisher_code": canary("story.publisher_code"),
            "sentences": [
                {"id": 1, "text": "Tom built a red kite with his grandfather.", "is_answer": True,
                 "note": canary("s1.note")},
                {"id": "2", "text": "They flew it on the hill behind the school."},
            ],
        }],
        "questions": [
            {"id": "rm3-12-1", "story": KITE_STORY, "question": "Who helped Tom build the kite?",
             "answers": [canary("q1.answers.0"), canary("q1.answers.1")], "answer_sentences": [1],
             "rationale": canary("q1.rationale")},
            {"id": "rm3-12-2", "story": KITE_STORY, "question": "Where did they fly the kite?",
             "answers": [canary("q2.answers.0")], "answer_sentences": ["2"]},
        ],
        "annotator": canary("document.annotator"),
    }


def plant(document: Any, *, keep: frozenset[str] = frozenset(), where: str = "doc") -> Any:
    """``document`` (changed in place) with a canary in every text under an answer-bearing key, and one
    more unknown field with a canary in every other object.

    ``keep``: answer-bearing keys whose texts the gold's loader checks (QuAC's dialog acts), left as
    they are; tests check those by name.
    """
    if isinstance(document, dict):
        for key, value in document.items():
            inner = f"{where}.{key}"
            if key in ANSWER_KEYS:
                if key not in keep:
                    document[key] = _texts_to_canaries(value, inner)
            else:
                plant(value, keep=keep, where=inner)
        document["converter_note"] = canary(f"{where}.converter_note")
    elif isinstance(document, list):
        for i, value in enumerate(document):
            plant(value, keep=keep, where=f"{where}[{i}]")
    return document


def _texts_to_canaries(value: Any, where: str) -> Any:
    if isinstance(value, str):
        return canary(where)
    if isinstance(value, list):
        return [_texts_to_canaries(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _texts_to_canaries(v, f"{where}.{k}") for k, v in value.items()}
    return value
