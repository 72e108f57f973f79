"""Peak memory of inspecting the worst system uploads (issues 17 and 22): what the web process (and the
compute worker, which inspects again before ``docker load``) spends on an archive before refusing it.

    .venv/bin/python -m tests.benchmarks.bench_system_inspect_memory [--only 1,5] [--systems OLD.py]

Each case runs in a fresh subprocess that has imported the checks; growth = its ``VmHWM`` after the
call - its ``VmRSS`` before (the kernel's peak mark reset first).  ``--systems`` loads the checks from
another copy of ``leaderboard/sandbox/archives.py`` (e.g. ``git show HEAD~1:...``; before the run
contract left the Django app, ``leaderboard/submissions/systems.py``), to measure the code before a
change on the same archives.  The archives (``archive_bombs.py``) are small on disk and cheap to
upload: header bombs (an extended header announcing 1 GiB, then the zeros), global and
chained pax headers, many entries, deep paths, sparse maps, huge configs and manifests, nested
compression, and zips whose directory is huge, lies, or carries long extra fields and comment.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.benchmarks import archive_bombs as ab

REPO = Path(__file__).resolve().parents[2]
GIB = 2**30

PROBE = r"""
import importlib.util, json, sys, time
sys.path.insert(0, sys.argv[3])
spec = importlib.util.spec_from_file_location("systems_under_test", sys.argv[2])
systems = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = systems  # dataclasses look their module up
spec.loader.exec_module(systems)
def kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")
before = kb("VmRSS")
inspect = systems.bundle_inspect if sys.argv[1].endswith(".zip") else systems.image_archive_inspect
started = time.monotonic()
try:
    inspect(sys.argv[1], max_uncompressed=6 * 2**30)
    verdict = "accepted"
except systems.ArchiveError as exc:
    verdict = "refused: " + str(exc)
except BaseException as exc:  # what the web process would answer with a 500
    verdict = f"{type(exc).__name__} (a 500): {str(exc)[:200]}"
print(json.dumps({"growth_mib": round((kb("VmHWM") - before) / 1024, 1),
                  "seconds": round(time.monotonic() - started, 2), "verdict": verdict}))
"""


def cases(tmp: Path) -> list[tuple[str, Callable[[], Path]]]:
    t = tmp
    return [
        ("GNU long-name (L) header of 1 GiB, gzip", lambda: ab.write(
            t / "l.tar.gz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, GIB), "gzip")),
        ("GNU long-link (K) header of 1 GiB, gzip", lambda: ab.write(
            t / "k.tar.gz", ab.header_bomb(tarfile.GNUTYPE_LONGLINK, GIB), "gzip")),
        ("pax (x) header of 1 GiB, gzip", lambda: ab.write(
            t / "x.tar.gz", ab.header_bomb(tarfile.XHDTYPE, GIB), "gzip")),
        ("pax global (g) header of 1 GiB, gzip", lambda: ab.write(
            t / "g.tar.gz", ab.header_bomb(tarfile.XGLTYPE, GIB), "gzip")),
        ("GNU long-name header of 256 MiB, bzip2", lambda: ab.write(
            t / "l.tar.bz2", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, GIB // 4), "bzip2")),
        ("GNU long-name header of 256 MiB, xz", lambda: ab.write(
            t / "l.tar.xz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, GIB // 4), "xz")),
        ("GNU long-name header of 1 GiB, uncompressed (a hole on disk)", lambda: ab.write_holed(t / "h.tar", GIB)),
        ("pax global header of 60 KiB of tiny records, then 999 entries", lambda: ab.write(
            t / "gcopy.tar.gz", ab.global_then_entries(60_000, 999), "gzip")),
        ("300 pax headers of 60 KiB in a row", lambda: ab.write(
            t / "chain.tar.gz", ab.extended_chain(300, 60_000), "gzip")),
        ("900 entries, each with a pax header of 60 KiB of tiny records", lambda: ab.write(
            t / "per.tar.gz", ab.extended_per_entry(900, 60_000), "gzip")),
        ("1,000,000 empty entries", lambda: ab.write(t / "many.tar.gz", ab.many_entries(1_000_000), "gzip")),
        ("an entry 30,000 folders deep (60 KiB pax path)", lambda: ab.write(
            t / "deep.tar.gz", ab.deep_path(30_000), "gzip")),
        ("GNU sparse entry with 1,000,000 map blocks (21 pairs each)", lambda: ab.write(
            t / "sparse.tar.gz", ab.gnu_sparse(1_000_000), "gzip")),
        ("pax sparse 1.0 entry, a map of 1,000,000 pairs", lambda: ab.write(
            t / "sparse10.tar.gz", ab.pax_sparse_10(1_000_000), "gzip")),
        ("image whose config is 8 MiB of [{}, ...]", lambda: ab.write(t / "config8.tar.gz", ab.image_with(
            config=json.dumps({"os": "linux", "architecture": "amd64", "junk": [{}] * 2_000_000}).encode()),
            "gzip")),
        ("image whose config is 1 MiB of [{}, ...] (the largest read)", lambda: ab.write(
            t / "config1.tar.gz", ab.image_with(config=json.dumps(
                {"os": "linux", "architecture": "amd64", "junk": [{}] * 262_000}).encode()), "gzip")),
        ("image whose manifest.json is 1 MiB of [{}, ...] (the largest read)", lambda: ab.write(
            t / "manifest.tar.gz", ab.image_with(manifest=ab.list_of_empty_objects(2**20 - 16)), "gzip")),
        ("gzip of the gzipped 1 GiB long-name bomb", lambda: ab.nested_gzip(
            ab.write(t / "inner.tar.gz", ab.header_bomb(tarfile.GNUTYPE_LONGNAME, GIB), "gzip"), t / "n.tar.gz.gz")),
        ("zip of 300,000 empty files", lambda: ab.zip_of_empty_files(t / "files.zip", 300_000)),
        ("zip of 60,000 files whose classic end record says 1 (a ZIP64 record, 60,000)", lambda: ab.zip_lying_end_record(
            t / "lying.zip", 60_000)),
        ("zip of 2,000 files with 2 KB extra fields each and a 64 KB comment", lambda: ab.zip_with_big_extras(
            t / "extras.zip", 2000, 2000, 65_000)),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=Path, default=REPO / "leaderboard" / "sandbox" / "archives.py",
                        help="the copy of archives.py whose checks are measured")
    parser.add_argument("--only", default="", help="comma-separated case numbers (1-based)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    only = {int(n) for n in args.only.split(",") if n}
    figures = []
    with tempfile.TemporaryDirectory(prefix="readerboard-bench-inspect-") as tmp:
        print(f"checks of {args.systems}\n")
        print("| # | archive | size on disk | growth (MiB) | time | verdict |\n|---|---|---:|---:|---:|---|")
        for number, (what, make) in enumerate(cases(Path(tmp)), start=1):
            if only and number not in only:
                continue
            path = make()
            done = subprocess.run([sys.executable, "-c", PROBE, str(path), str(args.systems), str(REPO)],
                                  capture_output=True, text=True, timeout=1800)
            lines = done.stdout.strip().splitlines()
            result: dict[str, Any]
            if done.returncode or not lines:
                result = {"growth_mib": None, "seconds": None,
                          "verdict": f"the probe died ({done.returncode}): {done.stderr.strip()[-200:]}"}
            else:
                result = json.loads(lines[-1])
            size = path.stat().st_blocks * 512  # a holed file counts what it takes on disk
            figures.append({"case": number, "archive": what, "size_bytes": size, **result})
            print(f"| {number} | {what} | {size / 1024:,.0f} KiB | {result['growth_mib']} | {result['seconds']} s "
                  f"| {result['verdict'][:140]} |", flush=True)
            path.unlink()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
