"""Checks of uploaded archives and of a run's outputs, without Django or the container engine.

The web process checks an upload with these before accepting it (``image_archive_inspect``,
``bundle_inspect``, ``zip_directory_check`` for every zip it opens); a compute worker unpacks and
loads with them (``bundle_extract``, ``image_archive_untagged``, ``run_image_*``) and reads what a
system wrote (``output_read``).  Every tar header is read through ``open_tar``'s guard, so what an
archive costs to inspect is bounded by the limits here, not by what it holds.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import posixpath
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO, ClassVar, Protocol, Self

from leaderboard.sandbox.contract import (
    BUNDLE_DECLARATION,
    BUNDLE_ENTRY_POINTS,
    INTERACTIVE,
    PLATFORM_ERRNOS,
    PROTOCOL_LABEL,
    PROTOCOLS,
)

MAX_BUNDLE_MEMBERS = 2000
# Inspecting an upload must cost memory bounded by these, not by what the archive holds:
# tarfile keeps every entry it has read, and json.loads builds every value, at ~25 bytes of heap
# per byte for a list of empty objects.  docker save writes a few entries per layer (at most 127
# layers) and a config of some KiB; a zip's central directory is a few hundred bytes per file.
MAX_IMAGE_MEMBERS = 1000
MAX_IMAGE_JSON_BYTES = 1024 * 1024
MAX_BUNDLE_DIRECTORY_BYTES = 4 * 1024 * 1024
# Linux's NAME_MAX, and a path well under PATH_MAX once the run folder is in front of it.
MAX_BUNDLE_NAME_BYTES = 255
MAX_BUNDLE_PATH_BYTES = 1024
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


class ArchiveError(Exception):
    """An uploaded image or bundle cannot be used; the message says why and what to do."""


class OutputTooLarge(ArchiveError):
    """One output file is over the output limit."""


@dataclass(frozen=True)
class ImageArchive:
    """What an uploaded ``docker save`` archive holds, read without the engine."""

    image_id: str
    config: dict[str, Any]
    uncompressed_bytes: int


# What tarfile reads on its own account, before any entry reaches the checks here: it
# reads a GNU long-name/long-link or pax header's body into memory whole, up to the 8 GiB its size
# field allows (a 1 MiB gzipped upload took the web process to 1.1 GiB), and copies a global pax
# header into every later entry.  docker save (Go's archive/tar) writes pax headers of a few
# hundred bytes for long names, one per entry at most, none global, no sparse files.
MAX_TAR_EXTENDED_HEADER_BYTES = 64 * 1024
# Every byte tarfile reads for headers in one archive (its 512-byte blocks, extended headers' bodies,
# GNU sparse maps): 1,000 entries (MAX_IMAGE_MEMBERS) take about 0.5 MiB of it.
MAX_TAR_HEADER_BYTES = 2 * 1024 * 1024
# Extended headers in a row (GNU tar writes a long name and a long link, pax one header): tarfile
# reads a chain by recursion, each level holding its header.
_TAR_EXTENDED_IN_A_ROW = 4
# pax records one entry may carry (path, linkpath, size, times, owner: docker save writes under ten).
_TAR_PAX_RECORDS = 64
_TAR_EXTENDED_KINDS = {
    tarfile.GNUTYPE_LONGNAME: "GNU long-name", tarfile.GNUTYPE_LONGLINK: "GNU long-link",
    tarfile.XHDTYPE: "pax extended", tarfile.SOLARIS_XHDTYPE: "Solaris extended", tarfile.XGLTYPE: "pax global",
}
# tarfile.open("r:*") tells these apart by trying each; the stream is opened here instead, so that
# what tarfile reads is the uncompressed archive and passes through _TarHeaderGuard.  xz is refused:
# its decoder allocates the dictionary the stream names (up to 1.5 GiB), and LZMAFile takes no memory
# limit; gzip's window is 32 KiB and bzip2's blocks under 4 MiB.
_TAR_COMPRESSIONS = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_NOT_A_TAR = "upload what `docker save IMAGE -o image.tar` writes (gzip allowed)"


class _TarHeaderGuard:
    """The uncompressed archive as tarfile reads it, bounding what it reads on its own account.

    Two checks, so that no header tarfile understands can cost more memory than the bounds
    above: each header block tarfile parses is checked before it reads the header's body
    (:meth:`header_check`, called from :class:`_CheckedTarInfo`'s ``frombuf``), and every read it
    makes outside a member's bytes is bounded in size and, over the archive, in total: whatever
    a later Python's tarfile reads for headers, it cannot read more.  A member's bytes are read
    by the checks here, through :class:`_MemberData`, in bounded chunks of their own.
    """

    def __init__(self, stream: IO[bytes], *, compressed: bool) -> None:
        self._stream = stream
        self._where = " of the uncompressed archive" if compressed else ""
        self.member_data = False  # True while _MemberData reads a member's bytes
        self._header_bytes = 0
        self._headers = 0
        self._extended_in_a_row = 0
        self._pax_body_next = ""  # where the pax header whose body tarfile reads next is

    def read(self, size: int = -1, /) -> bytes:
        if not self.member_data:
            if size < 0 or size > MAX_TAR_EXTENDED_HEADER_BYTES:
                raise ArchiveError(f"a header at byte {self._stream.tell():,}{self._where} is {size:,} bytes long; "
                                   f"a header may be at most {MAX_TAR_EXTENDED_HEADER_BYTES // 1024} KiB: {_NOT_A_TAR}")
            self._header_bytes += size
            if self._header_bytes > MAX_TAR_HEADER_BYTES:
                raise ArchiveError(f"the archive's headers add up to more than {MAX_TAR_HEADER_BYTES // 2**20} MiB "
                                   f"by byte {self._stream.tell():,}{self._where} (extended headers or sparse "
                                   f"maps; docker save writes about 1 KiB per entry): {_NOT_A_TAR}")
            if self._pax_body_next:
                # tarfile reads a pax header's body right after its block, and then, for GNU.sparse.*
                # records, a sparse map (version 1.0: from the data area, joining 512-byte reads).
                where, self._pax_body_next = self._pax_body_next, ""
                data = self._stream.read(size)
                if b" GNU.sparse." in data:
                    raise ArchiveError(f"{where} makes the next entry a sparse file, which docker save never "
                                       f"writes: {_NOT_A_TAR}")
                return data
        return self._stream.read(size)

    def header_check(self, info: tarfile.TarInfo) -> None:
        """Refuse a header tarfile has just parsed before it reads what the header announces."""
        self._headers += 1
        where = f"header {self._headers} (at byte {self._stream.tell() - tarfile.BLOCKSIZE:,}{self._where})"
        kind = _TAR_EXTENDED_KINDS.get(info.type)
        if kind is None:
            self._extended_in_a_row = 0
            if info.type == tarfile.GNUTYPE_SPARSE:
                raise ArchiveError(f"{where} is a GNU sparse file ({info.name[:200]!r}), which docker save never "
                                   f"writes: {_NOT_A_TAR}")
            return
        self._extended_in_a_row += 1
        if info.size > MAX_TAR_EXTENDED_HEADER_BYTES:
            raise ArchiveError(f"{where} is a {kind} header of {info.size:,} bytes; an extended header may be at "
                               f"most {MAX_TAR_EXTENDED_HEADER_BYTES // 1024} KiB (docker save writes a few "
                               f"hundred bytes): {_NOT_A_TAR}")
        if info.type == tarfile.XGLTYPE:
            # tarfile copies a global header into every later entry: 64 KiB of it, 1,000 times.
            raise ArchiveError(f"{where} is a pax global header, which docker save never writes: {_NOT_A_TAR}")
        if self._extended_in_a_row > _TAR_EXTENDED_IN_A_ROW:
            raise ArchiveError(f"{where} is extended header {self._extended_in_a_row} in a row before an entry; "
                               f"at most {_TAR_EXTENDED_IN_A_ROW}: {_NOT_A_TAR}")
        if info.type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
            self._pax_body_next = f"the {kind} header {where.removeprefix('header ')}"

    def write(self, data: bytes, /) -> int:
        raise io.UnsupportedOperation("an uploaded archive is read only")

    def tell(self) -> int:
        return self._stream.tell()

    def seek(self, pos: int, whence: int = 0, /) -> int:
        return self._stream.seek(pos, whence)

    def close(self) -> None:
        self._stream.close()


class _CheckedTarInfo(tarfile.TarInfo):
    """tarfile's TarInfo, whose every header (``fromtarfile`` parses each with ``frombuf``, extended
    ones included) is checked by the archive's guard before tarfile processes it."""

    __slots__ = ()
    guard: ClassVar[_TarHeaderGuard | None] = None  # set on the subclass made for one archive

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        info = super().frombuf(buf, encoding, errors)
        if cls.guard is not None:
            cls.guard.header_check(info)
        return info


def _tarinfo_for(guard: _TarHeaderGuard) -> type[tarfile.TarInfo]:
    class _ArchiveTarInfo(_CheckedTarInfo):
        __slots__ = ()

    _ArchiveTarInfo.guard = guard
    return _ArchiveTarInfo


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _MemberData:
    """A member's bytes, read for a check here (each call bounded by its caller), not a header."""

    def __init__(self, guard: _TarHeaderGuard, fh: IO[bytes]) -> None:
        self._guard = guard
        self._fh = fh

    def read(self, size: int = -1, /) -> bytes:
        self._guard.member_data = True
        try:
            return self._fh.read(size)
        finally:
            self._guard.member_data = False


def _member_open(tar: tarfile.TarFile, member: tarfile.TarInfo) -> _MemberData | None:
    """A regular member's bytes in an archive of :func:`open_tar` (None for anything else)."""
    guard = tar.fileobj
    if not isinstance(guard, _TarHeaderGuard):
        raise TypeError("open the archive with open_tar")
    fh = tar.extractfile(member) if member.isfile() else None
    return None if fh is None else _MemberData(guard, fh)


@contextmanager
def open_tar(path: str | os.PathLike[str]) -> Iterator[tarfile.TarFile]:
    """An uploaded tar archive (plain, gzip or bzip2; xz is refused), every header tarfile reads
    bounded (:class:`_TarHeaderGuard`); read its members' bytes with :func:`_member_open`."""
    with ExitStack() as stack:
        try:
            raw = stack.enter_context(open(path, "rb"))
            magic = raw.read(6)
            raw.seek(0)
        except OSError as exc:
            raise ArchiveError(f"not a readable tar archive: {exc.strerror or exc}") from None
        compression = next((kind for start, kind in _TAR_COMPRESSIONS if magic.startswith(start)), "")
        stream: IO[bytes] = raw
        if compression == "gzip":
            stream = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))  # type: ignore[arg-type]
        elif compression == "bzip2":
            stream = stack.enter_context(bz2.BZ2File(raw))
        elif compression == "xz":
            raise ArchiveError("the archive is xz-compressed, which is not accepted (its decoder's memory is "
                               "what the archive asks for, up to 1.5 GiB): upload it uncompressed or gzipped "
                               "(`docker save IMAGE | gzip > image.tar.gz`)")
        guard = _TarHeaderGuard(stream, compressed=bool(compression))
        tarinfo = _tarinfo_for(guard)
        try:
            tar = tarfile.open(fileobj=guard, mode="r:", tarinfo=tarinfo)
        except tarfile.ReadError:
            # tarfile's own message lists every compression it tried; the cause is simpler.
            raise ArchiveError(f"not a tar archive{' inside the ' + compression if compression else ''}: "
                               f"{_NOT_A_TAR}") from None
        except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            raise ArchiveError(f"not a readable tar archive: {exc}") from None
        with tar:
            yield tar


def _member_name(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def image_archive_inspect(path: str | os.PathLike[str], *, max_uncompressed: int) -> ImageArchive:
    """Check a ``docker save`` archive: one image, safe member names, a sane size, no VOLUMEs,
    and layers that are the ones its config names.

    The engine knows an image by its config's hash and skips every layer whose chain it already
    has, so an archive holding another image's config and placeholder layers would run that
    other image.  Every layer is hashed here as ``docker load`` would (uncompressed) and must be
    the config's ``rootfs.diff_ids`` entry at its position: an archive proves it holds what it names.
    """
    with open_tar(path) as tar:
        members: dict[str, tarfile.TarInfo] = {}
        links: dict[str, str] = {}
        digests: dict[str, _BlobDigest] = {}
        # Small members' bytes: manifest.json and the config are read again below, and going back
        # in a gzipped archive decompresses it again from its start.
        small: dict[str, bytes] = {}
        kept = total = 0
        try:
            for entries, member in enumerate(tar, start=1):
                if entries > MAX_IMAGE_MEMBERS:
                    raise ArchiveError(f"more than {MAX_IMAGE_MEMBERS} entries in the archive; docker save writes a "
                                       "few per layer: upload what `docker save IMAGE -o image.tar` writes")
                name = _member_name(member.name)
                if name.startswith("/") or ".." in PurePosixPath(name).parts:
                    raise ArchiveError(f"unsafe member name in the archive: {member.name!r}")
                if len(member.pax_headers) > _TAR_PAX_RECORDS:
                    # Each entry keeps its records (a 60 KiB header of tiny ones is 1.4 MiB of dict).
                    raise ArchiveError(f"{member.name[:200]!r} carries {len(member.pax_headers)} pax records; "
                                       f"at most {_TAR_PAX_RECORDS} (docker save writes a few): {_NOT_A_TAR}")
                if member.sparse is not None:
                    # A pax sparse map (GNU.sparse.*): docker save never writes one.
                    raise ArchiveError(f"{member.name[:200]!r} is a sparse file, which docker save never writes: "
                                       f"{_NOT_A_TAR}")
                if member.issym() or member.islnk():
                    # docker save stores a layer that occurs twice once, and links to it.
                    links[name] = _link_target(name, member)
                    continue
                total += member.size
                if total > max_uncompressed:
                    raise ArchiveError(f"the archive expands past {max_uncompressed} bytes (the image size limit)")
                members[name] = member
                fh: _Readable | None = _member_open(tar, member)
                if fh is not None and member.size <= _SMALL_MEMBER and kept + member.size <= _SMALL_MEMBERS_BYTES:
                    kept += member.size
                    small[name] = fh.read()
                    fh = io.BytesIO(small[name])
                if fh is not None:
                    digest = _blob_digest(fh, room=max_uncompressed - total + member.size)
                    total += max(0, digest.inflated_bytes - member.size)  # a gzipped layer counts expanded
                    digests[name] = digest
        except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            raise ArchiveError(f"the archive is damaged or truncated: {exc}") from None
        for link, target in links.items():
            if target in members and link not in members:
                members[link] = members[target]
                if target in digests:
                    digests[link] = digests[target]
                if target in small:
                    small[link] = small[target]
        if "manifest.json" not in members:
            raise ArchiveError("no manifest.json in the archive: make it with `docker save IMAGE -o image.tar`")
        manifest = _tar_json(tar, members["manifest.json"], "manifest.json", data=small.get("manifest.json"))
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
        if members[config_name].size > MAX_IMAGE_JSON_BYTES:
            raise ArchiveError(f"{config_name} (the image's config) is over {MAX_IMAGE_JSON_BYTES // 1024} KiB")
        extracted = _member_open(tar, members[config_name]) if config_name not in small else None
        if extracted is None and config_name not in small:
            raise ArchiveError(f"{config_name} is not a file")
        raw_config = small[config_name] if extracted is None else extracted.read(MAX_IMAGE_JSON_BYTES + 1)
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
    container_config = config.get("config") or {}
    if not isinstance(container_config, dict):
        raise ArchiveError(f"{config_name}: its \"config\" is not a JSON object")
    volumes = container_config.get("Volumes") or {}
    if volumes:
        # A VOLUME would give the system a writable place besides /output.
        raise ArchiveError(f"the image declares VOLUME {', '.join(sorted(volumes))}; remove it (write to /output)")
    if not (container_config.get("Entrypoint") or container_config.get("Cmd")):
        # The engine would refuse to create a container of it ("no command specified") at every attempt.
        raise ArchiveError("the image has no ENTRYPOINT or CMD, so there is nothing to run: add one "
                           '(e.g. ENTRYPOINT ["python3", "/app/run.py"]) and build and save it again')
    _layers_verify(layers, config.get("rootfs"), digests)
    return ImageArchive("sha256:" + hashlib.sha256(raw_config).hexdigest(), config, total)


def _layers_verify(layers: list[str], rootfs: Any, digests: dict[str, _BlobDigest]) -> None:
    """Each layer file of the archive must hash to the config's diff_id at its position."""
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or len(diff_ids) != len(layers):
        named = len(diff_ids) if isinstance(diff_ids, list) else "no"
        raise ArchiveError(f"the image's config lists {named} layers (rootfs.diff_ids) and manifest.json "
                           f"{len(layers)}; save the image again with `docker save`")
    for position, (layer, diff_id) in enumerate(zip(layers, diff_ids, strict=True), start=1):
        digest = digests.get(layer)
        if digest is None:
            raise ArchiveError(f"layer {position} ({layer}) is not a file in the archive")
        if digest.compression not in ("", "gzip"):
            raise ArchiveError(f"layer {position} ({layer}) is {digest.compression}-compressed, which cannot be "
                               "checked here; save the image with `docker save` (uncompressed or gzip)")
        # What docker load hashes: a gzipped layer's content, any other layer as it is.
        content = digest.inflated or digest.sha256
        if diff_id != content:
            raise ArchiveError(
                f"layer {position} of {len(layers)} ({layer}) is not the layer the image's config names: "
                f"its content hashes to {content}, where rootfs.diff_ids[{position - 1}] "
                f"is {diff_id}. An archive must hold its image's own layers: save it again with `docker save`"
            )


@dataclass(frozen=True)
class _BlobDigest:
    sha256: str  # of the member as stored
    inflated: str = ""  # of its gunzipped content, for a gzipped member
    inflated_bytes: int = 0
    compression: str = ""  # "", "gzip", or a compression that is not checked ("zstd")


_SMALL_MEMBER = 256 * 1024
_SMALL_MEMBERS_BYTES = 16 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_OTHER_MAGIC = {b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


def _blob_digest(fh: _Readable, *, room: int) -> _BlobDigest:
    """sha256 of a member as stored and, when gzipped, of its content (a diff_id is the digest of
    the uncompressed layer tar); the content may expand to ``room`` bytes at most."""
    raw = hashlib.sha256()
    inflated = hashlib.sha256()
    inflater: Any = None
    inflated_bytes = 0
    compression = ""
    first = True
    while chunk := fh.read(1 << 20):
        if first:
            first = False
            if chunk.startswith(_GZIP_MAGIC):
                compression, inflater = "gzip", zlib.decompressobj(wbits=31)
            else:
                compression = next((kind for magic, kind in _OTHER_MAGIC.items() if chunk.startswith(magic)), "")
        raw.update(chunk)
        data = chunk
        while inflater is not None and data:
            # At most 1 MiB out per call: a small gzipped member may expand a thousandfold.
            out = inflater.decompress(data, 1 << 20)
            inflated_bytes += len(out)
            if inflated_bytes > room:
                raise ArchiveError(f"a layer expands past the image size limit ({inflated_bytes} bytes and more)")
            inflated.update(out)
            data = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data:
                # Concatenated gzip members (pigz) are one stream to the engine, too.
                data, inflater = inflater.unused_data, zlib.decompressobj(wbits=31)
    if inflater is not None and not inflater.eof:
        raise ArchiveError("a gzipped layer is truncated")
    return _BlobDigest(
        sha256="sha256:" + raw.hexdigest(),
        inflated="sha256:" + inflated.hexdigest() if compression == "gzip" else "",
        inflated_bytes=inflated_bytes,
        compression=compression,
    )


def _link_target(name: str, member: tarfile.TarInfo) -> str:
    """The archive member a link names: relative to the link's folder for a symbolic link,
    to the archive's root for a hard link; "" when it points outside the archive."""
    if member.islnk():
        target = _member_name(member.linkname)
    else:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(name), member.linkname))
    if target.startswith(("/", "../")) or target == "..":
        return ""
    return target


def _tar_json(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, *, data: bytes | None = None) -> Any:
    """A member's JSON; ``data``: its bytes, when they were read already."""
    fh: _Readable | None = _member_open(tar, member) if data is None else io.BytesIO(data)
    if fh is None or member.size > MAX_IMAGE_JSON_BYTES:
        raise ArchiveError(f"{name} is not a small file (at most {MAX_IMAGE_JSON_BYTES // 1024} KiB)")
    try:
        return json.loads(fh.read())
    except ValueError:
        raise ArchiveError(f"{name} is not JSON") from None


def image_archive_untagged(src_path: str | os.PathLike[str], dst: BinaryIO, *, reference: str = "") -> None:
    """Copy an image archive without its tags, uncompressed, for ``docker load``; with ``reference``,
    that is its only tag (the run's own, see :func:`run_image_reference`).

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
                    entry["RepoTags"] = [reference] if reference else None
                data = json.dumps(manifest).encode()
                info = tarfile.TarInfo("manifest.json")
                info.size = len(data)
                out.addfile(info, _BytesReader(data))
                continue
            out.addfile(member, _member_open(src, member))


def run_image_reference(repository: str, submission_id: int, attempt: int) -> str:
    """The name one run's image is loaded under: removing it after the run removes the image
    unless something else (the base image's tag, another run's reference) still names it."""
    return f"{repository}/{submission_id}:{attempt}"


def run_image_parse(repository: str, reference: str) -> tuple[int, int] | None:
    """(submission id, attempt) of a run's reference in ``repository``; None for any other name."""
    name, _, tag = reference.rpartition(":")
    prefix, _, submission = name.rpartition("/")
    if prefix != repository or not submission.isdigit() or not tag.isdigit():
        return None
    return int(submission), int(tag)


@dataclass(frozen=True)
class RunImage:
    """An image the engine holds under a run's reference."""

    reference: str
    image_id: str
    size_bytes: int
    submission_id: int
    attempt: int


def run_images_list(client: Any, repository: str) -> list[RunImage]:
    """Every run reference ``client`` (a ``docker.DockerClient``) holds in ``repository``, one entry
    per reference (several may name one image).  Engine errors are the caller's to handle."""
    found = []
    for image in client.images.list(filters={"reference": f"{repository}/*"}):
        for reference in image.tags:
            parsed = run_image_parse(repository, reference)
            if parsed is not None:
                found.append(RunImage(reference, image.id, int(image.attrs.get("Size") or 0), *parsed))
    return found


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
    protocol: str = "batch"  # what its readerboard.json declares


def image_protocol(image: ImageArchive) -> str:
    """What an image declares with its ``org.readerboard.protocol`` label ("batch" without one)."""
    labels = (image.config.get("config") or {}).get("Labels") or {}
    declared = labels.get(PROTOCOL_LABEL, "batch") if isinstance(labels, dict) else "batch"
    if declared not in PROTOCOLS:
        raise ArchiveError(f"the image's label {PROTOCOL_LABEL}={declared!r} is not one of {', '.join(PROTOCOLS)}")
    return str(declared)


def _bundle_protocol(archive: zipfile.ZipFile) -> str:
    member = next((m for m in archive.infolist() if m.filename.replace("\\", "/") == BUNDLE_DECLARATION), None)
    if member is None:
        return "batch"
    if member.file_size > 64 * 1024:
        raise ArchiveError(f"{BUNDLE_DECLARATION} is larger than 64 KiB")
    try:
        declared = json.loads(archive.read(member))
    except (ValueError, zipfile.BadZipFile, OSError):
        raise ArchiveError(f'{BUNDLE_DECLARATION} is not JSON; write {{"protocol": "{INTERACTIVE}"}}') from None
    protocol = declared.get("protocol", "batch") if isinstance(declared, dict) else None
    if protocol not in PROTOCOLS:
        raise ArchiveError(f'{BUNDLE_DECLARATION}: "protocol" must be one of {", ".join(PROTOCOLS)}')
    return str(protocol)


def _zip_directory_check(path: str | os.PathLike[str]) -> None:
    """Refuse a code bundle whose central directory is too big (``zip_directory_check``)."""
    try:
        with open(path, "rb") as fh:
            zip_directory_check(fh, max_members=MAX_BUNDLE_MEMBERS, max_directory_bytes=MAX_BUNDLE_DIRECTORY_BYTES,
                                what="the bundle")
    except OSError:
        return  # ZipFile says what is wrong


def zip_directory_check(fh: BinaryIO, *, max_members: int, max_directory_bytes: int, what: str) -> None:
    """Refuse a zip whose central directory is too big, from its end record, before ``ZipFile``
    builds an entry object for each file (300,000 empty entries cost 158 MiB that way).  The one
    check for every zip the platform opens (code bundles, zipped prediction files)."""
    # The end records as ZipFile itself reads them: a record of its own finding could differ
    # from the one ZipFile uses (a record without a comment is taken from the file's last 22 bytes
    # before any search; a ZIP64 record, when present, overrides the classic one's counts).
    end_records = getattr(zipfile, "_EndRecData", None)
    try:
        if end_records is not None:
            record = end_records(fh)
            if record is None:
                return  # not a zip (or a damaged one): ZipFile's refusal says so
            entries, directory = int(record[4]), int(record[5])  # _ECD_ENTRIES_TOTAL, _ECD_SIZE
        else:  # a Python whose zipfile has no such function: the classic record, searched for
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - (65535 + 22)))  # the end record and its comment, at most
            tail = fh.read()
            at = tail.rfind(b"PK\x05\x06")
            if at < 0 or len(tail) - at < 22:
                return
            entries, directory = struct.unpack("<HI", tail[at + 10:at + 16])
    except (OSError, zipfile.BadZipFile, struct.error):
        return  # ZipFile says what is wrong
    finally:
        fh.seek(0)
    if entries == 0xFFFF or directory == 0xFFFFFFFF:
        raise ArchiveError(f"too many files in {what} (a ZIP64 directory); at most {max_members}")
    if entries > max_members:
        raise ArchiveError(f"{entries} files in {what}; at most {max_members}")
    if directory > max_directory_bytes:
        size = (f"{max_directory_bytes // 2**20} MiB" if max_directory_bytes % 2**20 == 0
                else f"{max_directory_bytes // 2**10} KiB")
        raise ArchiveError(f"{what}'s list of files is over {size} "
                           "(names or extra fields too long)")


def bundle_inspect(path: str | os.PathLike[str], *, max_uncompressed: int) -> BundleInfo:
    """Check a code bundle: a zip with ``run.sh`` or ``run.py`` at its top, safe names, bounded size."""
    _zip_directory_check(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        raise ArchiveError("not a zip archive; zip your code with run.py (or run.sh) at the top") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_BUNDLE_MEMBERS:
            raise ArchiveError(f"{len(members)} files in the bundle; at most {MAX_BUNDLE_MEMBERS}")
        total = 0
        files: set[str] = set()
        folders = {""}  # the top, which no file can be
        for member in members:
            name = member.filename.replace("\\", "/")
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts or (parts and parts[0].endswith(":")):
                raise ArchiveError(f"unsafe path {member.filename!r} in the bundle")
            if (member.external_attr >> 16) & 0o170000 == 0o120000:
                raise ArchiveError(f"{member.filename!r} is a symbolic link; bundles hold plain files only")
            _bundle_member_check(member, parts)
            total += member.file_size
            if total > max_uncompressed:
                raise ArchiveError(f"the bundle expands past {max_uncompressed} bytes (the bundle size limit)")
            # Unpacked, a path is one thing: a file and a folder of one name cannot both be made.
            folders.update("/".join(parts[:i]) for i in range(len(parts)))
            (folders if member.is_dir() else files).add("/".join(parts))
        both = sorted(files & folders)
        if both:
            raise ArchiveError(f"{both[0] or '/'!r} is both a file and a folder in the bundle; "
                               "a path can be only one of them")
        protocol = _bundle_protocol(archive)
    for entry, command in BUNDLE_ENTRY_POINTS:
        if entry in files:
            return BundleInfo(entry, command, len(members), total, protocol)
    raise ArchiveError("no run.sh or run.py at the top of the bundle (not inside a folder)")


def _bundle_member_check(member: zipfile.ZipInfo, parts: tuple[str, ...]) -> None:
    """Refuse at upload what could not be unpacked later: over-long names, encrypted or oddly
    compressed members (each would fail the run, counted, instead of the upload, free)."""
    if any(len(part.encode("utf-8", "surrogateescape")) > MAX_BUNDLE_NAME_BYTES for part in parts):
        raise ArchiveError(f"a name in {member.filename[:80]!r}... is longer than {MAX_BUNDLE_NAME_BYTES} bytes; "
                           "shorten it")
    if len(member.filename.encode("utf-8", "surrogateescape")) > MAX_BUNDLE_PATH_BYTES:
        raise ArchiveError(f"the path {member.filename[:80]!r}... is longer than {MAX_BUNDLE_PATH_BYTES} bytes; "
                           "shorten it")
    if member.flag_bits & 0x1:
        raise ArchiveError(f"{member.filename!r} is encrypted; zip the bundle without a password")
    if member.compress_type not in _ZIP_METHODS:
        raise ArchiveError(f"{member.filename!r} is compressed with method {member.compress_type}; "
                           "use deflate (what `zip` does) or store")


def bundle_extract(path: str | os.PathLike[str], dest: Path, *, max_uncompressed: int) -> BundleInfo:
    """Unpack a checked bundle into ``dest``, world-readable, nothing executable-as-setuid.

    What the bundle itself makes impossible to unpack (a member whose data is damaged, names the
    file system refuses) is an :class:`ArchiveError`, the team's to fix; a full or failing disk
    is the platform's and stays an ``OSError``.
    """
    info = bundle_inspect(path, max_uncompressed=max_uncompressed)
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            try:
                _bundle_member_unpack(archive, member, dest)
            except ArchiveError:
                raise
            except OSError as exc:
                if exc.errno in PLATFORM_ERRNOS:
                    raise
                raise ArchiveError(f"{member.filename!r} cannot be unpacked: {exc.strerror or exc}") from None
            except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
                raise ArchiveError(f"{member.filename!r} cannot be unpacked (the zip is damaged: {exc})") from None
    for folder, dirs, _files in os.walk(dest):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
    dest.chmod(0o755)
    return info


def _bundle_member_unpack(archive: zipfile.ZipFile, member: zipfile.ZipInfo, dest: Path) -> None:
    target = dest.joinpath(*PurePosixPath(member.filename.replace("\\", "/")).parts)
    if member.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return
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
