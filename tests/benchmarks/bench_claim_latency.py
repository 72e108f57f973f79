"""What polling costs: submission -> claim latency, and an idle compute worker's request rate.

``python -m tests.benchmarks.bench_claim_latency [--runs 20] [--idle-s 30] [--json OUT]``

Compute workers hold no broker: they ask the internal API for the next run every ``POLL_S`` (jittered)
while none is due.  Two figures, both with real processes:

    idle      one ``python -m workers.compute`` against a stand-in internal API that always answers
              "nothing" (``retry_after`` 2 s): claim requests per second over ``--idle-s``, and how
              long it takes to exit on SIGTERM while idle;
    latency   the platform as across hosts (gunicorn, the control worker, one compute worker; the
              engine): ``--runs`` trivial code bundles submitted one at a time, each once the worker
              is idle again; latency = the submission committed -> its run claimed (``started_at``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.benchmarks.bench_systems import REPO, setup_django, spec


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--json", type=Path)
    return parser.parse_args(argv)


def idle_rate(seconds: float, tmp: Path) -> dict[str, float]:
    claims: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/").endswith("runs/claim"):
                claims.append(time.monotonic())
            body = json.dumps({"ticket": None, "retry_after": 2.0}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"PATH": os.environ["PATH"], "READERBOARD_API_URL": f"http://127.0.0.1:{server.server_port}",
           "READERBOARD_WORKER_TOKEN": "rbw_bench", "READERBOARD_WORK_DIR": str(tmp / "idle"),
           "READERBOARD_RUN_IMAGE_REPOSITORY": "bench-idle-run"}
    proc = subprocess.Popen([sys.executable, "-m", "workers.compute"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3)  # start-up (imports, leftovers check)
        first = len(claims)
        time.sleep(seconds)
        count = len(claims) - first
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        exit_s = time.monotonic() - stopping
    finally:
        if proc.poll() is None:
            proc.kill()
        server.shutdown()
    gaps = [b - a for a, b in zip(claims, claims[1:], strict=False)]
    return {"requests_per_s": count / seconds, "median_gap_s": statistics.median(gaps) if gaps else 0.0,
            "sigterm_exit_s": exit_s, "exit_code": float(proc.returncode)}


def claim_latency(runs: int, tmp: Path) -> dict[str, Any]:
    setup_django(tmp)
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.services import team_create  # noqa: PLC0415 - after django.setup()
    from leaderboard.core import enqueue  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.intake import submission_create_system  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.models import Status, Submission  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.reload import challenge_load  # noqa: PLC0415 - after django.setup()
    from tests.builders.processes import (  # noqa: PLC0415 - after django.setup()
        RedisServer,
        WebServer,
        Worker,
        compute_workers,
        shared_mount_release,
    )
    from tests.builders.systems import script_bundle  # noqa: PLC0415 - after django.setup()

    spec_path = tmp / "spec.yaml"
    spec_path.write_text(spec(1, tmp))
    challenge = challenge_load(spec_path=spec_path)
    challenge.system_settings = {"runtime": "runc"}
    challenge.save()
    phase = challenge.phases.get(slug="test")
    user = User.objects.create_user("bench", password="bench-pw")
    team = team_create(challenge=challenge, owner=user, name="Bench")
    bundle = script_bundle(REPO / "tests" / "sandbox" / "systems" / "trivial" / "run.py")
    from django.conf import settings  # noqa: PLC0415 - after django.setup()

    redis = RedisServer(tmp)
    redis.start()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis.url
    enqueue.celery_client.cache_clear()
    compute_root = Path(tempfile.mkdtemp(prefix="bench-claim-"))
    web = WebServer(redis.url, tmp / "web.log")
    workers: list[Any] = [web, Worker(redis.url, tmp / "control.log", queues="celery,control", beat=True),
                          *compute_workers(web.url, compute_root, tmp, count=1, prefix="bench-claim")]
    latencies: list[float] = []
    try:
        for worker in workers:
            worker.start()
        for i in range(runs + 1):  # the first is a warm-up
            submission = submission_create_system(team=team, phase=phase, user=user,
                                                  upload=SimpleUploadedFile("t.zip", bundle), kind="code_bundle")
            committed = time.time()
            while not Submission.objects.filter(pk=submission.pk, started_at__isnull=False).exists():
                time.sleep(0.005)
            started = Submission.objects.get(pk=submission.pk)
            assert started.started_at is not None
            if i:
                latencies.append(started.started_at.timestamp() - committed)
            while Submission.objects.get(pk=submission.pk).status not in (Status.FINISHED, Status.FAILED):
                time.sleep(0.05)
            # At a random point of the worker's poll interval, as a team's upload would arrive.
            time.sleep(random.uniform(0.3, 2.8))
    finally:
        for worker in reversed(workers):
            worker.stop()
        shared_mount_release(compute_root)
        shutil.rmtree(compute_root, ignore_errors=True)
        redis.stop()
    return {"runs": len(latencies), "median_s": statistics.median(latencies), "max_s": max(latencies),
            "min_s": min(latencies), "rows": latencies}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-claim-latency-"))
    try:
        idle = idle_rate(args.idle_s, tmp)
        print(f"idle: {idle['requests_per_s']:.2f} claim requests/s (median gap {idle['median_gap_s']:.2f} s); "
              f"SIGTERM while idle: exit {idle['exit_code']:.0f} after {idle['sigterm_exit_s']:.2f} s")
        latency = claim_latency(args.runs, tmp)
        print(f"submission -> claim: median {latency['median_s']:.2f} s (min {latency['min_s']:.2f}, "
              f"max {latency['max_s']:.2f}) over {latency['runs']} runs, one compute worker")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps({"idle": idle, "latency": latency}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
