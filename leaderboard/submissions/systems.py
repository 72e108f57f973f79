"""Submitted systems without Django: settings, the run contract, and checks of uploaded archives.

Both the web process (checking an upload before accepting it) and the workers
(running it) use this module, so it imports nothing from Django and nothing
from ``workers``.

The contract a system follows (README "Submitting a system"):

* it reads ``/input/manifest.json`` and the files it lists (``/input/<name>.jsonl.gz``,
  MRQA format with every answer field removed; Split III datasets under their
  sealed alias) and writes ``/output/<name>.json`` = ``{qid: answer}`` for each;
* a Docker image runs its own ENTRYPOINT/CMD; a code bundle (zip) is unpacked
  read-only at ``/system`` and runs as ``sh /system/run.sh`` or
  ``python3 /system/run.py`` on the challenge's base image;
* it runs as uid 10001 without network, with the limits of :class:`Limits`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from scoring import inputs

DEFAULT_BASE_IMAGE = "readerboard/python:bookworm"
BUNDLE_ENTRY_POINTS = (("run.sh", ["sh", "/system/run.sh"]), ("run.py", ["python3", "/system/run.py"]))
MAX_BUNDLE_MEMBERS = 2000


class ArchiveError(Exception):
    """An uploaded image or bundle cannot be used; the message says why and what to do."""


class OutputTooLarge(ArchiveError):
    """One output file is over the output limit."""


@dataclass(frozen=True)
class Limits:
    """What a system gets; stated up front on the challenge page and in the manifest."""

    cpus: float = 1.0
    memory_mb: int = 1024
    pids: int = 128
    nofile: int = 1024
    tmp_mb: int = 64
    shm_mb: int = 16
    output_mb: int = 64
    time_limit_s: float = 600.0
    log_bytes: int = 256 * 1024

    def as_env(self) -> dict[str, str]:
        return {
            "READERBOARD_CPUS": f"{self.cpus:g}",
            "READERBOARD_MEMORY_MB": str(self.memory_mb),
            "READERBOARD_TIME_LIMIT_S": f"{self.time_limit_s:g}",
            "READERBOARD_OUTPUT_MB": str(self.output_mb),
        }


@dataclass(frozen=True)
class SystemSettings:
    """A challenge's ``system_settings``: base image for bundles, runtime, limits."""

    base_image: str = DEFAULT_BASE_IMAGE
    # "" means the platform default (READERBOARD_CONTAINER_RUNTIME); "runc" or "runsc" to force one.
    runtime: str = ""
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> SystemSettings:
        raw = dict(raw or {})
        limits = raw.pop("limits", {}) or {}
        unknown = sorted(set(limits) - set(Limits.__dataclass_fields__)) + sorted(
            set(raw) - {"base_image", "runtime"}
        )
        if unknown:
            raise ValueError(f"unknown system settings: {', '.join(unknown)}")
        return cls(
            base_image=str(raw.get("base_image") or DEFAULT_BASE_IMAGE),
            runtime=str(raw.get("runtime") or ""),
            limits=Limits(**limits),
        )

    def as_json(self) -> dict[str, Any]:
        return {"base_image": self.base_image, "runtime": self.runtime, "limits": asdict(self.limits)}


@dataclass(frozen=True)
class RunDataset:
    """One dataset as the system sees it (``label`` is the alias while sealed)."""

    slug: str
    label: str
    format: str
    source: str  # path of the answer-free inputs on the platform's storage
    input_name: str
    output_name: str
    # Sealed: the system reads re-keyed ids (HMAC with this hex key) and the alias, never
    # the dataset's own ids or name; "" while the dataset is public.
    id_key: str = ""

    @property
    def sealed(self) -> bool:
        return bool(self.id_key)

    def qids_for_system(self, qids: Sequence[str]) -> dict[str, str]:
        """{the id the system reads and answers under: the dataset's own id}, every question.

        For a sealed dataset this is the map the re-keying made (recomputed from the
        stored inputs with the same key: cheaper to redo than to carry).
        """
        if not self.sealed:
            return {qid: qid for qid in qids}
        data = Path(self.source).read_bytes()
        _, visible = inputs.rekey(self.format, data, key=bytes.fromhex(self.id_key), label=self.label)
        return visible


@dataclass(frozen=True)
class RunPlan:
    submission_id: int
    attempt: int
    kind: str
    challenge: str
    phase: str
    portion: str
    upload_path: str
    image_digest: str
    base_image: str
    runtime: str
    limits: Limits
    datasets: list[RunDataset]

    def manifest(self) -> dict[str, Any]:
        return {
            "challenge": self.challenge,
            "phase": self.phase,
            "portion": self.portion,
            "datasets": [
                {"name": d.label, "input": d.input_name, "output": d.output_name, "format": d.format}
                for d in self.datasets
            ],
            "limits": asdict(self.limits),
        }


@dataclass
class RunOutcome:
    """What a run produced, as the worker hands it to the platform to judge and score."""

    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    output_too_large: bool
    duration_s: float
    logs: str
    runtime: str
    # The container's peak memory use, where the engine's cgroup could be read.
    peak_memory_bytes: int | None = None
    # dataset slug -> the bytes written, or an error saying why none can be read
    outputs: dict[str, bytes] = field(default_factory=dict)
    output_errors: dict[str, str] = field(default_factory=dict)
    # slugs among output_errors whose file was over the output limit
    outputs_too_large: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------- image archives


@dataclass(frozen=True)
class ImageArchive:
    """What an uploaded ``docker save`` archive holds, read without the engine."""

    image_id: str
    config: dict[str, Any]
    uncompressed_bytes: int


def open_tar(path: str | os.PathLike[str]) -> tarfile.TarFile:
    try:
        return tarfile.open(path, mode="r:*")
    except tarfile.ReadError:
        # tarfile's own message lists every compression it tried; the cause is simpler.
        raise ArchiveError("not a tar archive: upload what `docker save IMAGE -o image.tar` writes "
                           "(gzip allowed)") from None
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"not a readable tar archive: {exc}") from None


def _member_name(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def image_archive_inspect(path: str | os.PathLike[str], *, max_uncompressed: int) -> ImageArchive:
    """Check a ``docker save`` archive: one image, safe member names, a sane size, no VOLUMEs."""
    with open_tar(path) as tar:
        members: dict[str, tarfile.TarInfo] = {}
        total = 0
        try:
            for member in tar:
                name = _member_name(member.name)
                if name.startswith("/") or ".." in PurePosixPath(name).parts:
                    raise ArchiveError(f"unsafe member name in the archive: {member.name!r}")
                if member.issym() or member.islnk():
                    continue
                total += member.size
                if total > max_uncompressed:
                    raise ArchiveError(f"the archive expands past {max_uncompressed} bytes (the image size limit)")
                members[name] = member
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            raise ArchiveError(f"the archive is damaged or truncated: {exc}") from None
        if "manifest.json" not in members:
            raise ArchiveError("no manifest.json in the archive: make it with `docker save IMAGE -o image.tar`")
        manifest = _tar_json(tar, members["manifest.json"], "manifest.json")
        if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
            count = len(manifest) if isinstance(manifest, list) else "no"
            raise ArchiveError(f"the archive holds {count} images; save exactly one")
        entry = manifest[0]
        config_name = entry.get("Config")
        layers = entry.get("Layers")
        if not isinstance(config_name, str) or not isinstance(layers, list):
            raise ArchiveError("manifest.json lacks Config or Layers")
        for name in [config_name, *layers]:
            if not isinstance(name, str) or name not in members:
                raise ArchiveError(f"manifest.json names {name!r}, which is not in the archive")
        extracted = tar.extractfile(members[config_name])
        if extracted is None:
            raise ArchiveError(f"{config_name} is not a file")
        raw_config = extracted.read()
    try:
        config = json.loads(raw_config)
    except ValueError:
        raise ArchiveError(f"{config_name} is not JSON") from None
    if not isinstance(config, dict):
        raise ArchiveError(f"{config_name} is not a JSON object")
    if config.get("os", "linux") != "linux" or config.get("architecture", "amd64") != "amd64":
        raise ArchiveError(
            f"the image is for {config.get('os')}/{config.get('architecture')}; linux/amd64 is needed"
        )
    volumes = (config.get("config") or {}).get("Volumes") or {}
    if volumes:
        # A VOLUME would give the system a writable place besides /output.
        raise ArchiveError(f"the image declares VOLUME {', '.join(sorted(volumes))}; remove it (write to /output)")
    return ImageArchive("sha256:" + hashlib.sha256(raw_config).hexdigest(), config, total)


def _tar_json(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str) -> Any:
    fh = tar.extractfile(member)
    if fh is None or member.size > 16 * 1024 * 1024:
        raise ArchiveError(f"{name} is not a small file")
    try:
        return json.loads(fh.read())
    except ValueError:
        raise ArchiveError(f"{name} is not JSON") from None


def image_archive_untagged(src_path: str | os.PathLike[str], dst: BinaryIO) -> None:
    """Copy an image archive without its tags, uncompressed, for ``docker load``.

    A loaded ``RepoTags`` could move a tag the platform uses (say, the base image
    code bundles run on) to a team's image; untagged, the image is only its id.
    """
    with open_tar(src_path) as src, tarfile.open(fileobj=dst, mode="w") as out:
        for member in src:
            name = _member_name(member.name)
            if name in ("repositories", "index.json", "oci-layout"):
                continue
            if name == "manifest.json":
                manifest = _tar_json(src, member, name)
                for entry in manifest:
                    entry["RepoTags"] = None
                data = json.dumps(manifest).encode()
                info = tarfile.TarInfo("manifest.json")
                info.size = len(data)
                out.addfile(info, _BytesReader(data))
                continue
            out.addfile(member, src.extractfile(member) if member.isfile() else None)


class _BytesReader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._pos + size
        chunk = self._data[self._pos:end]
        self._pos += len(chunk)
        return chunk


# --------------------------------------------------------------------------- code bundles


@dataclass(frozen=True)
class BundleInfo:
    entry_point: str
    command: list[str]
    files: int
    uncompressed_bytes: int


def bundle_inspect(path: str | os.PathLike[str], *, max_uncompressed: int) -> BundleInfo:
    """Check a code bundle: a zip with ``run.sh`` or ``run.py`` at its top, safe names, bounded size."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        raise ArchiveError("not a zip archive; zip your code with run.py (or run.sh) at the top") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_BUNDLE_MEMBERS:
            raise ArchiveError(f"{len(members)} files in the bundle; at most {MAX_BUNDLE_MEMBERS}")
        total = 0
        files = set()
        for member in members:
            name = member.filename.replace("\\", "/")
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts or (parts and parts[0].endswith(":")):
                raise ArchiveError(f"unsafe path {member.filename!r} in the bundle")
            if (member.external_attr >> 16) & 0o170000 == 0o120000:
                raise ArchiveError(f"{member.filename!r} is a symbolic link; bundles hold plain files only")
            total += member.file_size
            if total > max_uncompressed:
                raise ArchiveError(f"the bundle expands past {max_uncompressed} bytes (the bundle size limit)")
            if not member.is_dir():  # a folder named run.sh is no entry point
                files.add(name.rstrip("/"))
    for entry, command in BUNDLE_ENTRY_POINTS:
        if entry in files:
            return BundleInfo(entry, command, len(members), total)
    raise ArchiveError("no run.sh or run.py at the top of the bundle (not inside a folder)")


def bundle_extract(path: str | os.PathLike[str], dest: Path, *, max_uncompressed: int) -> BundleInfo:
    """Unpack a checked bundle into ``dest``, world-readable, nothing executable-as-setuid."""
    info = bundle_inspect(path, max_uncompressed=max_uncompressed)
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            target = dest.joinpath(*PurePosixPath(member.filename.replace("\\", "/")).parts)
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                remaining = member.file_size
                while chunk := src.read(1 << 20):
                    remaining -= len(chunk)
                    if remaining < 0:
                        raise ArchiveError(f"{member.filename!r} is larger than its header says")
                    out.write(chunk)
            executable = (member.external_attr >> 16) & 0o111
            target.chmod(0o755 if executable else 0o644)
    for folder, dirs, _files in os.walk(dest):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
    dest.chmod(0o755)
    return info


# --------------------------------------------------------------------------- outputs


def output_read(output_dir: Path, name: str, *, limit_bytes: int) -> bytes:
    """Read ``/output/<name>`` as the system left it, refusing anything but a plain file.

    A symbolic link is refused rather than followed: it is resolved on the host,
    where it could point at any file the worker can read.
    """
    path = output_dir / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ArchiveError(f"output missing: expected /output/{name}") from None
    except OSError as exc:
        if os.path.islink(path):
            raise ArchiveError(f"/output/{name} is a symbolic link; write a plain file") from None
        raise ArchiveError(f"/output/{name} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ArchiveError(f"/output/{name} is not a plain file")
        data = fh.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise OutputTooLarge(f"/output/{name} is larger than the output limit of {limit_bytes} bytes")
    return data
