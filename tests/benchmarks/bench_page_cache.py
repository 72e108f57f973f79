"""What a run on hidden data can leave on its host for its team's later or concurrent runs (issue 22, section 2).

``python -m tests.benchmarks.bench_page_cache [--repeat 3] [--dev-runtime runc] [--json OUT]``

Every run is made with ``workers.runner.sandbox_choose`` / ``sandboxed`` / ``run_container``, as the
compute worker makes it, on the base image (``DEFAULT_BASE_IMAGE``).  Measured:

* **page cache**: the probe (tests/sandbox/channels/page_cache_probe.py): a dev run evicts the probe's
  256 + 24 image files, a hidden run evicts them and reads those whose bit is 1, the next dev run
  times a first-byte read of each.  Bits decoded of 256, for each hidden runtime (runc, runsc) with
  the protection (own image copy, host alone) on and off; dev runs under ``--dev-runtime``.
* **cost**: the hidden copy of the base image (and of the baseline image, as a team's image is copied
  for each hidden run); evicting the copy's pages; the wall time of a trivial run (``python3 -c pass``),
  dev, hidden unprotected under runc, hidden protected, from entering the sandbox to the container's end.
* **host state** a container sees under runc and runsc: whether ``/proc/meminfo`` is the host's,
  ``/proc/loadavg``, ``/sys/block``, overlay paths in ``/proc/self/mountinfo``; and what a hidden run
  leaves for a later dev run in the host's counters: ``processes`` of ``/proc/stat`` after the hidden
  run forks 500 times, ``Cached`` of ``/proc/meminfo`` after it reads 40 MB of image files.

Needs root, the engine with runsc and the base image (deploy/setup.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django
import docker

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE, HiddenRuns, Limits
from workers import runner

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "tests" / "sandbox" / "channels" / "page_cache_probe.py"
BITS = 256
# The platform instance the benchmark's runs belong to (workers.runner.LABEL_INSTANCE): its own.
BENCH_INSTANCE = f"readerboard-bench{os.getpid()}"

# Read by a dev run (runc) before and after a hidden run: the host's counters a later run sees.
COUNTERS = r"""
import re
stat = open("/proc/stat").read()
mem = open("/proc/meminfo").read()
print("processes", re.search(r"^processes (\d+)", stat, re.M).group(1))
print("cached_kb", re.search(r"^Cached:\s+(\d+)", mem, re.M).group(1))
"""
HIDDEN_FORKS = "import os\nfor _ in range(500):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
HIDDEN_READS = r"""
import os
total = 0
for folder, _, names in os.walk("/usr"):
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as fh:
                total += len(fh.read())
        if total > 40 * 1024 * 1024:
            break
    if total > 40 * 1024 * 1024:
        break
print("read", total)
"""
VIEW = r"""
import os
def first(path, n=1):
    try:
        return " | ".join(open(path).read().splitlines()[:n])
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
print("meminfo", first("/proc/meminfo", 3))
print("loadavg", first("/proc/loadavg"))
try:
    print("sys_block", sorted(os.listdir("/sys/block")))
except OSError as exc:
    print("sys_block unreadable", exc.strerror)
mounts = open("/proc/self/mountinfo").read()
print("mountinfo_overlay_paths", "/var/lib/docker" in mounts or "overlay2" in mounts)
"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="probe trials per setting, runs per timing")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--dev-runtime", default="runc",
                        help="the worker's runtime for dev runs (default runc: the reader that can time the host's "
                             "cache; empty: the platform's default, gVisor)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.dev")
    sys.path.insert(0, str(REPO))

    django.setup()  # workers.runner reads the platform's shared types (leaderboard.sandbox)

    client = docker.from_env(timeout=120)
    limits = Limits(cpus=1, memory_mb=256, pids=600, time_limit_s=120, log_bytes=64 * 1024)
    work = Path(tempfile.mkdtemp(prefix="bench-page-cache-"))
    lock = work / "host.lock"
    worker_runtime = args.dev_runtime
    results: dict[str, Any] = {}

    def policy(runtime: str, isolate: bool) -> HiddenRuns:
        return HiddenRuns(runtime=runtime, isolate=isolate, lock_path=lock)

    def run(name: str, command: list[str], *, hidden: bool, pol: HiddenRuns, secret: str = "",
            image: str = DEFAULT_BASE_IMAGE, runtime_override: str = "") -> tuple[str, float]:
        base = work / f"{name}-{secrets.token_hex(4)}"
        folders = {k: base / k for k in ("system", "input", "output")}
        for folder in folders.values():
            folder.mkdir(parents=True)
            folder.chmod(0o777)
        (folders["system"] / "probe.py").write_text(PROBE.read_text())
        (folders["input"] / "bits.txt").write_text(secret)
        sandbox = runner.sandbox_choose(hidden=hidden, challenge_runtime=runtime_override,
                                        worker_runtime=worker_runtime, policy=pol)
        started = time.monotonic()
        with runner.sandboxed(client, image, sandbox, pol, keep_copy=image == DEFAULT_BASE_IMAGE,
                              instance=BENCH_INSTANCE) as ref:
            spec = runner.RunSpec(image=ref, command=command, input_dir=folders["input"],
                                  output_dir=folders["output"], system_dir=folders["system"], limits=limits,
                                  runtime=sandbox.runtime, labels={"readerboard.bench": "page-cache"})
            outcome, _ = runner.run_container(client, spec, output_capped=False, heartbeat=lambda: True,
                                              heartbeat_every=60)
        elapsed = time.monotonic() - started
        if outcome.exit_code != 0:
            raise SystemExit(f"{name}: exit {outcome.exit_code}: {outcome.logs[-500:]}")
        return outcome.logs, elapsed

    probe = ["python3", "-S", "-I", "/system/probe.py"]

    # ---------------------------------------------------------------- the page-cache probe
    print("page cache probe: bits of 256 decoded by the team's next dev run")
    channel: dict[str, list[int]] = {}
    for hidden_runtime in ("runc", "runsc"):
        for isolate in (False, True):
            key = f"hidden {hidden_runtime}, protection {'on' if isolate else 'off'}"
            pol = policy(hidden_runtime, isolate)
            channel[key] = []
            for _ in range(args.repeat):
                order = ["1"] * (BITS // 2) + ["0"] * (BITS // 2)
                secrets.SystemRandom().shuffle(order)
                secret = "".join(order)
                run("dev-evict", [*probe, "evict"], hidden=False, pol=pol)
                run("test-set", [*probe, "set", "/input/bits.txt"], hidden=True, pol=pol, secret=secret)
                log, _ = run("dev-read", [*probe, "read"], hidden=False, pol=pol)
                bits = next(line.split()[1] for line in log.splitlines() if line.startswith("BITS "))
                channel[key].append(sum(a == b for a, b in zip(secret, bits, strict=True)))
            print(f"  {key:32s} {channel[key]}")
    results["page_cache_bits_of_256"] = channel

    # ---------------------------------------------------------------- cost
    print("cost")
    source_id = client.images.get(DEFAULT_BASE_IMAGE).id
    copy = runner.hidden_copy_reference(source_id)
    existed = runner.image_exists(client, copy)
    if existed:
        client.images.get(copy).tag("readerboard-bench/hidden-copy-kept", "latest")
        runner.image_remove(client, copy)
    started = time.monotonic()
    runner.hidden_copy(client, DEFAULT_BASE_IMAGE, instance=BENCH_INSTANCE)
    results["copy_base_s"] = round(time.monotonic() - started, 2)
    if existed:
        runner.image_remove(client, "readerboard-bench/hidden-copy-kept:latest")
    try:
        started = time.monotonic()
        baseline_copy = runner.hidden_copy(client, "readerboard/baseline:latest", instance=BENCH_INSTANCE)
        results["copy_baseline_image_s"] = round(time.monotonic() - started, 2)
        runner.image_remove(client, baseline_copy)
    except runner.PlatformError as exc:
        print("  baseline image:", exc)
    evictions = []
    for _ in range(args.repeat):
        started = time.monotonic()
        files = runner.image_pages_evict(client, copy)
        evictions.append(time.monotonic() - started)
    results["evict_files"] = files
    results["evict_s"] = round(statistics.median(evictions), 3)
    print(f"  hidden copy of the base image {results['copy_base_s']} s, of the baseline image "
          f"{results.get('copy_baseline_image_s')} s; evicting {files} files {results['evict_s']} s")
    trivial = ["python3", "-c", "pass"]
    timings: dict[str, float] = {}
    for key, hidden, pol in (("dev (runc)", False, policy("", False)),
                             ("hidden, unprotected, runc", True, policy("", False)),
                             ("hidden, copy + host alone, runc", True, policy("", True)),
                             ("hidden, unprotected, runsc", True, policy("runsc", False)),
                             ("hidden, protected (default: runsc)", True, policy("runsc", True))):
        times = [run("trivial", trivial, hidden=hidden, pol=pol)[1] for _ in range(args.repeat)]
        timings[key] = round(statistics.median(times), 2)
        print(f"  trivial run, {key:36s} {timings[key]} s")
    results["trivial_run_s"] = timings

    # ---------------------------------------------------------------- host state
    print("host state a container sees")
    views: dict[str, list[str]] = {}
    for runtime in ("runc", "runsc"):
        log, _ = run("view", ["python3", "-c", VIEW], hidden=False, pol=policy("", False), runtime_override=runtime)
        views[runtime] = log.splitlines()
        print(f"  [{runtime}]\n    " + "\n    ".join(views[runtime]))
    with open("/proc/meminfo", encoding="ascii") as fh:
        print("  host:", " | ".join(fh.read().splitlines()[:3]))
    results["views"] = views

    print("what a hidden run leaves in the host's counters for a later dev run (runc)")

    def counters() -> dict[str, int]:
        log, _ = run("counters", ["python3", "-c", COUNTERS], hidden=False, pol=policy("", False))
        return {line.split()[0]: int(line.split()[1]) for line in log.splitlines() if line.split()}

    left: dict[str, Any] = {}
    # What runs before the dev run's counters are read again: a hidden run's script and policy, or nothing.
    hidden_runs: list[tuple[str, str, HiddenRuns | None]] = [
        ("500 forks, hidden runc", HIDDEN_FORKS, policy("", False)),
        ("500 forks, hidden runsc", HIDDEN_FORKS, policy("runsc", False)),
        ("500 forks, idle (no hidden run)", "", None),
        ("40 MB read, hidden runc, unprotected", HIDDEN_READS, policy("", False)),
        ("40 MB read, hidden protected", HIDDEN_READS, policy("runsc", True)),
    ]
    for key, script, hidden_policy in hidden_runs:
        deltas = []
        for _ in range(args.repeat):
            # The reads' effect shows only on files not cached yet: evict the shared image first.
            run("evict", [*probe, "evict"], hidden=False, pol=policy("", False))
            runner.image_pages_evict(client, DEFAULT_BASE_IMAGE)
            before = counters()
            if hidden_policy is not None:
                run("hidden", ["python3", "-c", script], hidden=True, pol=hidden_policy)
            after = counters()
            deltas.append({k: after[k] - before[k] for k in before})
        left[key] = deltas
        print(f"  {key:40s} processes +{[d['processes'] for d in deltas]}  "
              f"Cached {[round(d['cached_kb'] / 1024, 1) for d in deltas]} MB")
    results["counters_left"] = left
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
