"""Reading prediction JSON without building what a wrong file holds.

``json.loads`` builds a whole document before anything can look at it, and what that costs
follows the document's shape rather than its size: ``[{}, {}, ...]`` takes about 25 bytes of
heap per byte.  A prediction file has one shape, ``{qid: answer}`` (inside ``{dataset: ...}``
for an upload), so this reader walks the bytes once, left to right, checking the shape as it
goes and building only what that shape holds:

* a value that cannot be where it is (a list where an answer goes, an object inside an answer's
  field) is refused where it starts, before any of it is read;
* an id that is not a question of the dataset is counted and its answer read and dropped, so the
  dict it returns never has more entries than the gold has questions (their keys are the gold's
  own strings);
* an answer object (QuAC's ``{"answer", "yesno", "followup"}``, MRC2018's ``{"answers": [...],
  "yesno_answers": [...]}``) holds scalars and lists of them, two lists deep at most, and a
  dataset's answer objects hold at most ``ANSWER_VALUES_PER_QUESTION`` values per question in all;
* a key twice in one object is refused, naming it (``json`` silently keeps the last).

What a file costs is then bounded by its gold, plus the strings kept (one per question, and those in
answer objects: CPython stores a string at up to four bytes a character, and decoding one takes
about five times its bytes for a moment), whatever the file holds.  Nothing here imports Django;
errors read like ``json``'s ("Expecting ',' delimiter at line 1, column 22") and name the key.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

# Values (scalars and lists) a dataset's answer objects may hold in all, per question: MRC2018's
# official prediction line ({"question_id", "question_type", "answers": [a], "entity_answers": [[]],
# "yesno_answers": [], "source"}) holds 8.  Strings alone need no such bound: there is one per question.
ANSWER_VALUES_PER_QUESTION = 16
_MIN_ANSWER_VALUES = 4096
# Ids that are not questions are counted; these many are kept, to name them.
_KEPT_UNKNOWN = 5
# Keys are shown in messages up to this many characters.
_SHOWN_CHARS = 80
_UTF8_CHUNK = 1 << 20

_WS = re.compile(rb"[ \t\n\r]*+")
_PLAIN_STRING = re.compile(rb'"([^"\\\x00-\x1f]*+)"')
# A string with escapes, up to its closing quote; json then reads the escapes.
_ESCAPED_STRING = re.compile(rb'"[^"\\\x00-\x1f]*+(?:\\[^\x00-\x1f][^"\\\x00-\x1f]*+)*+"')
# A member "id": "answer" without escapes, and the "," or "}" after it.
_PLAIN_MEMBER = re.compile(
    rb'[ \t\n\r]*+"([^"\\\x00-\x1f]*+)"[ \t\n\r]*+:[ \t\n\r]*+"([^"\\\x00-\x1f]*+)"[ \t\n\r]*+([,}])'
)
_STRING_BODY = re.compile(rb'[^"\\\x00-\x1f]*+(?:\\[^\x00-\x1f][^"\\\x00-\x1f]*+)*+')
_NUMBER = re.compile(rb"(-?(?:0|[1-9][0-9]*+))(\.[0-9]++)?+([eE][-+]?[0-9]++)?+")
_LITERALS: dict[bytes, Any] = {
    b"true": True, b"false": False, b"null": None,
    # json.loads reads these too; they are refused later as answers, like any number.
    b"NaN": float("nan"), b"Infinity": float("inf"), b"-Infinity": float("-inf"),
}
_KINDS = {ord("{"): "object", ord("["): "list", ord('"'): "string", ord("t"): "true", ord("f"): "false",
          ord("n"): "null", ord("N"): "number", ord("I"): "number", ord("-"): "number",
          **{ord(d): "number" for d in "0123456789"}}
_CLOSE_OBJECT, _CLOSE_LIST = ord("}"), ord("]")
_QUOTE, _COMMA, _COLON, _BACKSLASH = ord('"'), ord(","), ord(":"), ord("\\")


class JsonRejected(Exception):
    """A prediction file that cannot be read as ``{qid: answer}``; the message names where."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotJson(JsonRejected):
    """Not UTF-8, not JSON, or a number Python cannot hold."""


class WrongShape(JsonRejected):
    """JSON, but not the expected shape (or a key twice): refused where it starts."""


class AnswerRefused(WrongShape):
    """Valid JSON holding an answer the platform cannot store, score or show (``answer_refusal``):
    the team's to fix, never the platform's fault.  ``of_shape`` when the answer is of the wrong
    kind (a number, a list where a string goes: a run's verdict is then "output of the wrong shape",
    as the suites' checks said before this rule), not when its text cannot be taken."""

    def __init__(self, message: str, *, of_shape: bool = False) -> None:
        super().__init__(message)
        self.of_shape = of_shape


# --------------------------------------------------------------------------- what an answer may be

# The longest string an answer holds (a span, a short free-form text, one of MRC2018's answers): a
# longer one is refused, not cut (it would be scored as something the system did not say), and
# scoring it (ROUGE-L's longest common subsequence) would cost time in proportion to its length.
ANSWER_MAX_CHARS = 4000
# What no store takes or no page shows: a lone surrogate (U+D800-U+DFFF, which ``"\ud800"`` spells in
# valid JSON; UTF-8 cannot encode it, and Postgres refuses it), NUL (Postgres text and jsonb refuse
# it) and the other C0 and C1 control characters and DEL.  Tab, line feed and carriage return are
# text a span of a passage may hold, and are taken.
_REFUSED_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _char_problem(text: str) -> str | None:
    """Why a string cannot be stored (None if it can): the first refused character, by code point and
    position (never the text itself: on hidden data an answer may carry what the system read)."""
    if len(text) > ANSWER_MAX_CHARS:
        return f"is {len(text)} characters long; an answer is at most {ANSWER_MAX_CHARS} characters"
    bad = _REFUSED_CHAR.search(text)
    if bad is None:
        return None
    point = ord(bad.group())
    what = ("a lone surrogate (not a character: UTF-8 cannot encode it)" if 0xD800 <= point <= 0xDFFF
            else "NUL" if point == 0 else "a control character")
    return (f"holds {what}, U+{point:04X}, at character {bad.start() + 1}; an answer is text without "
            "control characters (tab and line breaks are allowed)")


def answer_refusal(answer: Any) -> str | None:
    """What the platform cannot take in one answer, in words that name no byte of it; None if it can.

    The one rule for every path an answer comes by (a prediction file, a system's output, an
    interactive turn): a string, or an object (where the challenge's answers have fields) whose
    fields hold strings, numbers or lists of them, two lists deep at most (the shape
    ``AnswersReader`` reads); every string of it, field names too, at most ``ANSWER_MAX_CHARS``
    characters of text without control characters or lone surrogates; no NaN or infinity (JSON
    has none, and neither database stores them in JSON).  What the suite's format asks beyond this
    (which fields, which labels) is the suite's ``check_predictions``.
    """
    if isinstance(answer, str):
        problem = _char_problem(answer)
        return None if problem is None else f"the answer {problem}"
    if isinstance(answer, dict):
        for name, value in answer.items():
            if not isinstance(name, str):
                return "an answer's field names are strings"
            problem = _char_problem(name)
            if problem is not None:
                return f"a field name of the answer {problem}"
            problem = _field_refusal(value, depth=0)
            if problem is not None:
                return f"field {shown(name)} of the answer {problem}"
        return None
    return _kind_refusal(answer)


def _kind_refusal(answer: Any) -> str | None:
    """Why an answer is of a kind no answer can be (None for a string or an object)."""
    if isinstance(answer, (str, dict)):
        return None
    if isinstance(answer, list):
        return "the answer should be a string (or an object, where the challenge's answers have fields), found list"
    # In the suites' words (check_predictions), which a number met there before this rule.
    return f"the answer should be a string, found {type(answer).__name__}"


def _field_refusal(value: Any, *, depth: int) -> str | None:
    if isinstance(value, str):
        problem = _char_problem(value)
        if problem is None:
            return None
        return f"holds a string that {problem}"
    if isinstance(value, float) and not math.isfinite(value):
        return "holds NaN or an infinity, which JSON has not"
    if isinstance(value, (bool, int, float)) or value is None:
        return None
    if isinstance(value, list):
        if depth >= 2:
            return "nests lists more than two deep"
        for item in value:
            problem = _field_refusal(item, depth=depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        return "holds an object; an answer's fields hold strings, numbers or lists of them"
    return f"holds {type(value).__name__}; an answer's fields hold strings, numbers or lists of them"


def answers_refusal(by_qid: Mapping[str, Any], *, where: str) -> AnswerRefused | None:
    """The first answer of ``{qid: answer}`` the platform cannot take, as the refusal to raise, named by
    ``where`` and its qid (the caller's ``where`` decides what a team reads: on hidden data it reads
    the verdict only); None if every answer can be taken."""
    for qid, answer in by_qid.items():
        problem = answer_refusal(answer)
        if problem is not None:
            return AnswerRefused(f"{where}, id {shown(qid)}: {problem}", of_shape=_kind_refusal(answer) is not None)
    return None


@dataclass
class Answers:
    """One dataset's answers to its own questions, and the ids given that are not its questions."""

    by_qid: dict[str, Any] = field(default_factory=dict)
    unknown_ids: list[str] = field(default_factory=list)  # the first few, shortened, to name them
    n_unknown: int = 0  # how many members had an id that is not a question (a repeated one counts twice)


def shown(key: str) -> str:
    """A key for a message: repr, cut short (a key can be megabytes long)."""
    return repr(key if len(key) <= _SHOWN_CHARS else key[:_SHOWN_CHARS] + "...")


def answers_decode(raw: bytes, *, where: str, qids: Sequence[str]) -> Answers:
    """Read a whole document ``{qid: answer}`` (a system's output, a zip member) for these questions."""
    reader = AnswersReader(raw, where)
    answers = reader.answers(qids=qids, where=where, expected="a JSON object {qid: answer}")
    reader.finish()
    return answers


class AnswersReader:
    """A cursor over one JSON document, read with the shape of prediction files in mind.

    ``answers`` reads an object ``{qid: answer}``; ``object_members`` enters an object of
    another kind (an upload's ``{dataset: ...}``) and yields its keys, each time with the
    cursor at the key's value, which the caller reads before asking for the next key.
    """

    def __init__(self, raw: bytes, where: str) -> None:
        self.raw = raw
        self._view = memoryview(raw)
        self.where = where
        _check_utf8(raw, where)
        # json.loads of "utf-8-sig" text skips a byte-order mark; so does this.
        self.start = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
        self.pos = self.start
        self._budget = self._per_question = 0  # set by answers(), for each dataset

    # ----------------------------------------------------------------- the shape

    def kind(self) -> str:
        """What the next value is ("object", "list", "string", "number", ...), without reading it."""
        self._skip_ws()
        if self.pos >= len(self.raw):
            self._syntax("Expecting value", self.pos)
        kind = _KINDS.get(self.raw[self.pos])
        if kind is None:
            self._syntax("Expecting value", self.pos)
        return kind

    def object_members(self, expected: str) -> Iterator[str]:
        """Enter the object that comes next (refusing any other value as not ``expected``); yield
        each key with the cursor at its value.  A key twice is the caller's to refuse."""
        self._expect_object(expected)
        return self._members()

    def first_member(self, expected: str) -> tuple[str, str] | None:
        """The first key of the object that comes next and the kind of its value, or None if the
        object is empty; the cursor does not move (the caller then reads the object)."""
        self._expect_object(expected)
        at = self.pos
        try:
            for key in self._members():
                return key, self.kind()
            return None
        finally:
            self.pos = at

    def answers(self, *, qids: Sequence[str], where: str, expected: str) -> Answers:
        """Read the object ``{qid: answer}`` that comes next: answers to ``qids`` are kept, other
        ids counted and their answers read and dropped; any other value is not ``expected``."""
        self._expect_object(expected)
        # Keyed by the UTF-8 bytes, so that the common member is looked up before it is decoded;
        # the values are the gold's own strings, which the answers are then filed under.
        gold = {qid.encode("utf-8", "surrogatepass"): qid for qid in qids}
        out = Answers()
        kept = out.by_qid
        self._budget = max(ANSWER_VALUES_PER_QUESTION * len(gold), _MIN_ANSWER_VALUES)
        self._per_question = ANSWER_VALUES_PER_QUESTION
        raw = self.raw
        self.pos += 1
        self._skip_ws()
        if self.pos < len(raw) and raw[self.pos] == _CLOSE_OBJECT:
            self.pos += 1
            return out
        # Most members are "id": "answer" without escapes: one match reads the member and the
        # "," or "}" after it.  Anything else is read token by token.
        fast = _PLAIN_MEMBER.match
        while True:
            match = fast(raw, self.pos)
            if match is not None:
                key_bytes, last = match.group(1, 3)
                self.pos = match.end()
                qid = gold.get(key_bytes)
                if qid is None:
                    if len(out.unknown_ids) < _KEPT_UNKNOWN:
                        self._unknown(out, key_bytes.decode("utf-8"))
                    else:
                        out.n_unknown += 1
                elif qid in kept:
                    raise WrongShape(f"{where}, id {shown(qid)}: appears twice; give one answer per question")
                else:
                    # Decoded in place: a copy of a long answer's bytes would briefly double it.
                    kept[qid] = str(self._view[match.start(2):match.end(2)], "utf-8")
                if last == b"}":
                    return out
                continue
            self._skip_ws()
            if self.pos >= len(raw) or raw[self.pos] != _QUOTE:
                self._syntax("Expecting property name enclosed in double quotes", self.pos)
            key = self._string(keep=True)
            self._colon()
            qid = gold.get(key.encode("utf-8", "surrogatepass"))
            if qid is None:
                self._unknown(out, key)
                self._answer(where, key, keep=False)
            elif qid in kept:
                raise WrongShape(f"{where}, id {shown(key)}: appears twice; give one answer per question")
            else:
                kept[qid] = self._answer(where, key, keep=True)
            if self._comma_or_end(_CLOSE_OBJECT):
                return out

    @staticmethod
    def _unknown(out: Answers, key: str) -> None:
        out.n_unknown += 1
        if len(out.unknown_ids) < _KEPT_UNKNOWN:
            name = key if len(key) <= _SHOWN_CHARS else key[:_SHOWN_CHARS] + "..."
            if name not in out.unknown_ids:
                out.unknown_ids.append(name)

    def finish(self) -> None:
        """After the top-level value: nothing but whitespace."""
        self._skip_ws()
        if self.pos != len(self.raw):
            self._syntax("Extra data", self.pos)

    # ----------------------------------------------------------------- answers

    def _answer(self, where: str, qid: str, *, keep: bool) -> Any:
        kind = self.kind()
        if kind == "string":
            return self._string(keep=keep)
        if kind == "object":
            return self._answer_object(where, qid, keep=keep)
        if kind == "list":
            # No suite takes a list as an answer: refused here, before a byte of it is read.
            raise WrongShape(
                f"{where}, id {shown(qid)}: the answer should be a string (or an object, where the "
                "challenge's answers have fields), found list"
            )
        return self._scalar()

    def _answer_object(self, where: str, qid: str, *, keep: bool) -> dict[str, Any] | None:
        # An id that is not a question is refused anyway: its fields are read for their syntax
        # and shape only, so nothing of it is kept (not even its field names, to find a repeat).
        fields: dict[str, Any] | None = {} if keep else None
        for name in self._members():
            value = self._field_value(where, qid, name, keep=keep)
            if fields is not None:
                if name in fields:
                    raise WrongShape(f"{where}, id {shown(qid)}: field {shown(name)} appears twice")
                self._spend(where)
                fields[name] = value
        return fields

    def _field_value(self, where: str, qid: str, name: str, *, keep: bool) -> Any:
        kind = self.kind()
        if kind == "object":
            raise WrongShape(
                f"{where}, id {shown(qid)}: field {shown(name)} holds an object; an answer's fields hold "
                "strings, numbers or lists of them"
            )
        if kind != "list":
            return self._string(keep=keep) if kind == "string" else self._scalar()
        items: list[Any] | None = [] if keep else None
        for _ in self._items():
            kind = self.kind()
            if kind == "object":
                raise WrongShape(f"{where}, id {shown(qid)}: field {shown(name)} holds an object in its list")
            if kind == "list":
                value: Any = [] if keep else None
                for _ in self._items():
                    kind = self.kind()
                    if kind in ("object", "list"):
                        raise WrongShape(
                            f"{where}, id {shown(qid)}: field {shown(name)} nests lists more than two deep"
                        )
                    item = self._string(keep=keep) if kind == "string" else self._scalar()
                    if value is not None:
                        self._spend(where)
                        value.append(item)
            else:
                value = self._string(keep=keep) if kind == "string" else self._scalar()
            if items is not None:
                self._spend(where)
                items.append(value)
        return items

    def _spend(self, where: str) -> None:
        self._budget -= 1
        if self._budget < 0:
            raise WrongShape(
                f"{where}: the answers' fields hold too many values (more than {self._per_question} per "
                "question on average); an answer is a string or a small object"
            )

    # ----------------------------------------------------------------- tokens

    def _members(self) -> Iterator[str]:
        raw = self.raw
        self.pos += 1  # the "{" that kind() saw
        self._skip_ws()
        if self.pos < len(raw) and raw[self.pos] == _CLOSE_OBJECT:
            self.pos += 1
            return
        while True:
            self._skip_ws()
            if self.pos >= len(raw) or raw[self.pos] != _QUOTE:
                self._syntax("Expecting property name enclosed in double quotes", self.pos)
            key = self._string(keep=True)
            self._colon()
            yield key
            if self._comma_or_end(_CLOSE_OBJECT):
                return

    def _items(self) -> Iterator[None]:
        """Enter the list that comes next; yield with the cursor at each item, which the caller reads."""
        raw = self.raw
        self.pos += 1  # the "[" that kind() saw
        self._skip_ws()
        if self.pos < len(raw) and raw[self.pos] == _CLOSE_LIST:
            self.pos += 1
            return
        while True:
            yield None
            if self._comma_or_end(_CLOSE_LIST):
                return

    def _expect_object(self, expected: str) -> None:
        kind = self.kind()
        if kind != "object":
            raise WrongShape(f"{self.where}: expected {expected}, found {kind}")

    def _colon(self) -> None:
        self._skip_ws()
        if self.pos >= len(self.raw) or self.raw[self.pos] != _COLON:
            self._syntax("Expecting ':' delimiter", self.pos)
        self.pos += 1

    def _comma_or_end(self, close: int) -> bool:
        """After a member or an item: True at the closing bracket, False past a comma."""
        self._skip_ws()
        if self.pos < len(self.raw) and self.raw[self.pos] == close:
            self.pos += 1
            return True
        if self.pos >= len(self.raw) or self.raw[self.pos] != _COMMA:
            self._syntax("Expecting ',' delimiter", self.pos)
        self.pos += 1
        return False

    def _skip_ws(self) -> None:
        match = _WS.match(self.raw, self.pos)
        assert match is not None  # [ \t\n\r]* always matches
        self.pos = match.end()

    def _string(self, *, keep: bool) -> str:
        raw, pos = self.raw, self.pos
        match = _PLAIN_STRING.match(raw, pos)
        if match is not None:
            self.pos = match.end()
            # The bytes were checked as UTF-8 up front; a string that is dropped is not decoded,
            # and one that is kept is decoded in place (a copy of a long answer's bytes would
            # briefly double it).
            return str(self._view[pos + 1:self.pos - 1], "utf-8") if keep else ""
        match = _ESCAPED_STRING.match(raw, pos)
        if match is None:
            self._string_error(pos)
        text = str(self._view[pos:match.end()], "utf-8")
        try:
            value = json.loads(text)  # one string literal: json reads its escapes
        except json.JSONDecodeError as exc:
            # Escapes are read even in a dropped string: an invalid one makes the file invalid JSON.
            self._syntax(exc.msg, pos + len(text[: exc.pos].encode("utf-8", "surrogatepass")))
        self.pos = match.end()
        return value if keep else ""

    def _string_error(self, pos: int) -> NoReturn:
        """Why the string starting at ``pos`` has no closing quote, in json's words."""
        raw = self.raw
        body = _STRING_BODY.match(raw, pos + 1)
        end = body.end() if body is not None else pos + 1
        if end >= len(raw) or (raw[end] == _BACKSLASH and end + 1 >= len(raw)):
            self._syntax("Unterminated string", pos)
        if raw[end] == _BACKSLASH:
            self._syntax("Invalid \\escape", end)
        self._syntax("Invalid control character", end)

    def _scalar(self) -> Any:
        raw, pos = self.raw, self.pos
        for literal, value in _LITERALS.items():
            if raw.startswith(literal, pos):
                self.pos = pos + len(literal)
                return value
        match = _NUMBER.match(raw, pos)
        if match is None:
            self._syntax("Expecting value", pos)
        self.pos = match.end()
        integer, fraction, exponent = match.groups()
        try:
            if fraction or exponent:
                return float(match.group(0))
            return int(integer)
        except ValueError as exc:
            # Valid syntax that Python still refuses: an integer of more than 4300 digits.
            raise NotJson(f"{self.where}: not usable JSON: {exc}") from None

    def _syntax(self, message: str, pos: int) -> NoReturn:
        line_start = max(self.raw.rfind(b"\n", 0, pos) + 1, self.start)
        line = self.raw.count(b"\n", 0, pos) + 1
        column = len(self.raw[line_start:pos].decode("utf-8", "replace")) + 1
        # json's own messages end in "at" ("Unterminated string starting at", "Invalid control
        # character at"), which its str() follows with ": line 1 column 7"; here " at line" follows.
        message = message.removesuffix(" at")
        raise NotJson(f"{self.where}: not valid JSON: {message} at line {line}, column {column}")


def _check_utf8(raw: bytes, where: str) -> None:
    """The whole file is UTF-8, checked a chunk at a time (decoding it whole would build the text)."""
    view = memoryview(raw)
    start = 0
    while start < len(raw):
        end = min(start + _UTF8_CHUNK, len(raw))
        if end < len(raw):
            # Cut before a character, not inside one: back off over its continuation bytes (at
            # most three; a fourth is invalid, and is reported from either side of the cut).
            for _ in range(3):
                if raw[end] & 0xC0 != 0x80:
                    break
                end -= 1
        try:
            codecs.utf_8_decode(view[start:end], "strict", True)
        except UnicodeDecodeError as exc:
            bad = start + exc.start
            line = raw.count(b"\n", 0, bad) + 1
            raise NotJson(
                f"{where}: not UTF-8 (byte 0x{raw[bad]:02x} on line {line}); save the file as UTF-8"
            ) from None
        start = end
