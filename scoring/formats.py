"""Telling which benchmark format a file is in, so a wrong one is named rather than mis-parsed.

An organizer who gives a SQuAD JSON file where MRQA JSON lines are expected
otherwise reads "invalid JSON: Expecting property name" (a pretty-printed
document parsed line by line) or "expected a context object with a 'qas'
list": true, and no help.  :func:`describe_format` looks at the whole file
and says what it is; :func:`not_mrqa_hint` adds how to convert it to MRQA.

:func:`mrqa_header` reads an MRQA file's header line without parsing the rest,
so a loader can compare it with what the file is said to be.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from typing import Any

_GZIP_MAGIC = b"\x1f\x8b"

# The suite that scores each recognised format as it is (leaderboard's metric_suite names).
_SUITE_OF = {"QuAC": "quac", "CoQA": "coqa", "DuReader/MRC2018": "mrc2018", "SQuAD 2.0": "squad2",
             "Deep Read": "deepread"}

def _text(raw: bytes) -> str | None:
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error):
            return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _first_qa(paragraphs: Any) -> dict[str, Any] | None:
    for paragraph in paragraphs if isinstance(paragraphs, list) else []:
        qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
        for qa in qas if isinstance(qas, list) else []:
            if isinstance(qa, dict):
                return qa
    return None


def _document_format(document: Any) -> str | None:
    """The format of one JSON document, if it is a benchmark's: SQuAD 1.1/2.0, QuAC, CoQA, Deep Read."""
    if (isinstance(document, dict) and isinstance(document.get("stories"), list)
            and isinstance(document.get("questions"), list)):
        return "a Deep Read JSON file"
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    first = data[0]
    if "story" in first and "questions" in first:
        return "a CoQA JSON file"
    if "paragraphs" not in first:
        return None
    qa = _first_qa(first["paragraphs"]) or {}
    if "followup" in qa or "yesno" in qa:
        return "a QuAC JSON file"
    version = str(document.get("version", ""))
    unanswerable = any(
        isinstance(q, dict) and "is_impossible" in q
        for article in data if isinstance(article, dict)
        for paragraph in article.get("paragraphs") or [] if isinstance(paragraph, dict)
        for q in paragraph.get("qas") or []
    )
    if version.startswith(("v2", "2")) or unanswerable:
        return "a SQuAD 2.0 JSON file"
    return f"a SQuAD {version.lstrip('v') or '1.1'} JSON file"


def describe_format(raw: bytes) -> str | None:
    """What benchmark format ``raw`` (a file's bytes, gzipped or not) is in, if one is recognised.

    Recognised: one JSON document in SQuAD 1.1/2.0, QuAC, CoQA or Deep Read form, and
    DuReader/MRC2018 JSON lines.  None for anything else (including MRQA
    itself, and files that are not JSON at all).  Meant for error messages:
    it parses the whole file.
    """
    text = _text(raw)
    if text is None:
        return None
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        first = json.loads(stripped)
    except (ValueError, RecursionError):
        # Not one document: perhaps JSON lines of another benchmark (or one line of them).
        try:
            first = json.loads(stripped.split("\n", 1)[0])
        except (ValueError, RecursionError):
            return None
    else:
        kind = _document_format(first)
        if kind is not None:
            return kind
    if isinstance(first, dict) and "question_id" in first and ("documents" in first or "answers" in first):
        return "a DuReader/MRC2018 JSON-lines file"
    return None


def not_mrqa_hint(raw: bytes) -> str | None:
    """A sentence for an organizer whose MRQA gold file is in another benchmark's format, or None.

    Says what the file is and how to get MRQA JSON lines from it (docs/organizers/data.md).
    """
    kind = describe_format(raw)
    if kind is None:
        return None
    if not kind.startswith("a SQuAD"):
        suite = next(name for label, name in _SUITE_OF.items() if label in kind)
        return f"this is {kind}, not MRQA JSON lines; a challenge on this data takes metric_suite: {suite}"
    hint = (
        f"this is {kind}, not MRQA JSON lines. Convert it: a first line "
        '{"header": {"dataset": NAME, "split": PORTION}}, then one line per paragraph, {"id", "context", '
        '"qas": [{"qid": its id, "question", "answers": [each answer\'s text], "detected_answers": [{"text", '
        '"char_spans": [[start, end]]}]}]}, gzipped as .jsonl.gz (docs/organizers/data.md)'
    )
    if "2.0" in kind:
        hint += ("; MRQA has no unanswerable questions: leave out those with is_impossible, or use "
                 "metric_suite: squad2, which scores SQuAD 2.0 files as they are")
    return hint


def not_deepread_hint(raw: bytes) -> str | None:
    """A sentence for an organizer whose Deep Read gold file is another benchmark's, or None."""
    kind = describe_format(raw)
    if kind is None or "Deep Read" in kind:
        return None
    hint = (f"this is {kind}, not a Deep Read file (an object with 'stories', each with its 'sentences', and "
            "'questions' with their answer keys; docs/organizers/data.md, \"Deep Read challenges\")")
    suite = next((name for label, name in _SUITE_OF.items() if label in kind), None)
    if suite is None:  # SQuAD 1.1
        return f"{hint}; converted with `python -m scoring mrqa-build`, it makes a metric_suite: mrqa challenge"
    return f"{hint}; a challenge on this data takes metric_suite: {suite}"


def mrqa_header(raw: bytes) -> dict[str, Any] | None:
    """The ``header`` object of an MRQA file's first line, or None when it has none.

    Reads only as far as the first line (through gzip if need be), so it costs
    nothing on a large file.  A first line that is not a JSON object with a
    ``header`` object is "no header": MRQA files in the wild sometimes lack one,
    and the gold loader reports a malformed line itself.
    """
    stream: io.BufferedIOBase | gzip.GzipFile = io.BytesIO(raw)
    if raw[:2] == _GZIP_MAGIC:
        stream = gzip.GzipFile(fileobj=io.BytesIO(raw))
    try:
        # A header line is short; a long first line is a context (or not MRQA at all).
        line = stream.readline(1 << 20)
        obj = json.loads(line.decode("utf-8-sig"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError, RecursionError):
        return None
    header = obj.get("header") if isinstance(obj, dict) else None
    return header if isinstance(header, dict) else None
