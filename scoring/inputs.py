"""What participants' systems read: answer-free inputs copied from an allowlist, re-keyed when sealed.

A gold file holds the answers; the copy that systems read (and that may be
offered as a download) must not.  Deleting the answer fields one knows of
misses the ones one does not: DuReader's documents carry ``is_selected`` and
``most_related_para`` (which document and which paragraph hold the answer),
and converters add spans, scores and notes of their own.  So each format here
names the fields a system needs, and only those are copied; every other field,
known or not, is left out.

An allowed field is copied only if it holds text, numbers, booleans, null or
lists of those.  An object inside one is where a converter would nest answers,
and nothing here can vouch for it, so such a value is withheld too.

The formats (:data:`FORMATS`), one allowlist each:

``mrqa``
    Gzipped JSON lines: the header ``{"header": {"dataset", "split"}}``, then
    contexts ``{id, context, context_tokens, qas: [{qid, question,
    question_tokens}]}``.  A qa's ``id`` (the source dataset's own question
    id, as in MRQA's SQuAD file) is not needed to answer and names the source.
``dureader``
    JSON lines, one question each, as DuReader's released test sets have them:
    ``question_id, question, segmented_question, question_type,
    fact_or_opinion, yesno_type`` and ``documents: [{title, segmented_title,
    paragraphs, segmented_paragraphs, bs_rank_pos}]``, plus MRC2018's
    ``source`` (``search`` or ``zhidao``, which DuReader's test sets tell by
    their file names).  ``yesno_type`` (FACT or OPINION on yes/no questions)
    is in the official test files; ``is_selected`` and ``most_related_para``
    are not, because they point at the answer.
``squad2``
    ``version, data: [{title, paragraphs: [{context, qas: [{id,
    question}]}]}]``, plus the difficulty level of each question
    (:data:`scoring.unanswerable.LEVEL_FIELDS`) only when the caller says the
    levels do not give answerability away (``keep_levels``): data that labels
    only its unanswerable questions makes the label's mere presence
    ``is_impossible`` under another name.
``quac``
    ``data: [{title, section_title, background, paragraphs: [{id, context,
    qas: [{id, question}]}]}]``.  Every question of a dialog is kept, so a
    system sees the dialog history as questions; QuAC's official setting also
    gives it the earlier turns' gold answers and dialog acts, but on a hidden
    test set those turns are scored too, so systems condition on their own
    earlier answers instead.
``coqa``
    ``version, data: [{id, source, story, questions: [{turn_id,
    input_text}]}]``.  ``filename`` and ``name`` are left out: they name the
    source file (``mc160.test.41``) and a system does not need them.
``deepread``
    ``stories: [{id, title, sentences: [{text}]}], questions: [{id, story,
    question}]`` (:mod:`scoring.deepread`'s data file).  A system answers
    with a sentence's text, so sentences keep their text and order only:
    their ids are the organizer's and not needed.  ``answers`` and
    ``answer_sentences`` (the HumSent key) are left out like every other
    field.

Sealed datasets (:func:`rekey`): every id that could identify the dataset is
replaced by a keyed HMAC-SHA256 of the original (:data:`ID_CHARS` hex
characters), the MRQA header names the sealed label, and the fields that name a
source are replaced the same way: SQuAD's and QuAC's article ``title`` (a
Wikipedia page name), CoQA's ``source`` (``mctest``, ``race``...) and
DuReader's ``source``, and Deep Read's story ids (in stories and in the
questions that name them).  DuReader's document titles stay: they are the titles
of the retrieved web pages, part of the evidence; so do Deep Read's story
titles, which a reader reads with the story.  The
passages themselves are kept, and a public dataset's text can of course be
searched for: sealing hides names, not content.  QuAC's ``section_title`` and
``background`` are kept for the same reason, being the dialog's setting.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from scoring.errors import InputFormatError
from scoring.io import decode_text, json_type, load_json, parse_json
from scoring.unanswerable import LEVEL_FIELDS

FORMATS: tuple[str, ...] = ("mrqa", "dureader", "squad2", "quac", "coqa", "deepread")
_LINE_FORMATS = frozenset({"mrqa", "dureader"})
# The list every document of a one-document format has (a SQuAD-style "data" unless named here).
_TOP_LIST = {"deepread": "questions"}

# 80 bits: a collision among a test set's questions is out of reach (and refused if it happens).
ID_CHARS = 20

_GZIP_MAGIC = b"\x1f\x8b"
# What json.loads makes of everything but arrays and objects.
_SCALARS = frozenset({str, int, float, bool, type(None)})
# Lines are handed to the compressor in chunks of about this size rather than one by one.
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Fields:
    """The fields of one JSON object that a system may read.

    ``keep``: copied as they are (see the module docstring for what a copied
    value may hold); ``objects``: fields holding one object, filtered by their
    own Fields; ``lists``: fields holding a list of objects, each filtered so.
    """

    keep: frozenset[str] = frozenset()
    objects: Mapping[str, Fields] = field(default_factory=dict)
    lists: Mapping[str, Fields] = field(default_factory=dict)


MRQA_HEADER = Fields(objects={"header": Fields(frozenset({"dataset", "split"}))})
MRQA_CONTEXT = Fields(
    frozenset({"id", "context", "context_tokens"}),
    lists={"qas": Fields(frozenset({"qid", "question", "question_tokens"}))},
)
DUREADER = Fields(
    frozenset({"question_id", "question", "segmented_question", "question_type", "fact_or_opinion", "yesno_type",
               "source"}),
    lists={"documents": Fields(
        frozenset({"title", "segmented_title", "paragraphs", "segmented_paragraphs", "bs_rank_pos"})
    )},
)
QUAC = Fields(lists={"data": Fields(
    frozenset({"title", "section_title", "background"}),
    lists={"paragraphs": Fields(frozenset({"id", "context"}), lists={"qas": Fields(frozenset({"id", "question"}))})},
)})
COQA = Fields(
    frozenset({"version"}),
    lists={"data": Fields(
        frozenset({"id", "source", "story"}), lists={"questions": Fields(frozenset({"turn_id", "input_text"}))}
    )},
)
DEEPREAD = Fields(lists={
    "stories": Fields(frozenset({"id", "title"}), lists={"sentences": Fields(frozenset({"text"}))}),
    "questions": Fields(frozenset({"id", "story", "question"})),
})


def squad2_fields(*, keep_levels: bool) -> Fields:
    """SQuAD 2.0's allowlist; the difficulty levels only with ``keep_levels``."""
    question = frozenset({"id", "question"}) | (frozenset(LEVEL_FIELDS) if keep_levels else frozenset())
    return Fields(
        frozenset({"version"}),
        lists={"data": Fields(
            frozenset({"title"}),
            lists={"paragraphs": Fields(frozenset({"context"}), lists={"qas": Fields(question)})},
        )},
    )


def coqa_qid(story_id: object, turn_id: object) -> str:
    """The platform's question id of a CoQA turn.

    CoQA has no question ids, only (story id, turn id) pairs, and the official
    predictions are a list of {"id", "turn_id", "answer"}; the platform's
    uploads are {qid: answer} like every other suite's.
    """
    return f"{story_id}_{turn_id}"


# --------------------------------------------------------------------------- building the inputs


def build_inputs(fmt: str, path: str | os.PathLike[str], *, keep_levels: bool = False) -> bytes:
    """The answer-free input file of the gold file at ``path``, in ``fmt``, as it is stored and served.

    ``mrqa`` gives gzipped JSON lines whose gzip header has no time stamp (the
    same gold always gives the same bytes), ``dureader`` JSON lines, the others
    one JSON document.  ``keep_levels``: see :func:`squad2_fields`.  The gold
    is expected to have passed its benchmark's loader; only the structure the
    copy walks through is checked here.
    """
    _check_format(fmt)
    name = os.fspath(path)
    if fmt in _LINE_FORMATS:
        with _open_lines(name) as raw:
            records = _input_records(fmt, _json_lines(raw, name), path=name)
            return _encode_lines((obj for _, obj, _ in records), gzipped=fmt == "mrqa")
    return document_inputs(fmt, load_json(name), keep_levels=keep_levels, path=name)


def iter_input_lines(fmt: str, path: str | os.PathLike[str]) -> Iterator[str]:
    """The answer-free lines of a JSON-lines gold file (``mrqa`` or ``dureader``), read one line at a time."""
    if fmt not in _LINE_FORMATS:
        raise ValueError(f"{fmt!r} is not a JSON-lines format; expected one of {', '.join(sorted(_LINE_FORMATS))}")
    name = os.fspath(path)
    with _open_lines(name) as raw:
        for _, obj, _ in _input_records(fmt, _json_lines(raw, name), path=name):
            yield _dumps(obj)


def document_inputs(fmt: str, document: Any, *, keep_levels: bool = False, path: str = "dataset") -> bytes:
    """The answer-free input file of an already loaded ``squad2``, ``quac``, ``coqa`` or ``deepread`` gold document.

    The document is not changed; the copy shares its strings.
    """
    return _dumps(_document_inputs(fmt, document, keep_levels=keep_levels, path=path)).encode("utf-8")


def _document_inputs(fmt: str, document: Any, *, keep_levels: bool, path: str) -> dict[str, Any]:
    _check_format(fmt)
    if fmt in _LINE_FORMATS:
        raise ValueError(f"{fmt!r} is a JSON-lines format; use build_inputs or iter_input_lines")
    top = _TOP_LIST.get(fmt, "data")
    if not isinstance(document, dict) or not isinstance(document.get(top), list):
        found = json_type(document) if not isinstance(document, dict) else f"no {top!r} list"
        raise InputFormatError(f"expected a JSON object with a {top!r} list, found {found}", path=path)
    fields = {"squad2": squad2_fields(keep_levels=keep_levels), "quac": QUAC, "coqa": COQA, "deepread": DEEPREAD}[fmt]
    return _select(document, fields, where="", path=path, line=None)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _input_records(fmt: str, records: Iterable[tuple[int, Any]], *, path: str) -> Iterator[tuple[int, Any, bool]]:
    """``(line, answer-free object, is_header)`` for each record of a JSON-lines file."""
    if fmt == "dureader":
        for number, obj in records:
            if not isinstance(obj, dict):
                raise InputFormatError(f"expected a question object, found {json_type(obj)}", path=path, line=number)
            yield number, _select(obj, DUREADER, where="", path=path, line=number), False
        return
    first = True
    for number, obj in records:
        # Only the first line may be a header, and only if it has a "header" key (MRQA spec 3).
        if first and isinstance(obj, dict) and "header" in obj:
            first = False
            yield number, _select(obj, MRQA_HEADER, where="", path=path, line=number), True
            continue
        first = False
        if not isinstance(obj, dict) or not isinstance(obj.get("qas"), list):
            what = "a header" if isinstance(obj, dict) and "header" in obj else type(obj).__name__
            raise InputFormatError(
                f"expected a context object with a 'qas' list (only the first line may be a header), found {what}",
                path=path, line=number,
            )
        yield number, _select(obj, MRQA_CONTEXT, where="", path=path, line=number), False


def _select(obj: dict[str, Any], fields: Fields, *, where: str, path: str, line: int | None) -> dict[str, Any]:
    """A new object with only the allowed fields of ``obj``, in their order; values are shared, not copied."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key in fields.keep:
            if _holds_no_object(value):
                out[key] = value
        elif key in fields.objects:
            inner = f"{where}.{key}" if where else key
            out[key] = _select(_object(value, inner, path, line), fields.objects[key], where=inner, path=path,
                               line=line)
        elif key in fields.lists:
            inner = f"{where}.{key}" if where else key
            if not isinstance(value, list):
                raise InputFormatError(f"{inner} should be a list, found {json_type(value)}", path=path, line=line)
            sub = fields.lists[key]
            out[key] = [
                _select(_object(item, f"{inner}[{i}]", path, line), sub, where=f"{inner}[{i}]", path=path, line=line)
                for i, item in enumerate(value)
            ]
    return out


def _object(value: Any, where: str, path: str, line: int | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputFormatError(f"{where} should be an object, found {json_type(value)}", path=path, line=line)
    return value


def _holds_no_object(value: Any) -> bool:
    if type(value) in _SCALARS:
        return True
    if type(value) is not list:
        return False  # an object, or something json.loads never makes: withheld either way
    pending = [value]
    while pending:
        for item in pending.pop():
            if type(item) is list:
                # Token lists hold a million small lists: one C-level check clears each.
                if not _SCALARS.issuperset(map(type, item)):
                    pending.append(item)
            elif type(item) not in _SCALARS:
                return False
    return True


# --------------------------------------------------------------------------- reading and writing JSON lines


@contextmanager
def _open_lines(path: str) -> Iterator[Iterable[bytes]]:
    """The file's lines as bytes, gunzipped when it starts with the gzip magic number."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise InputFormatError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputFormatError("is a directory, expected a file", path=path) from None
    except PermissionError:
        raise InputFormatError("permission denied", path=path) from None
    with fh:
        gzipped = fh.read(2) == _GZIP_MAGIC
        fh.seek(0)
        if gzipped:
            with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                yield gz
        else:
            yield fh


def _json_lines(raw: Iterable[bytes], path: str) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for each non-blank line, as :func:`scoring.io.iter_json_lines`, one line at a time."""
    offset = 0
    try:
        for number, chunk in enumerate(raw, start=1):
            try:
                text = chunk.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputFormatError(
                    f"not valid UTF-8 (byte 0x{chunk[exc.start]:02x} at offset {offset + exc.start}); "
                    "save the file as UTF-8",
                    path=path, line=number,
                ) from None
            offset += len(chunk)
            if text.strip():
                # Without its line break, so an error at the end of a line is reported on that line.
                yield number, parse_json(text.rstrip("\r\n"), path, line_offset=number - 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputFormatError(f"corrupt gzip data ({exc})", path=path) from None


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _encode_lines(objects: Iterable[Any], *, gzipped: bool) -> bytes:
    buffer = io.BytesIO()
    if gzipped:
        # mtime=0: no time stamp in the header, so the same lines always give the same bytes.
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
            _write_lines(gz, objects)
    else:
        _write_lines(buffer, objects)
    return buffer.getvalue()


def _write_lines(sink: io.BufferedIOBase, objects: Iterable[Any]) -> None:
    pending: list[bytes] = []
    size = 0
    for obj in objects:
        line = (_dumps(obj) + "\n").encode("utf-8")
        pending.append(line)
        size += len(line)
        if size >= _CHUNK:
            sink.write(b"".join(pending))
            pending, size = [], 0
    if pending:
        sink.write(b"".join(pending))


# --------------------------------------------------------------------------- sealed datasets


def alias_for(key: bytes, slug: str) -> str:
    """A sealed dataset's public name: ``"Hidden-"`` and 6 characters of a keyed HMAC of its slug.

    Unlike a number (``Hidden-07``) it tells nothing about the dataset's
    place in the challenge or how many datasets there are.
    """
    return "Hidden-" + _hmac_hex(key, "alias", slug)[:6].upper()


def rekey(fmt: str, data: bytes, *, key: bytes, label: str) -> tuple[bytes, dict[str, str]]:
    """What a system sees of a sealed dataset, and ``{system-visible qid: original qid}`` for every question.

    ``data`` is the stored answer-free input file, as :func:`build_inputs`
    made it (the output is gzipped if it was).  The allowlist is applied
    again, so a file stored by an older, looser version loses the same fields;
    SQuAD 2.0 levels still in the file are kept, since they were withheld when
    it was stored if they gave answerability away.  Ids are keyed HMACs of the originals, the same for the same
    ``key``, so predictions mapped back through the returned map score exactly
    as they would have under the original ids.  CoQA's visible question ids are
    ``coqa_qid(<new story id>, <turn id>)``, QuAC's keep QuAC's
    ``<dialog id>_q#<n>`` shape; the map's values are the platform's qids
    (DuReader's ``question_id`` as a string, CoQA's :func:`coqa_qid`).
    """
    _check_format(fmt)
    if not key:
        raise ValueError("rekey needs a non-empty key: without one the new ids could be recomputed by anyone")
    ids = _Rekeying(key, path=label)
    gzipped = data[:2] == _GZIP_MAGIC
    if fmt in _LINE_FORMATS:
        raw = io.BytesIO(data)
        stream: Iterable[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw
        records = _input_records(fmt, _json_lines(stream, label), path=label)
        if fmt == "mrqa":
            out = _encode_lines(_rekey_mrqa(records, ids, label), gzipped=gzipped)
        else:
            out = _encode_lines(_rekey_dureader(records, ids), gzipped=gzipped)
        return out, ids.questions
    try:
        text = decode_text(gzip.decompress(data) if gzipped else data, label)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputFormatError(f"corrupt gzip data ({exc})", path=label) from None
    # _document_inputs builds new objects, so the ids can be replaced in them in place.
    document = _document_inputs(fmt, parse_json(text, label), keep_levels=True, path=label)
    {"squad2": _rekey_squad2, "quac": _rekey_quac, "coqa": _rekey_coqa, "deepread": _rekey_deepread}[fmt](document, ids)
    return _dumps(document).encode("utf-8"), ids.questions


def _hmac_hex(key: bytes, kind: str, value: str) -> str:
    # The kind keeps the namespaces apart: a context and a question with the same id get different ones.
    return hmac.new(key, f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()


class _Rekeying:
    """New ids under one key, and the map of every question's visible id to its original one."""

    def __init__(self, key: bytes, *, path: str) -> None:
        self._key = key
        self.path = path
        self.questions: dict[str, str] = {}

    def token(self, kind: str, original: object) -> str:
        text = original if isinstance(original, str) else json.dumps(original)
        return _hmac_hex(self._key, kind, text)[:ID_CHARS]

    def question(self, visible: str, original: str) -> str:
        known = self.questions.setdefault(visible, original)
        if known != original:
            raise InputFormatError(
                f"questions {known!r} and {original!r} would both be shown as {visible!r}", path=self.path
            )
        return visible

    def required_id(self, obj: dict[str, Any], key: str, where: str, *, line: int | None = None,
                    ints: bool = False) -> str:
        value = obj.get(key)
        if isinstance(value, str) or (ints and isinstance(value, int) and not isinstance(value, bool)):
            return str(value)
        kind = "a string or an integer" if ints else "a string"
        raise InputFormatError(f"{where} should have {kind} {key!r}", path=self.path, line=line)


def _rekey_mrqa(records: Iterable[tuple[int, Any, bool]], ids: _Rekeying, label: str) -> Iterator[Any]:
    first = True
    for number, obj, is_header in records:
        if is_header:
            obj["header"]["dataset"] = label
        elif first:
            # No header: give it one, so the name a system reads is the sealed label, not a file name.
            yield {"header": {"dataset": label}}
        first = False
        if not is_header:
            if "id" in obj:
                obj["id"] = ids.token("context", obj["id"])
            for index, qa in enumerate(obj["qas"]):
                original = ids.required_id(qa, "qid", f"qas[{index}]", line=number)
                qa["qid"] = ids.question(ids.token("question", original), original)
        yield obj


def _rekey_dureader(records: Iterable[tuple[int, Any, bool]], ids: _Rekeying) -> Iterator[Any]:
    for number, obj, _ in records:
        # The platform's qid is str(question_id), whether the file has 123 or "123".
        original = ids.required_id(obj, "question_id", "the question", line=number, ints=True)
        obj["question_id"] = ids.question(ids.token("question", original), original)
        _replace_name(obj, "source", ids)
        yield obj


def _replace_name(obj: dict[str, Any], key: str, ids: _Rekeying) -> None:
    if key in obj:
        obj[key] = ids.token(key, obj[key])


def _rekey_squad2(document: dict[str, Any], ids: _Rekeying) -> None:
    for a, article in enumerate(document["data"]):
        _replace_name(article, "title", ids)
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            for q, qa in enumerate(paragraph.get("qas", [])):
                original = ids.required_id(qa, "id", f"data[{a}].paragraphs[{p}].qas[{q}]")
                qa["id"] = ids.question(ids.token("question", original), original)


def _rekey_quac(document: dict[str, Any], ids: _Rekeying) -> None:
    for a, article in enumerate(document["data"]):
        _replace_name(article, "title", ids)
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"data[{a}].paragraphs[{p}]"
            dialog = ids.token("dialog", ids.required_id(paragraph, "id", where))
            paragraph["id"] = dialog
            for q, qa in enumerate(paragraph.get("qas", [])):
                original = ids.required_id(qa, "id", f"{where}.qas[{q}]")
                # QuAC's "<dialog id>_q#<n>", which the official scorer and QuAC readers rely on.
                qa["id"] = ids.question(f"{dialog}_q#{q}", original)


def _rekey_coqa(document: dict[str, Any], ids: _Rekeying) -> None:
    for s, story in enumerate(document["data"]):
        where = f"data[{s}]"
        original_story = story.get("id")
        if original_story is None or isinstance(original_story, (dict, list)):
            raise InputFormatError(f"{where} should have an 'id' (the story id)", path=ids.path)
        story["id"] = ids.token("story", original_story)
        _replace_name(story, "source", ids)
        for i, question in enumerate(story.get("questions", [])):
            turn = question.get("turn_id")
            if turn is None or isinstance(turn, (dict, list)):
                raise InputFormatError(f"{where}.questions[{i}] should have a 'turn_id'", path=ids.path)
            ids.question(coqa_qid(story["id"], turn), coqa_qid(original_story, turn))


def _rekey_deepread(document: dict[str, Any], ids: _Rekeying) -> None:
    # A story id ("rm2-01") names the source; a question names its story by the same token.
    for s, story in enumerate(document.get("stories", [])):
        story["id"] = ids.token("story", ids.required_id(story, "id", f"stories[{s}]"))
    for q, question in enumerate(document["questions"]):
        where = f"questions[{q}]"
        original = ids.required_id(question, "id", where)
        question["id"] = ids.question(ids.token("question", original), original)
        if "story" in question:
            question["story"] = ids.token("story", ids.required_id(question, "story", where))
