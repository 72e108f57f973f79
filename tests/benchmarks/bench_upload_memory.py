"""Peak memory of a real web process refusing the worst prediction uploads, and of the systems
worker reading the worst output.

``python -m tests.benchmarks.bench_upload_memory [--json OUT] [--only uploads,outputs] [--keep]``

A JSON decoder's memory follows the *shape* of what it reads, not its size: ``json.loads`` turns a
list of empty objects into ~25 bytes of heap per byte of input.  The worst inputs are therefore the
ones measured, each as large as the limits allow:

**uploads** (``manage.py runserver --noreload``, DEBUG off, a throwaway SQLite database, private
storage and its own ``redis-server``), posted to ``/api/v1/challenges/<slug>/submissions/`` with a
token, streamed from disk with a Content-Length:

* ``[{}, {}, ...]`` of exactly the upload limit (``MAX_PREDICTION_UPLOAD_BYTES``);
* ``{"q": [{}, {}, ...]}`` of the upload limit (the phase scores one dataset, so this is
  ``{qid: answer}`` with a list where the answer goes);
* a zip (deflated, ~0.1 % of its expanded size) whose one member ``squad.json`` is ``[{}, {}, ...]``
  as large as the archive may expand (``MAX_PREDICTION_ARCHIVE_BYTES``);
* ``{"squad": {"x0000000": "", ...}}`` of the upload limit: the right shape, but not one id is a
  question (the worst the shape check lets through: every member must still be read);
* ``{"squad": {"<a real qid>": "aaa...a😀"}}`` of the upload limit: the largest answer that is
  kept, text that Python stores at four bytes a character because of its last one (refused
  afterwards: the other questions have no answer); and the same with the emoji escaped
  (``\\ud83d\\ude00``, as ``json.dumps`` writes it).

Before each request the kernel's peak-RSS mark is reset (``echo 5 > /proc/<pid>/clear_refs``), so
``VmHWM`` afterwards is that request's peak; growth = that peak - ``VmRSS`` just before.  A thread
also samples ``VmRSS`` every 10 ms as a cross-check.  Each request is also checked to be refused
(4xx) with a message, which the table prints.

**outputs**: the systems worker's decoding of one dataset's output
(``evaluation._output_predictions``), each in a fresh subprocess that has already imported
everything and holds the output's bytes (the worker reads them into memory first, within the
output limit ``Limits.output_mb``); growth = its ``VmHWM`` after the call - its ``VmRSS`` before.
The same shapes at the output limit: ``[{}, ...]``, ``{"q": [{}, ...]}``, ``{"x0000000": "", ...}``
and one answer of ASCII text ending in an emoji (as UTF-8, and escaped).

**systems** (``--only systems``, issue 22): the same web process, the crafted system archives of
``bench_system_inspect_memory`` (header bombs, global and chained pax headers, many entries, deep
paths, sparse maps, huge configs and manifests, nested compression, zips) posted to
``/api/v1/challenges/<slug>/systems/``; each must be refused (400) with its reason.

Kept out of pytest: it is a script (``tests/benchmarks/README.md`` has the figures).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from leaderboard.sandbox.contract import Limits
from tests.benchmarks.bench_system_inspect_memory import cases
from tests.benchmarks.bench_transfer import (
    REPO,
    Sampler,
    bench_challenge,
    environment,
    free_port,
    multipart,
    reset_peak,
    status_kb,
    wait_listening,
)

SLUG = "bench-upload-memory"
CHUNK = 1 << 20
MIB = 2**20


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="uploads,outputs",
                        help="comma-separated: uploads, outputs, systems (the crafted system archives)")
    parser.add_argument("--cases", default="", help="with systems: comma-separated case numbers (1-based)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------- the worst inputs


def write_repeated(path: Path, head: bytes, unit: bytes, sep: bytes, tail: bytes, size: int) -> None:
    """``head + unit (sep unit)* + tail`` of exactly ``size`` bytes (spaces pad the end)."""
    count = max(1, (size - len(head) - len(tail) + len(sep)) // (len(unit) + len(sep)))
    body_len = len(head) + count * len(unit) + (count - 1) * len(sep) + len(tail)
    block = (unit + sep) * 65536
    with open(path, "wb") as fh:
        fh.write(head)
        left = count
        while left > 1:
            n = min(left - 1, 65536)
            fh.write(block[: n * (len(unit) + len(sep))])
            left -= n
        fh.write(unit + tail + b" " * (size - body_len))
    assert path.stat().st_size == size, (path, path.stat().st_size, size)


def write_unknown_ids(path: Path, head: bytes, tail: bytes, size: int) -> None:
    """``head "x0000000": "", "x0000001": "", ... tail`` of exactly ``size`` bytes."""
    with open(path, "wb") as fh:
        fh.write(head)
        written, i = len(head), 0
        budget = size - len(tail)
        while True:
            member = f'"x{i:07d}": ""'.encode()
            sep = b", " if i else b""
            if written + len(sep) + len(member) > budget:
                break
            fh.write(sep + member)
            written += len(sep) + len(member)
            i += 1
        fh.write(b" " * (budget - written) + tail)
    assert path.stat().st_size == size, (path, path.stat().st_size, size)


def write_zip(path: Path, member: str, source: Path) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.write(source, member)


# --------------------------------------------------------------------------- uploads


def setup(tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    """Load a one-dataset challenge with a user, a team and a token; read the limits."""
    challenge, token = bench_challenge(
        tmp, env, slug=SLUG, title="Upload memory benchmark", password="bench-upload-memory-pw",
        phase="allowed_kinds: [predictions, docker_image, code_bundle],\n"
              "     quota: {per_day: 1000, total: 1000, concurrent: 1000}",
    )
    from django.conf import settings  # noqa: PLC0415 - after django.setup()
    from django.db import connections  # noqa: PLC0415 - after django.setup()

    from leaderboard.challenges.models import DatasetFile  # noqa: PLC0415 - after django.setup()

    qid = DatasetFile.objects.get(dataset__challenge=challenge, portion="dev").qids[0]
    limit = int(settings.MAX_PREDICTION_UPLOAD_BYTES)
    # Before issue 17 there was no such setting: archives could expand to 512 MiB.  The figures
    # of the old code were taken at the new cap, so that both read the same files.
    cap = int(getattr(settings, "MAX_PREDICTION_ARCHIVE_BYTES", limit * 6 // 5))
    connections.close_all()  # the web process is the one to measure; this one only prepared the data
    return {"token": token, "limit": limit, "cap": cap, "qid": qid}


@dataclass
class Figure:
    what: str
    size_mib: float
    status: int | str
    seconds: float
    rss_before_mib: float
    peak_mib: float | None  # VmHWM of this request (or call) alone
    growth_mib: float | None  # peak - RSS before
    sampled_peak_mib: float | None
    message: str


def write_wide_answer(path: Path, head: bytes, tail: bytes, size: int, *, escaped: bool = False) -> None:
    """``head + "aaa...a😀" + tail`` of exactly ``size`` bytes: one string, four bytes a character
    (the emoji as UTF-8, or escaped as json.dumps writes it by default)."""
    wide = b"\\ud83d\\ude00" if escaped else "😀".encode()
    write_repeated(path, head + b'"', b"a" * 4096, b"", wide + b'"' + tail, size)


def upload_files(tmp: Path, limit: int, cap: int, qid: str) -> list[tuple[str, Path]]:
    files = tmp / "files"
    files.mkdir()
    empty_list = files / "empty-objects.json"
    write_repeated(empty_list, b"[", b"{}", b",", b"]", limit)
    qid_list = files / "qid-to-list.json"
    write_repeated(qid_list, b'{"q": [', b"{}", b",", b"]}", limit)
    member = files / "member.json"
    write_repeated(member, b"[", b"{}", b",", b"]", cap)
    archive = files / "empty-objects.zip"
    write_zip(archive, "squad.json", member)
    member.unlink()
    unknown = files / "unknown-ids.json"
    write_unknown_ids(unknown, b'{"squad": {', b"}}", limit)
    wide = files / "wide-answer.json"
    write_wide_answer(wide, b'{"squad": {' + json.dumps(qid).encode() + b": ", b"}}", limit)
    escaped = files / "wide-escaped-answer.json"
    write_wide_answer(escaped, b'{"squad": {' + json.dumps(qid).encode() + b": ", b"}}", limit, escaped=True)
    return [
        (f"[{{}}, ...] at the upload limit ({limit / MIB:g} MiB)", empty_list),
        (f'{{"q": [{{}}, ...]}} at the upload limit ({limit / MIB:g} MiB)', qid_list),
        (f"zip of [{{}}, ...] expanding to the cap ({cap / MIB:g} MiB; "
         f"{archive.stat().st_size / 1024:.0f} KiB zipped)", archive),
        ('{"squad": {"x0000000": "", ...}} at the upload limit: no id is a question', unknown),
        ('{"squad": {"<qid>": "aaa...a😀"}} at the upload limit: one kept answer, 4 bytes a character', wide),
        ('{"squad": {"<qid>": "aaa...a\\ud83d\\ude00"}}: the same, the emoji escaped', escaped),
    ]


def system_files(tmp: Path, numbers: set[int]) -> list[tuple[str, Path]]:
    """The crafted archives of ``bench_system_inspect_memory`` (all, or the numbered ones)."""
    files = tmp / "systems"
    files.mkdir()
    return [(f"{n}. {what}", make()) for n, (what, make) in enumerate(cases(files), start=1)
            if not numbers or n in numbers]


def run_uploads(tmp: Path, *, systems: set[int] | None = None) -> tuple[list[Figure], float]:
    """Post the worst prediction files, or with ``systems`` the crafted system archives."""
    broker_port, web_port = free_port(), free_port()
    env = environment(tmp, broker_port)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(broker_port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))
        prepared = setup(tmp, env)
        print(f"upload limit {prepared['limit'] / MIB:g} MiB, archive cap {prepared['cap'] / MIB:g} MiB; "
              "writing the files...", flush=True)
        if systems is None:
            cases = upload_files(tmp, prepared["limit"], prepared["cap"], prepared["qid"])
        else:
            cases = system_files(tmp, systems)
        web = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{web_port}", "--noreload"],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp / "web.log", "wb"),  # noqa: SIM115
        )
        procs.append(web)
        wait_listening(web_port, web)
        url = f"/api/v1/challenges/{SLUG}/submissions/"

        def post(path: Path) -> tuple[int, str]:
            conn = http.client.HTTPConnection("127.0.0.1", web_port, timeout=900)
            fields = {"phase": "dev"}
            if systems is not None:
                fields["kind"] = "code_bundle" if path.suffix == ".zip" else "docker_image"
            ctype, length, chunks = multipart(fields, "file", path)
            target = url if systems is None else f"/api/v1/challenges/{SLUG}/systems/"
            conn.request("POST", target, body=chunks, headers={
                "Authorization": f"Token {prepared['token']}", "Content-Type": ctype, "Content-Length": str(length),
            })
            response = conn.getresponse()
            payload = response.read()
            conn.close()
            try:
                detail = str(json.loads(payload).get("detail", payload[:300]))
            except ValueError:
                detail = payload[:300].decode("utf-8", "replace")
            return response.status, detail

        # Warm up: imports and the refusal's code path, so that the first request is not
        # charged with loading code.
        small = tmp / "small.json"
        small.write_bytes(b'{"q": [{}, {}]}')
        post(small)
        time.sleep(0.5)
        idle = status_kb(web.pid, "VmRSS") / 1024
        figures = []
        for what, path in cases:
            time.sleep(0.5)  # let the previous request's memory settle
            before = status_kb(web.pid, "VmRSS")
            resettable = reset_peak(web.pid)
            started = time.monotonic()
            with Sampler(web.pid) as sampler:
                status, message = post(path)
            seconds = time.monotonic() - started
            hwm = status_kb(web.pid, "VmHWM") if resettable else None
            figures.append(Figure(
                what=what, size_mib=round(path.stat().st_size / MIB, 2), status=status, seconds=round(seconds, 2),
                rss_before_mib=round(before / 1024, 1),
                peak_mib=round(hwm / 1024, 1) if hwm is not None else None,
                growth_mib=round((hwm - before) / 1024, 1) if hwm is not None else None,
                sampled_peak_mib=round(sampler.peak_kb / 1024, 1), message=message[:300],
            ))
            print(f"  {what}: {status} in {seconds:.1f} s, peak growth "
                  f"{figures[-1].growth_mib} MiB", flush=True)
            if web.poll() is not None:
                raise RuntimeError(f"the web process died ({web.returncode}); see {tmp / 'web.log'}")
        return figures, idle
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


# --------------------------------------------------------------------------- outputs

# Runs in a fresh interpreter: imports first, then the output's bytes, then the measured call.
_OUTPUT_CHILD = r"""
import json, re, sys, time
from pathlib import Path

def kb(field):
    return int(re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M).group(1))

import django
django.setup()
from leaderboard.challenges.suites import SUITES
from leaderboard.submissions import evaluation
from leaderboard.sandbox.contract import RunDataset, RunOutcome

path, n_qids = sys.argv[1], int(sys.argv[2])
qids = [f"q{i:07d}" for i in range(n_qids)]
ds = RunDataset(slug="squad", label="SQuAD", format="mrqa", source="", input_name="squad.jsonl.gz",
                output_name="squad.json")
outcome = RunOutcome(exit_code=0, timed_out=False, oom_killed=False, output_too_large=False, duration_s=1.0,
                     logs="", runtime="runc", outputs={"squad": Path(path).read_bytes()})
Path("/proc/self/clear_refs").write_text("5")
before = kb("VmRSS")
started = time.monotonic()
try:
    evaluation._output_predictions(SUITES["mrqa"], ds, outcome, qids)
    verdict, reason = "accepted", ""
except evaluation._OutputRejected as exc:
    verdict, reason = str(exc.verdict), exc.reason
except Exception as exc:  # the old decoder's own errors, reported rather than crashing the benchmark
    verdict, reason = type(exc).__name__, str(exc)
seconds = time.monotonic() - started
print(json.dumps({"before_kb": before, "hwm_kb": kb("VmHWM"), "seconds": seconds, "verdict": verdict,
                  "reason": reason[:300]}))
"""


def run_outputs(tmp: Path) -> list[Figure]:
    sys.path.insert(0, str(REPO))

    cap = Limits().output_mb * MIB
    files = tmp / "outputs"
    files.mkdir()
    cases = []
    path = files / "empty-objects.json"
    write_repeated(path, b"[", b"{}", b",", b"]", cap)
    cases.append((f"[{{}}, ...] at the output limit ({cap / MIB:g} MiB)", path))
    path = files / "qid-to-list.json"
    write_repeated(path, b'{"q0000000": [', b"{}", b",", b"]}", cap)
    cases.append((f'{{"q0000000": [{{}}, ...]}} at the output limit ({cap / MIB:g} MiB)', path))
    path = files / "unknown-ids.json"
    write_unknown_ids(path, b"{", b"}", cap)
    cases.append(('{"x0000000": "", ...} at the output limit: no id is a question', path))
    path = files / "wide-answer.json"
    write_wide_answer(path, b'{"q0000000": ', b"}", cap)
    cases.append(('{"q0000000": "aaa...a😀"} at the output limit: one kept answer, 4 bytes a character', path))
    path = files / "wide-escaped-answer.json"
    write_wide_answer(path, b'{"q0000000": ', b"}", cap, escaped=True)
    cases.append(('{"q0000000": "aaa...a\\ud83d\\ude00"}: the same, the emoji escaped', path))
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="leaderboard.settings.test", PYTHONPATH=str(REPO))
    figures = []
    for what, path in cases:
        done = subprocess.run(
            [sys.executable, "-c", _OUTPUT_CHILD, str(path), "2000"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=1800,
        )
        if done.returncode != 0:
            figures.append(Figure(what, round(path.stat().st_size / MIB, 2), f"exit {done.returncode}", 0, 0, None,
                                  None, None, done.stderr.strip().splitlines()[-1][:300] if done.stderr else ""))
            print(f"  {what}: the child failed: {figures[-1].message}", flush=True)
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        figures.append(Figure(
            what=what, size_mib=round(path.stat().st_size / MIB, 2), status=result["verdict"],
            seconds=round(result["seconds"], 2), rss_before_mib=round(result["before_kb"] / 1024, 1),
            peak_mib=round(result["hwm_kb"] / 1024, 1),
            growth_mib=round((result["hwm_kb"] - result["before_kb"]) / 1024, 1), sampled_peak_mib=None,
            message=result["reason"],
        ))
        print(f"  {what}: {result['verdict']} in {result['seconds']:.1f} s, peak growth "
              f"{figures[-1].growth_mib} MiB", flush=True)
    return figures


def table(figures: list[Figure]) -> None:
    print("| input | size | outcome | time | RSS before | peak (VmHWM) | growth | message |")
    print("|---|---:|---|---:|---:|---:|---:|---|")
    for f in figures:
        print(f"| {f.what} | {f.size_mib} MiB | {f.status} | {f.seconds} s | {f.rss_before_mib} MiB | {f.peak_mib} MiB "
              f"| {f.growth_mib} MiB | {f.message[:160]} |")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    only = set(args.only.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="readerboard-bench-upload-memory-"))
    (tmp / "tmp").mkdir()
    results: dict[str, Any] = {"load_average_before": os.getloadavg()}
    try:
        if "uploads" in only:
            print(f"uploads, in {tmp}", flush=True)
            uploads, idle = run_uploads(tmp)
            results.update(idle_rss_mib=round(idle, 1), uploads=[asdict(f) for f in uploads])
        if "systems" in only:
            print(f"system uploads, in {tmp}", flush=True)
            numbers = {int(n) for n in args.cases.split(",") if n}
            figures, idle = run_uploads(tmp, systems=numbers)
            results.update(systems_idle_rss_mib=round(idle, 1), systems=[asdict(f) for f in figures])
        if "outputs" in only:
            print("outputs", flush=True)
            results["outputs"] = [asdict(f) for f in run_outputs(tmp)]
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if "uploads" in results:
        print(f"\nweb process (runserver --noreload, DEBUG off) after warm-up: VmRSS {results['idle_rss_mib']} MiB\n")
        table([Figure(**f) for f in results["uploads"]])
    if "systems" in results:
        print(f"\nweb process after warm-up: VmRSS {results['systems_idle_rss_mib']} MiB; crafted system uploads:\n")
        table([Figure(**f) for f in results["systems"]])
    if "outputs" in results:
        print("\nsystems worker, decoding one dataset's output (a fresh process each):\n")
        table([Figure(**f) for f in results["outputs"]])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
