"""The platform's overhead per submitted system, with runc and with gVisor (runsc).

``python -m tests.benchmarks.bench_systems [--runs 10] [--datasets 12] [--runtimes runc,runsc] [--json OUT]``

A trivial system (tests/sandbox/systems/trivial: the first three words of each
context) is submitted as a code bundle through the service, ``--runs`` times per
runtime, one after the other, to a throwaway challenge with ``--datasets`` small
MRQA datasets (test portions of the committed demo data, reused in turn).  For
each submission:

    total     = upload accepted (the service returned, committed) -> scores visible (finished)
    container = the run's own wall time, as the runner measured it (start -> exit)
    overhead  = total - container

Everything is real: Redis, gunicorn, the control worker, a compute worker that reaches the platform
through its internal API only (claim, streamed and hash-checked downloads, heartbeats, the outcome
handed back and scored by the control worker), the Docker engine.  Needs
root, the engine and the base image (deploy/setup.sh).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "demo" / "data" / "mrqa"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed submissions per runtime")
    parser.add_argument("--datasets", type=int, default=12)
    parser.add_argument("--runtimes", default="runc,runsc")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs) and print where")
    return parser.parse_args(argv)


def setup_django(tmp: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings.dev"
    os.environ["READERBOARD_VAR_DIR"] = str(tmp / "var")
    os.environ["READERBOARD_DB_PATH"] = str(tmp / "db.sqlite3")
    os.environ["READERBOARD_PRIVATE_ROOT"] = str(tmp / "private")
    os.environ["READERBOARD_LOG_LEVEL"] = "WARNING"

    django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after django.setup()

    call_command("migrate", verbosity=0)


def _renamed(path: Path, name: str, folder: Path) -> Path:
    """A copy of an MRQA file whose header names ``name`` (a file is reused for several datasets,
    and challenge_load checks that the header names the dataset it is given to)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        header, *rest = fh.readlines()
    head = json.loads(header)
    head["header"]["dataset"] = name
    target = folder / f"{name}.test.jsonl.gz"
    with gzip.open(target, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(head) + "\n")
        fh.writelines(rest)
    return target


def spec(n: int, folder: Path) -> str:
    files = sorted(DEMO.glob("*.test.jsonl.gz"))
    datasets = []
    for i in range(n):
        name = f"D{i:02d}-{files[i % len(files)].name.split('.')[0]}"
        path = _renamed(files[i % len(files)], name, folder)
        split = "II" if i % 2 else "III"
        alias = f", sealed_alias: Hidden-{i:02d}" if split == "III" else ""
        datasets.append(f"  - {{slug: d{i:02d}, name: {name}, split: {split}{alias},"
                        f" files: {{test: {path}}}}}")
    return "\n".join([
        "slug: bench-systems",
        "title: Overhead benchmark",
        "metric_suite: mrqa",
        "phases:",
        "  - {slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,",
        "     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [code_bundle]}",
        "datasets:",
        *datasets,
        "",
    ])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-systems-"))
    setup_django(tmp)

    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.services import team_create  # noqa: PLC0415 - after django.setup()
    from leaderboard.core import enqueue  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.intake import submission_create_system  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.models import Status, Submission  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.reload import challenge_load  # noqa: PLC0415 - after django.setup()
    from tests.builders.processes import RedisServer, WebServer, Worker, compute_workers, shared_mount_release  # noqa: PLC0415 - after django.setup()

    spec_path = tmp / "spec.yaml"
    spec_path.write_text(spec(args.datasets, tmp))
    challenge = challenge_load(spec_path=spec_path)
    phase = challenge.phases.get(slug="test")
    user = User.objects.create_user("bench", password="bench-pw")
    team = team_create(challenge=challenge, owner=user, name="Bench")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(REPO / "tests" / "sandbox" / "systems" / "trivial" / "run.py", "run.py")
    bundle = buffer.getvalue()

    redis = RedisServer(tmp)
    redis.start()
    from django.conf import settings  # noqa: PLC0415 - after django.setup()

    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis.url
    enqueue.celery_client.cache_clear()
    # As across hosts: gunicorn, the control worker, and a compute worker that reaches the platform
    # through the internal API only (its own mount namespace, without the database or private storage).
    compute_root = Path(tempfile.mkdtemp(prefix="bench-compute-"))
    web = WebServer(redis.url, tmp / "web.log")
    workers: list[Any] = [web, Worker(redis.url, tmp / "control.log", queues="celery,control", beat=True),
                          *compute_workers(web.url, compute_root, tmp, count=1, prefix="bench-compute")]
    for worker in workers:
        worker.start()
    results: dict[str, Any] = {"datasets": args.datasets, "runs": args.runs, "runtimes": {}}
    try:
        for runtime in args.runtimes.split(","):
            challenge.system_settings = {"runtime": runtime}
            challenge.save()
            rows = []
            for i in range(args.runs + 1):  # the first is a warm-up (worker start, page cache)
                upload = SimpleUploadedFile("trivial.zip", bundle)
                submission = submission_create_system(team=team, phase=phase, user=user, upload=upload,
                                                      kind="code_bundle")
                accepted = time.perf_counter()
                seen: dict[str, float] = {}  # the first moment each status was read
                while True:
                    status = Submission.objects.filter(pk=submission.pk).values_list("status", flat=True).get()
                    seen.setdefault(status, time.perf_counter())
                    if status in (Status.FINISHED, Status.FAILED, Status.CANCELLED):
                        break
                    time.sleep(0.01)
                visible = time.perf_counter()
                done = Submission.objects.get(pk=submission.pk)
                if done.status != Status.FINISHED:
                    print(f"{runtime}: submission failed: {done.failure_reason}\n{done.log}", file=sys.stderr)
                    return 1
                if i == 0:
                    continue
                total = visible - accepted
                container = done.run_seconds or 0.0
                # Where the time went, as this loop saw the status change (to within its 10 ms):
                # queued = accepted -> claimed (running); ran = claimed -> handed back and its scoring
                # begun (scoring; the container's own run included); scored = -> finished.
                running = seen.get(Status.RUNNING, seen.get(Status.SCORING, visible))
                scoring = seen.get(Status.SCORING, visible)
                rows.append({"total_s": total, "container_s": container, "overhead_s": total - container,
                             "queued_s": running - accepted, "ran_s": scoring - running,
                             "scored_s": visible - scoring})
            keys = ("total_s", "container_s", "overhead_s", "queued_s", "ran_s", "scored_s")
            summary = {
                key: {"median": statistics.median(r[key] for r in rows),
                      "p95": percentile([r[key] for r in rows], 0.95),
                      "min": min(r[key] for r in rows)}
                for key in keys
            }
            results["runtimes"][runtime] = {"summary": summary, "rows": rows}
            print(f"{runtime:6s} total {summary['total_s']['median']:.2f} s  container {summary['container_s']['median']:.2f} s"
                  f"  overhead median {summary['overhead_s']['median']:.2f} s (p95 {summary['overhead_s']['p95']:.2f},"
                  f" min {summary['overhead_s']['min']:.2f})  over {len(rows)} runs x {args.datasets} datasets")
            print(f"{'':6s} steps, median: queued -> claimed {summary['queued_s']['median']:.2f} s, claimed -> "
                  f"handed back {summary['ran_s']['median']:.2f} s, scoring {summary['scored_s']['median']:.2f} s"
                  f"  (load average {os.getloadavg()[0]:.2f})")
    finally:
        for worker in reversed(workers):
            worker.stop()
        shared_mount_release(compute_root)
        shutil.rmtree(compute_root, ignore_errors=True)
        redis.stop()
        enqueue.celery_client.cache_clear()
        if args.keep:
            print(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
