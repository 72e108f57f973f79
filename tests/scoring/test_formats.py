"""scoring.formats: telling a benchmark's file from MRQA JSON lines, and reading MRQA headers cheaply."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence

import pytest

from scoring.formats import describe_format, mrqa_header, not_mrqa_hint

SQUAD_V1 = {"version": "1.1", "data": [{"title": "T", "paragraphs": [
    {"context": "c", "qas": [{"id": "q1", "question": "?", "answers": [{"text": "c", "answer_start": 0}]}]}]}]}
SQUAD_V2 = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [
    {"context": "c", "qas": [{"id": "q1", "question": "?", "answers": [], "is_impossible": True}]}]}]}
QUAC = {"data": [{"paragraphs": [{"id": "C_1", "context": "c CANNOTANSWER", "qas": [
    {"id": "C_1_q#0", "question": "?", "answers": [], "followup": "y", "yesno": "x"}]}]}]}
COQA = {"version": "1.0", "data": [{"id": "s1", "story": "s", "questions": [], "answers": []}]}
DUREADER = [{"question_id": 1, "question": "?", "documents": [], "answers": ["a"]}]
MRQA = [{"header": {"dataset": "SQuAD", "split": "dev"}}, {"id": "c1", "context": "c", "qas": []}]


def lines(objects: Sequence[object]) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode()


@pytest.mark.parametrize(("raw", "kind"), [
    (json.dumps(SQUAD_V1).encode(), "a SQuAD 1.1 JSON file"),
    (json.dumps(SQUAD_V1, indent=2).encode(), "a SQuAD 1.1 JSON file"),  # pretty-printed: line 1 is "{"
    (gzip.compress(json.dumps(SQUAD_V1).encode(), mtime=0), "a SQuAD 1.1 JSON file"),
    (b"\xef\xbb\xbf" + json.dumps(SQUAD_V2).encode(), "a SQuAD 2.0 JSON file"),
    (json.dumps(QUAC).encode(), "a QuAC JSON file"),
    (json.dumps(COQA).encode(), "a CoQA JSON file"),
    (lines(DUREADER), "a DuReader/MRC2018 JSON-lines file"),
    (gzip.compress(lines(MRQA), mtime=0), None),
    (b"not json at all", None),
    (b"\xff\xfe", None),
    (b"", None),
])
def test_benchmark_formats_are_recognised(raw: bytes, kind: str | None) -> None:
    assert describe_format(raw) == kind


def test_the_hint_says_what_a_file_is_and_how_to_get_mrqa() -> None:
    hint = not_mrqa_hint(json.dumps(SQUAD_V2).encode())
    assert hint is not None
    assert hint.startswith("this is a SQuAD 2.0 JSON file, not MRQA JSON lines. Convert it:")
    assert '"qid": its id' in hint and "is_impossible" in hint and "metric_suite: squad2" in hint
    assert not_mrqa_hint(json.dumps(QUAC).encode()) == (
        "this is a QuAC JSON file, not MRQA JSON lines; a challenge on this data takes metric_suite: quac")
    assert not_mrqa_hint(gzip.compress(lines(MRQA))) is None


def test_the_mrqa_header_is_read_from_the_first_line_only() -> None:
    assert mrqa_header(gzip.compress(lines(MRQA))) == {"dataset": "SQuAD", "split": "dev"}
    assert mrqa_header(lines(MRQA) + b"{not json") == {"dataset": "SQuAD", "split": "dev"}
    assert mrqa_header(lines(MRQA[1:])) is None  # no header: some files in the wild have none
    assert mrqa_header(b'{"header": "dev"}\n') is None
    assert mrqa_header(gzip.compress(b"x" * 100)[:20]) is None  # a truncated gzip stream
