"""Crafted system uploads whose headers or directories would cost the web process memory out of all
proportion to their size (issue 22): each is refused with a reason that says what and where, before
tarfile or zipfile reads what the header announces.

Memory is bounded, not timed: ``tracemalloc`` measures the peak of Python's allocations during one
check (tarfile's read of a header body, zipfile's entries, the decompressors' buffers all go through
it).  Each bomb announces 64 MiB, so the check before issue 22 peaked above 64 MiB on each; the bound
asserted is 8 MiB (what the archive's 2 MiB of headers may leave on its entries, about 5 MiB, with room).  Figures at 1 GiB are in ``tests/benchmarks/README.md``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from leaderboard.sandbox.archives import ArchiveError, bundle_inspect, image_archive_inspect
from tests.benchmarks import archive_bombs as ab
from tests.builders.cast import Cast
from tests.builders.system_uploads import image_archive, post

MIB = 2**20
BOMB = 64 * MIB
BOUND = 8 * MIB
LIMIT = 6 * 2**30


def peak_of(check: Callable[[], object]) -> tuple[int, str]:
    """Peak bytes Python allocated during ``check`` and its refusal's message ("" if it passed)."""
    tracemalloc.start()
    try:
        check()
        message = ""
    except ArchiveError as exc:
        message = str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, message


TAR_CASES: dict[str, tuple[Callable[[Path], Path], list[str]]] = {
    "GNU long-name header bomb, gzip": (
        lambda d: ab.write(d / "a.tar.gz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, BOMB), "gzip"),
        ["header 1 (at byte 0 of the uncompressed archive) is a GNU long-name header of 67,108,864 bytes",
         "at most 64 KiB"]),
    "GNU long-link header bomb, uncompressed": (
        lambda d: ab.write(d / "a.tar", ab.header_bomb(tarfile.GNUTYPE_LONGLINK, BOMB)),
        ["header 1 (at byte 0) is a GNU long-link header of 67,108,864 bytes"]),
    "GNU long-name header bomb of 1 GiB, uncompressed, a hole on disk": (
        lambda d: ab.write_holed(d / "a.tar", 2**30), ["is a GNU long-name header of 1,073,741,824 bytes"]),
    "pax header bomb, bzip2": (
        lambda d: ab.write(d / "a.tar.bz2", ab.header_bomb(tarfile.XHDTYPE, BOMB), "bzip2"),
        ["header 1 (at byte 0 of the uncompressed archive) is a pax extended header of 67,108,864 bytes"]),
    "pax global header bomb, gzip": (
        lambda d: ab.write(d / "a.tar.gz", ab.header_bomb(tarfile.XGLTYPE, BOMB), "gzip"),
        ["is a pax global header of 67,108,864 bytes"]),
    "a small pax global header (copied into every later entry)": (
        lambda d: ab.write(d / "a.tar", ab.global_then_entries(60_000, 999)),
        ["header 1 (at byte 0) is a pax global header, which docker save never writes"]),
    "pax headers in a row (read by recursion)": (
        lambda d: ab.write(d / "a.tar.gz", ab.extended_chain(10, 60_000), "gzip"),
        ["is extended header 5 in a row before an entry; at most 4"]),
    "a pax header of 60 KiB per entry": (
        lambda d: ab.write(d / "a.tar.gz", ab.extended_per_entry(20, 60_000), "gzip"),
        ["'e0' carries 5000 pax records; at most 64"]),
    "a pax header per entry, within the record cap, past the headers' total": (
        lambda d: ab.write(d / "a.tar.gz", ab.extended_per_entry(900, 4000, value="v" * 50), "gzip"),
        ["the archive's headers add up to more than 2 MiB by byte"]),
    "GNU sparse entry": (
        lambda d: ab.write(d / "a.tar.gz", ab.gnu_sparse(100_000), "gzip"),
        ["header 1 (at byte 0 of the uncompressed archive) is a GNU sparse file ('s')"]),
    "pax sparse 1.0 entry (its map read from the data area)": (
        lambda d: ab.write(d / "a.tar.gz", ab.pax_sparse_10(1_000_000), "gzip"),
        ["the pax extended header 1 (at byte 0 of the uncompressed archive) makes the next entry a sparse file"]),
    "many empty entries": (
        lambda d: ab.write(d / "a.tar.gz", ab.many_entries(5_000), "gzip"), ["more than 1000 entries"]),
    "gzip inside gzip": (
        lambda d: ab.nested_gzip(ab.write(d / "i.tar.gz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, BOMB), "gzip"),
                                 d / "a.tar.gz.gz"),
        ["not a tar archive inside the gzip"]),
    "xz (its decoder's dictionary is the archive's to choose)": (
        lambda d: ab.write(d / "a.tar.xz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, MIB), "xz"),
        ["the archive is xz-compressed, which is not accepted", "gzipped"]),
}


@pytest.mark.parametrize("case", sorted(TAR_CASES))
def test_a_crafted_tar_is_refused_where_it_is_crafted_within_bounded_memory(tmp_path: Path, case: str) -> None:
    make, fragments = TAR_CASES[case]
    path = make(tmp_path)
    peak, message = peak_of(lambda: image_archive_inspect(path, max_uncompressed=LIMIT))
    assert message, f"{case}: accepted"
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert peak < BOUND, f"{case}: the check allocated {peak / MIB:.1f} MiB (bound {BOUND // MIB} MiB): {message}"


def test_the_largest_manifest_read_costs_what_the_documented_bound_says(tmp_path: Path) -> None:
    """manifest.json and the config are read whole up to 1 MiB and parsed: about 25 bytes of heap per
    byte of ``[{}, ...]`` (docs/participants/systems.md); anything larger is refused unread."""
    path = ab.write(tmp_path / "a.tar.gz", ab.image_with(manifest=ab.list_of_empty_objects(MIB - 16)), "gzip")
    peak, message = peak_of(lambda: image_archive_inspect(path, max_uncompressed=LIMIT))
    assert "images; save exactly one" in message
    assert peak < 40 * MIB, peak
    path = ab.write(tmp_path / "b.tar.gz", ab.image_with(manifest=ab.list_of_empty_objects(MIB + 16)), "gzip")
    peak, message = peak_of(lambda: image_archive_inspect(path, max_uncompressed=LIMIT))
    assert "manifest.json is not a small file (at most 1024 KiB)" in message
    assert peak < BOUND, peak  # the members' bytes are hashed in 1 MiB reads


def tar_with(members: dict[str, bytes], *, fmt: int, compress: str = "") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    if compress == "bzip2":
        return bz2.compress(raw)
    return gzip.compress(raw) if compress == "gzip" else raw


@pytest.mark.parametrize(("fmt", "compress"), [(tarfile.PAX_FORMAT, ""), (tarfile.GNU_FORMAT, "gzip"),
                                               (tarfile.PAX_FORMAT, "bzip2")])
def test_honest_extended_headers_still_pass(tmp_path: Path, fmt: int, compress: str) -> None:
    """Long names as docker save (pax) or GNU tar (L) write them are not refused, whatever the compression."""
    content, image_id = image_archive()
    with tarfile.open(fileobj=io.BytesIO(content)) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    members["blobs/" + "d" * 200 + "/extra.txt"] = b"a long name needs an extended header"
    path = tmp_path / "image.tar"
    path.write_bytes(tar_with(members, fmt=fmt, compress=compress))
    assert image_archive_inspect(path, max_uncompressed=LIMIT).image_id == image_id


def test_a_zip_whose_classic_end_record_lies_is_checked_as_zipfile_reads_it(tmp_path: Path) -> None:
    """The classic end record says 1 file; the ZIP64 one, which ZipFile uses, 60,000."""
    path = ab.zip_lying_end_record(tmp_path / "b.zip", 60_000)
    peak, message = peak_of(lambda: bundle_inspect(path, max_uncompressed=2**30))
    assert "60000 files in the bundle; at most 2000" in message
    assert peak < BOUND, peak


def test_a_zip_with_long_extra_fields_and_comment_within_the_limits_passes_in_bounded_memory(tmp_path: Path) -> None:
    path = ab.zip_with_big_extras(tmp_path / "b.zip", 2000, 2000, 65_000)
    peak, message = peak_of(lambda: bundle_inspect(path, max_uncompressed=2**30))
    assert message == ""
    assert peak < 16 * MIB, peak


@pytest.mark.django_db
def test_a_header_bomb_upload_is_refused_through_the_upload_path(
    systems: Cast, nothing_stored: None, tmp_path: Path  # noqa: F811
) -> None:
    content = ab.write(tmp_path / "a.tar.gz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, BOMB), "gzip").read_bytes()
    for channel in ("api", "web"):
        status, message = post(systems, channel, content, kind="docker_image", name="bomb.tar.gz")
        assert status == 400, message[:500]
        assert "bomb.tar.gz: header 1 (at byte 0 of the uncompressed archive) is a GNU long-name header" in message
