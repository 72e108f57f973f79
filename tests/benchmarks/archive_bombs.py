"""Crafted system uploads that cost memory out of proportion to their size (issues 17 and 22), written
to disk without ever holding their expanded bytes: the benchmark ``bench_system_inspect_memory`` and
``tests/leaderboard/test_archive_bombs.py`` both use them.

A header "bomb" is a tar header (GNU long name ``L`` / long link ``K``, pax ``x`` / global ``g``)
whose size field announces ``size`` bytes, followed by that many zeros: tarfile reads a header's
body into memory whole before any entry is seen.  Compressed, a GiB of zeros is about a MiB.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import json
import lzma
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

CHUNK = 1 << 20


def header(name: str, *, size: int = 0, kind: bytes = tarfile.REGTYPE) -> bytes:
    """One 512-byte ustar header block, whatever its type."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def pax_body(records: Iterable[tuple[str, str]]) -> bytes:
    out = []
    for key, value in records:
        payload = f" {key}={value}\n".encode()
        length = len(payload) + 1
        while len(str(length)) + len(payload) != length:
            length += 1
        out.append(str(length).encode() + payload)
    return b"".join(out)


def padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def entry(name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE) -> bytes:
    return header(name, size=len(data), kind=kind) + padded(data)


def pax(records: Iterable[tuple[str, str]], *, kind: bytes = tarfile.XHDTYPE) -> bytes:
    return entry("././@PaxHeader", pax_body(records), kind=kind)


def end() -> bytes:
    return b"\0" * (2 * tarfile.BLOCKSIZE)


Pieces = Iterable[bytes]


def zeros(size: int) -> Pieces:
    block = b"\0" * CHUNK
    left = size
    while left > 0:
        yield block[:min(left, CHUNK)]
        left -= CHUNK


def header_bomb(kind: bytes, size: int) -> Pieces:
    """An extended header of ``size`` zero bytes first, then one small entry and the end."""
    yield header("././@LongLink" if kind in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
                 else "././@PaxHeader", size=size, kind=kind)
    yield from zeros(size + (-size % tarfile.BLOCKSIZE))
    yield entry("manifest.json", b"[]")
    yield end()


def write(path: Path, pieces: Pieces, compression: str = "") -> Path:
    """Write a tar stream of ``pieces``, compressed with "", "gzip", "bzip2" or "xz", chunk by chunk."""
    compressor: Callable[[bytes], bytes] | None = None
    flush: Callable[[], bytes] | None = None
    if compression == "gzip":
        gz = zlib.compressobj(9, zlib.DEFLATED, 31)
        compressor, flush = gz.compress, gz.flush
    elif compression == "bzip2":
        bz = bz2.BZ2Compressor(9)
        compressor, flush = bz.compress, bz.flush
    elif compression == "xz":
        xz = lzma.LZMACompressor()
        compressor, flush = xz.compress, xz.flush
    with open(path, "wb") as fh:
        for piece in pieces:
            fh.write(compressor(piece) if compressor else piece)
        if flush is not None:
            fh.write(flush())
    return path


def write_holed(path: Path, size: int) -> Path:
    """An uncompressed L header bomb whose body is a hole: the file takes no disk space, and the
    size field alone decides what tarfile reads."""
    with open(path, "wb") as fh:
        fh.write(header("././@LongLink", size=size, kind=tarfile.GNUTYPE_LONGNAME))
        fh.truncate(tarfile.BLOCKSIZE + size + (-size % tarfile.BLOCKSIZE))
        fh.seek(0, 2)
        fh.write(entry("manifest.json", b"[]") + end())
    return path


def global_then_entries(record_bytes: int, entries: int) -> Pieces:
    """A pax global header of many tiny records (tarfile copies it into every later entry), then
    ``entries`` empty files."""
    yield pax(((f"k{i}", "") for i in range(record_bytes // 10)), kind=tarfile.XGLTYPE)
    for i in range(entries):
        yield entry(f"e{i}")
    yield end()


def extended_chain(headers: int, record_bytes: int) -> Pieces:
    """``headers`` pax headers in a row before one entry: tarfile reads the chain by recursion."""
    body = pax((f"k{i}", "") for i in range(record_bytes // 10))
    for _ in range(headers):
        yield body
    yield entry("e")
    yield end()


def extended_per_entry(entries: int, record_bytes: int, *, value: str = "") -> Pieces:
    """Each of ``entries`` files with its own pax header of records (kept on its TarInfo), tiny ones
    unless ``value`` is given."""
    for n in range(entries):
        yield pax((f"k{n}.{i}", value) for i in range(record_bytes // (12 + len(value))))
        yield entry(f"e{n}")
    yield end()


def many_entries(count: int) -> Pieces:
    for i in range(count):
        yield entry(f"e{i}")
    yield end()


def deep_path(depth: int) -> Pieces:
    """One entry whose pax path is ``depth`` folders deep (a/a/a/...)."""
    yield pax([("path", "a/" * depth + "f")])
    yield entry("placeholder")
    yield end()


def gnu_sparse(extension_blocks: int) -> Pieces:
    """A GNU sparse entry ("S") followed by ``extension_blocks`` 512-byte blocks of sparse map, each
    saying another follows: tarfile builds 21 (offset, size) pairs per block."""
    block = bytearray(header("s", kind=tarfile.GNUTYPE_SPARSE))
    block[482] = 1  # isextended
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    yield bytes(block)
    ext = bytearray(tarfile.BLOCKSIZE)
    for i in range(21):  # pairs of 12-byte octal numbers; tarfile keeps the non-zero ones
        ext[i * 24:i * 24 + 24] = b"00000000001\0" * 2
    ext[504] = 1  # another block follows
    for _ in range(extension_blocks):
        yield bytes(ext)
    yield end()


def pax_sparse_10(fields: int) -> Pieces:
    """A pax GNU sparse 1.0 entry: its map, ``fields`` numbers, is read from the data area 512 bytes
    at a time (and joined each time) before the entry is returned."""
    numbers = b"%d\n" % fields + b"0\n" * (2 * fields)
    yield pax([("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.realsize", "0"),
               ("GNU.sparse.name", "s")])
    yield entry("s", numbers)
    yield end()


def image_with(config: bytes | None = None, manifest: bytes | None = None) -> Pieces:
    """A docker save archive (no layers) with the given config or manifest bytes."""
    config = config if config is not None else json.dumps({"os": "linux", "architecture": "amd64"}).encode()
    name = hashlib.sha256(config).hexdigest() + ".json"
    if manifest is None:
        manifest = json.dumps([{"Config": name, "Layers": []}]).encode()
    yield entry(name, config)
    yield entry("manifest.json", manifest)
    yield end()


def list_of_empty_objects(size: int) -> bytes:
    return b"[" + b",".join([b"{}"] * max(1, (size - 2) // 3)) + b"]"


def nested_gzip(inner: Path, path: Path) -> Path:
    """gzip of a (gzipped) archive: one layer of compression is undone before tar is looked for."""
    with open(inner, "rb") as src:
        return write(path, iter(lambda: src.read(CHUNK), b""), "gzip")


# --------------------------------------------------------------------------- zips


def zip_of_empty_files(path: Path, count: int) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(count):
            archive.writestr(zipfile.ZipInfo(f"f{i}"), b"")
    return path


def zip_lying_end_record(path: Path, count: int) -> Path:
    """A zip of ``count`` (< 65,535: no ZIP64 records of its own) empty files whose classic end
    record claims 1 file and a tiny directory, while a ZIP64 end record (which ZipFile reads
    first) gives the real counts."""
    zip_of_empty_files(path, count)
    data = path.read_bytes()
    at = data.rfind(b"PK\x05\x06")
    _sig, _disk, _start, _this, _total, size, offset, comment = struct.unpack("<IHHHHIIH", data[at:at + 22])
    zip64_end = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, at, 1)
    classic = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, 100, 0xFFFFFFFF, 0)
    path.write_bytes(data[:at] + zip64_end + locator + classic)
    return path


def zip_with_big_extras(path: Path, count: int, extra_bytes: int, comment_bytes: int) -> Path:
    """``count`` files (within the bundle limit), each with ``extra_bytes`` of an unknown extra field,
    and an archive comment of ``comment_bytes``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("run.py", b"print(1)\n")
        for i in range(count - 1):
            info = zipfile.ZipInfo(f"f{i}")
            info.extra = struct.pack("<HH", 0xCAFE, extra_bytes - 4) + b"\0" * (extra_bytes - 4)
            archive.writestr(info, b"")
        archive.comment = b"c" * comment_bytes
    return path


def bytes_of(pieces: Pieces) -> bytes:
    buffer = io.BytesIO()
    for piece in pieces:
        buffer.write(piece)
    return buffer.getvalue()
