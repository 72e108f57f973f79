"""Reading a prediction upload: one JSON file or a zip of per-dataset JSON files.

An upload is accepted whole or rejected whole, so every check happens here,
before anything is stored: size, encoding, JSON syntax, archive member names
(no path traversal, no zip bombs), which datasets it covers, and the question
ids of each dataset against the gold's.

JSON is read by ``answers_json``, which checks the shape as it reads, so what a
refused upload costs is bounded by the phase's gold, not by what the upload holds.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from leaderboard.core.errors import PayloadTooLarge, ServiceError
from leaderboard.sandbox.answers_json import Answers, AnswersReader, JsonRejected, answers_decode, shown
from leaderboard.sandbox.archives import ArchiveError, zip_directory_check

MAX_ARCHIVE_MEMBERS = 200
# 200 entries with names up to 1 KiB and their headers; a bigger directory is refused unread.
MAX_ARCHIVE_DIRECTORY_BYTES = 256 * 1024
_SHOWN_IDS = 5


class UploadError(ServiceError):
    """The upload was rejected; the message names the file, dataset or question id."""


@dataclass(frozen=True)
class DatasetTarget:
    """A dataset a phase scores, with the names an upload may use for it."""

    slug: str
    names: tuple[str, ...]
    qids: Sequence[str]


def _read_zip(
    raw: bytes, filename: str, *, target_named: Callable[[str], DatasetTarget | None], known: str,
    max_expanded_bytes: int,
) -> dict[str, Answers]:
    try:
        # Before ZipFile builds an entry for each file its directory lists (a million one-letter
        # names cost the web process hundreds of MiB, and a refused upload costs the team nothing).
        zip_directory_check(io.BytesIO(raw), max_members=MAX_ARCHIVE_MEMBERS,
                            max_directory_bytes=MAX_ARCHIVE_DIRECTORY_BYTES, what="the archive")
    except ArchiveError as exc:
        raise UploadError(f"{filename}: {exc}") from None
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        raise UploadError(f"{filename}: not a valid zip archive") from None
    members = [m for m in archive.infolist() if not m.is_dir()]
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise UploadError(f"{filename}: {len(members)} files in the archive; at most {MAX_ARCHIVE_MEMBERS}")
    total = 0
    out: dict[str, Answers] = {}
    # A member's own defects (an unknown dataset, invalid JSON, a wrong shape) are collected, so
    # one refusal names every member that needs fixing; a defect of the archive stops at once.
    problems: list[str] = []
    seen: set[str] = set()
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
        if total > max_expanded_bytes:
            raise PayloadTooLarge(f"{filename}: the archive expands to more than {max_expanded_bytes} bytes")
        # Which dataset, before a byte of the member is read.
        target = target_named(path.stem)
        if target is None:
            problems.append(f"{filename}: unknown dataset {shown(path.stem)}; this phase scores: {known}")
            continue
        if target.slug in seen:
            raise UploadError(f"{filename}: two members for dataset {target.slug!r}")
        seen.add(target.slug)
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
        try:
            out[target.slug] = answers_decode(data, where=f"{filename}:{member.filename}", qids=target.qids)
        except JsonRejected as exc:
            problems.append(exc.message)
    if problems:
        raise UploadError("\n".join(problems))
    if not out:
        raise UploadError(f"{filename}: the archive holds no .json file")
    return out


def parse_upload(
    raw: bytes,
    *,
    filename: str,
    targets: Sequence[DatasetTarget],
    max_expanded_bytes: int,
    dataset_hint: str | None = None,
    require_all: bool = True,
) -> dict[str, Answers]:
    """Return ``{dataset_slug: answers}`` covering every target, or raise UploadError.

    ``max_expanded_bytes`` bounds what a zip's members may expand to in all (413 past it).
    ``require_all=False`` leaves the targets the upload lacks out of the result, for a caller
    that names them together with the other datasets' problems (``missing_datasets_problem``).
    """
    if not raw:
        raise UploadError(f"{filename}: the file is empty")
    by_name: dict[str, DatasetTarget] = {}
    for target in targets:
        for name in (target.slug, *target.names):
            by_name.setdefault(name, target)
            by_name.setdefault(name.lower(), target)

    def target_named(name: str) -> DatasetTarget | None:
        return by_name.get(name) or by_name.get(name.lower())

    known = ", ".join(t.slug for t in targets)
    try:
        if raw[:4] == b"PK\x03\x04":
            result = _read_zip(raw, filename, target_named=target_named, known=known,
                               max_expanded_bytes=max_expanded_bytes)
        else:
            result = _read_document(raw, filename, targets=targets, target_named=target_named, known=known,
                                    dataset_hint=dataset_hint)
    except JsonRejected as exc:
        raise UploadError(exc.message) from None
    missing = missing_datasets_problem(result, filename=filename, targets=targets)
    if missing and require_all:
        raise UploadError(missing)
    return result


def missing_datasets_problem(result: dict[str, Answers], *, filename: str, targets: Sequence[DatasetTarget]) -> str:
    """"file: no predictions for dataset(s) a, b" for the targets ``result`` lacks ("" if none)."""
    missing = [t.slug for t in targets if t.slug not in result]
    return f"{filename}: no predictions for dataset(s) {', '.join(missing)}" if missing else ""


def _read_document(
    raw: bytes, filename: str, *, targets: Sequence[DatasetTarget],
    target_named: Callable[[str], DatasetTarget | None], known: str, dataset_hint: str | None,
) -> dict[str, Answers]:
    """One JSON file: ``{dataset: {qid: answer}}``, or ``{qid: answer}`` for one dataset."""
    reader = AnswersReader(raw, filename)
    expected = "a JSON object ({dataset: {qid: answer}} or {qid: answer})"
    first = reader.first_member(expected)
    # {dataset: {qid: answer}} when the first key names a dataset of the phase (no question id
    # does); the other keys must then be datasets too.  Decided from the first member, as the
    # file is read once, front to back.
    if first is not None and target_named(first[0]) is not None:
        result: dict[str, Answers] = {}
        for key in reader.object_members(expected):
            target = target_named(key)
            if target is None:
                raise UploadError(f"{filename}: unknown dataset {shown(key)}; this phase scores: {known}")
            if target.slug in result:
                raise UploadError(f"{filename}: dataset {target.slug!r} appears twice")
            result[target.slug] = reader.answers(
                qids=target.qids, where=f"{filename} [{target.slug}]",
                expected=f"a JSON object {{qid: answer}} for dataset {shown(key)}",
            )
        reader.finish()
        return result
    if dataset_hint:
        named = target_named(dataset_hint)
        if named is None:
            raise UploadError(f"{filename}: unknown dataset {shown(dataset_hint)}; this phase scores: {known}")
        target = named
    elif len(targets) == 1:
        target = targets[0]
    else:
        # An object for the first value: most likely {dataset: ...} with a name the phase lacks.
        unknown = f"unknown dataset {shown(first[0])}; " if first is not None and first[1] == "object" else ""
        raise UploadError(
            f"{filename}: {unknown}this phase scores several datasets ({known}); upload "
            "{dataset: {qid: answer}} or a zip of <dataset>.json files, or name the dataset"
        )
    answers = reader.answers(qids=target.qids, where=f"{filename} [{target.slug}]", expected=expected)
    reader.finish()
    return {target.slug: answers}


def check_qids(answers: Answers, *, qids: Sequence[str], where: str) -> None:
    """Every gold question answered, nothing else: name the first offenders and the counts."""
    given = answers.by_qid
    missing = [q for q in qids if q not in given]
    problems = []
    if missing:
        shown_ids = ", ".join(repr(q) for q in missing[:_SHOWN_IDS])
        problems.append(f"{len(missing)} question(s) have no prediction (e.g. {shown_ids})")
    if answers.n_unknown:
        # The reader kept the first few of them only: an id that is not a question is never stored.
        shown_ids = ", ".join(repr(q) for q in answers.unknown_ids[:_SHOWN_IDS])
        problems.append(f"{answers.n_unknown} id(s) are not questions of this dataset (e.g. {shown_ids})")
    if problems:
        raise UploadError(f"{where}: " + "; ".join(problems))
