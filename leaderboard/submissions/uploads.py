"""Reading a prediction upload: one JSON file or a zip of per-dataset JSON files.

An upload is accepted whole or rejected whole, so every check happens here,
before anything is stored: size, encoding, JSON syntax, archive member names
(no path traversal, no zip bombs), which datasets it covers, and the question
ids of each dataset against the gold's.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from leaderboard.core.errors import PayloadTooLarge, ServiceError

# Uncompressed bytes one archive may expand to, whatever its compressed size.
MAX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 200
_SHOWN_IDS = 5


class UploadError(ServiceError):
    """The upload was rejected; the message names the file, dataset or question id."""


@dataclass(frozen=True)
class DatasetTarget:
    """A dataset a phase scores, with the names an upload may use for it."""

    slug: str
    names: tuple[str, ...]
    qids: Sequence[str]


def decode_json(raw: bytes, where: str) -> Any:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UploadError(
            f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} on line {line}); save the file as UTF-8"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UploadError(f"{where}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise UploadError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        # Valid syntax that Python still refuses, e.g. an integer of more than 4300 digits.
        raise UploadError(f"{where}: not usable JSON: {exc}") from None


def _read_zip(raw: bytes, filename: str) -> dict[str, Any]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        raise UploadError(f"{filename}: not a valid zip archive") from None
    members = [m for m in archive.infolist() if not m.is_dir()]
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise UploadError(f"{filename}: {len(members)} files in the archive; at most {MAX_ARCHIVE_MEMBERS}")
    total = 0
    out: dict[str, Any] = {}
    for member in members:
        path = PurePosixPath(member.filename.replace("\\", "/"))
        # Reject rather than sanitise: a name like ../../x is a mistake or an attack.
        if path.is_absolute() or ".." in path.parts or member.filename.startswith(("/", "\\")):
            raise UploadError(f"{filename}: unsafe path {member.filename!r} in the archive")
        if path.name.startswith(".") or path.parts[0] == "__MACOSX":
            continue
        if path.suffix != ".json":
            raise UploadError(f"{filename}: {member.filename!r} is not a .json file; name members <dataset>.json")
        total += member.file_size
        if total > MAX_UNCOMPRESSED_BYTES:
            raise PayloadTooLarge(f"{filename}: the archive expands to more than {MAX_UNCOMPRESSED_BYTES} bytes")
        try:
            with archive.open(member) as fh:
                data = fh.read(member.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            # zipfile stops at the size the header declares, so a member whose header lies
            # fails its CRC check here; encrypted or exotic members fail here too.
            raise UploadError(
                f"{filename}: cannot read {member.filename!r} (corrupt, encrypted, or larger than its header says: {exc})"
            ) from None
        if len(data) > member.file_size:
            raise UploadError(f"{filename}: {member.filename!r} is larger than its header says")
        key = path.stem
        if key in out:
            raise UploadError(f"{filename}: two members for dataset {key!r}")
        out[key] = decode_json(data, f"{filename}:{member.filename}")
    if not out:
        raise UploadError(f"{filename}: the archive holds no .json file")
    return out


def parse_upload(
    raw: bytes,
    *,
    filename: str,
    targets: Sequence[DatasetTarget],
    dataset_hint: str | None = None,
) -> dict[str, Any]:
    """Return ``{dataset_slug: predictions}`` covering every target, or raise UploadError."""
    if not raw:
        raise UploadError(f"{filename}: the file is empty")
    by_name: dict[str, DatasetTarget] = {}
    for target in targets:
        for name in (target.slug, *target.names):
            by_name.setdefault(name, target)
            by_name.setdefault(name.lower(), target)

    if raw[:4] == b"PK\x03\x04":
        per_key = _read_zip(raw, filename)
    else:
        document = decode_json(raw, filename)
        if not isinstance(document, dict):
            raise UploadError(
                f"{filename}: expected a JSON object ({{dataset: {{qid: answer}}}} or {{qid: answer}}), "
                f"found {type(document).__name__}"
            )
        # {dataset: {qid: answer}}: every value an object (answers are strings) and at least one
        # key a dataset of the phase; other keys are then reported as unknown datasets below.
        looks_multi = (
            bool(document)
            and all(isinstance(v, dict) for v in document.values())
            and any(k in by_name or k.lower() in by_name for k in document)
        )
        if looks_multi:
            per_key = document
        elif dataset_hint:
            per_key = {dataset_hint: document}
        elif len(targets) == 1:
            per_key = {targets[0].slug: document}
        else:
            names = ", ".join(t.slug for t in targets)
            raise UploadError(
                f"{filename}: this phase scores several datasets ({names}); upload "
                "{dataset: {qid: answer}} or a zip of <dataset>.json files, or name the dataset"
            )

    result: dict[str, Any] = {}
    for key, value in per_key.items():
        target = by_name.get(key) or by_name.get(key.lower())
        if target is None:
            known = ", ".join(t.slug for t in targets)
            raise UploadError(f"{filename}: unknown dataset {key!r}; this phase scores: {known}")
        if target.slug in result:
            raise UploadError(f"{filename}: dataset {target.slug!r} appears twice")
        result[target.slug] = value
    missing = [t.slug for t in targets if t.slug not in result]
    if missing:
        raise UploadError(f"{filename}: no predictions for dataset(s) {', '.join(missing)}")
    return result


def check_qids(predictions: Mapping[str, Any], *, qids: Sequence[str], where: str) -> None:
    """Every gold question answered, nothing else: name the first offenders and the counts."""
    if not isinstance(predictions, dict):
        raise UploadError(f"{where}: expected a JSON object {{qid: answer}}, found {type(predictions).__name__}")
    gold = set(qids)
    given = set(predictions)
    missing = [q for q in qids if q not in given]
    unknown = [q for q in predictions if q not in gold]
    problems = []
    if missing:
        shown = ", ".join(repr(q) for q in missing[:_SHOWN_IDS])
        problems.append(f"{len(missing)} question(s) have no prediction (e.g. {shown})")
    if unknown:
        shown = ", ".join(repr(q) for q in unknown[:_SHOWN_IDS])
        problems.append(f"{len(unknown)} id(s) are not questions of this dataset (e.g. {shown})")
    if problems:
        raise UploadError(f"{where}: " + "; ".join(problems))
