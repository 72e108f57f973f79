"""Reading benchmark files with errors that say which file, line and field is wrong.

Two policies coexist on purpose.  The command line reproduces the official
scripts, which tolerate some defects (a prediction file that repeats a key
keeps the last value, as ``json.load`` does); the platform validates uploads
strictly and rejects those same defects.  Callers choose with ``strict``.
"""

from __future__ import annotations

import gc
import gzip
import io
import json
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from scoring.errors import InputFormatError

_GZIP_MAGIC = b"\x1f\x8b"

Warn = Callable[[str], None]


def _ignore(_: str) -> None:
    return None


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """Read a file whole, gunzipping it when it starts with the gzip magic number."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise InputFormatError("file not found", path=name) from None
    except IsADirectoryError:
        raise InputFormatError("is a directory, expected a file", path=name) from None
    except PermissionError:
        raise InputFormatError("permission denied", path=name) from None
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputFormatError(f"corrupt gzip data ({exc})", path=name) from None
    return raw


def decode_text(raw: bytes, path: str) -> str:
    """Decode UTF-8 (a byte-order mark is tolerated), naming the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputFormatError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8",
            path=path,
            line=line,
        ) from None


def parse_json(text: str, path: str, *, line_offset: int = 0, pairs_hook: Any = None) -> Any:
    try:
        if pairs_hook is None:
            return json.loads(text)
        return json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"invalid JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=exc.lineno + line_offset,
        ) from None
    except RecursionError:
        raise InputFormatError("invalid JSON: nested too deeply", path=path) from None


def load_json(path: str | os.PathLike[str]) -> Any:
    """Load a JSON document (optionally gzipped)."""
    name = os.fspath(path)
    return parse_json(decode_text(read_bytes(name), name), name)


def load_prediction_map(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    warn: Warn = _ignore,
    value_kind: str = "string",
) -> dict[str, Any]:
    """Load a ``{qid: value}`` prediction file.

    A repeated key keeps its last value (``json.load`` semantics, which the
    official scripts inherit) and is reported through ``warn``; with
    ``strict`` it is an error naming the id.
    """
    name = os.fspath(path)
    duplicates: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                duplicates.append(key)
            out[key] = value
        return out

    data = parse_json(decode_text(read_bytes(name), name), name, pairs_hook=pairs_hook)
    if not isinstance(data, dict):
        raise InputFormatError(
            f"expected a JSON object mapping question ids to {value_kind} answers, "
            f"found {type(data).__name__}",
            path=name,
        )
    if duplicates:
        if strict:
            raise InputFormatError("question id appears more than once", path=name, qid=duplicates[0])
        for qid in duplicates:
            warn(f"{name}: id {qid!r} appears more than once; the last value is used")
    return data


def iter_json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON-lines file (gzip or not)."""
    name = os.fspath(path)
    text = decode_text(read_bytes(name), name)
    for number, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        # Without its line break, so an error at the end of a line is reported on that line.
        yield number, parse_json(line.rstrip("\r\n"), name, line_offset=number - 1)


def require(obj: Any, key: str, kind: type | tuple[type, ...], *, path: str, line: int | None = None,
            qid: str | None = None, what: str = "") -> Any:
    """Return ``obj[key]`` if present and of the expected type, else a clear error."""
    if not isinstance(obj, dict):
        raise InputFormatError(f"expected a JSON object{what}, found {type(obj).__name__}",
                               path=path, line=line, qid=qid)
    if key not in obj:
        raise InputFormatError(f"missing field {key!r}{what}", path=path, line=line, qid=qid)
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputFormatError(
            f"field {key!r}{what} should be {_json_name(names)}, found {json_type(value)}",
            path=path, line=line, qid=qid,
        )
    return value


_JSON_NAMES = {
    "str": "a string", "list": "a list", "dict": "an object", "int": "an integer",
    "float": "a number", "NoneType": "null", "bool": "a boolean",
}


def _json_name(py: str) -> str:
    return " or ".join(_JSON_NAMES.get(part, part) for part in py.split(" or "))


def json_type(value: object) -> str:
    """How an error message names a parsed JSON value's type: ``"an object"``, ``"null"``, ..."""
    return _json_name(type(value).__name__)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Suspend the cyclic garbage collector for a block (and restore its state after).

    Loading and scoring a benchmark allocate hundreds of thousands of small
    dicts, lists and sets, none of them cyclic; the collector's repeated passes
    over everything already loaded can otherwise cost more than the work.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
