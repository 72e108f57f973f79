"""The last hours before a deadline: many teams upload at once, against the production server.

``python -m tests.benchmarks.bench_deadline_rush [--teams 100] [--uploads 500] [--systems 50]
[--window 600] [--burst 20] [--postgres] [--netns] [--json OUT]``

Everything is real and runs as it would across hosts: gunicorn (2 processes x 4 threads) on the
database (SQLite, or with ``--postgres`` a fresh database on the local cluster of deploy/postgres.sh),
Redis, a worker for prediction files, the control worker (finishing runs, the reaper, beat), and two
compute workers that reach the platform through its internal API only (own mount namespace, no
database URL).  Teams use the public API with their tokens, from 16 client threads:

* ``--uploads`` prediction files from random teams, at random moments over ``--window`` seconds;
* ``--systems`` small code bundles (the trivial system): ``--burst`` of them from one team at once,
  a third of the way in, the others from other teams (one each): a third of those within 3 s of the
  burst (while it is queued), the rest at random moments.

Reported: uploads refused (by reason; only quota refusals are acceptable), upload-to-score p50/p95/max
for prediction files and for systems (client send -> finished_at), the longest wait from upload to
start for a team's first system while the burst team still had runs queued, and whether every
submission ended final exactly once (one overall score, one per-question record per dataset, one run
attempt).  Needs root, the engine and the base image (deploy/setup.sh).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django
import psycopg
import requests

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "demo" / "data" / "mrqa"
DATASETS = {"squad": "SQuAD", "xquad-en": "XQuAD-en"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=100)
    parser.add_argument("--uploads", type=int, default=500)
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--window", type=float, default=600.0, help="seconds over which the load arrives")
    parser.add_argument("--quota-per-day", type=int, default=25, help="room for the burst team's 20 systems")
    parser.add_argument("--postgres", action="store_true", help="a fresh database on deploy/postgres.sh's cluster")
    parser.add_argument("--netns", action="store_true",
                        help="each compute worker on a host of its own (a network namespace; needs root)")
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--json", type=Path)
    return parser.parse_args(argv)


def spec(quota: int) -> str:
    lines = [
        "slug: rush", "title: Deadline rush", "metric_suite: mrqa",
        "systems: {limits: {time_limit_s: 60, memory_mb: 256}, max_running_per_team: 2}",
        "phases:",
        "  - {slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,",
        f"     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions, code_bundle], quota: {{per_day: {quota}}}}}",
        "datasets:",
    ]
    for slug, name in DATASETS.items():
        lines.append(f"  - {{slug: {slug}, name: {name}, split: II, files: {{test: {DEMO / (name + '.test.jsonl.gz')}}}}}")
    return "\n".join(lines) + "\n"


def predictions(rng: random.Random) -> bytes:
    out: dict[str, dict[str, str]] = {}
    for slug, name in DATASETS.items():
        answers = {}
        with gzip.open(DEMO / f"{name}.test.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in list(fh)[1:]:
                for qa in json.loads(line)["qas"]:
                    gold = qa["answers"][0]
                    answers[qa["qid"]] = gold if rng.random() < 0.6 else "no idea"
        out[slug] = answers
    return json.dumps(out).encode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def fresh_postgres() -> str:
    url = subprocess.run(["bash", str(REPO / "deploy" / "postgres.sh")], check=True, capture_output=True,
                         text=True).stdout.strip()
    name = f"bench_rush_{os.getpid()}"
    base, _, _ = url.rpartition("/")

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


def platform_settings(prefix: str, *, postgres: bool, log_level: str) -> Path:
    """Set Django up for a benchmark's own platform: a fresh folder (returned) for its private storage
    and logs, and a fresh database (SQLite there, or with ``postgres`` one on deploy/postgres.sh's cluster)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings.dev"
    os.environ["READERBOARD_VAR_DIR"] = str(tmp / "var")
    os.environ["READERBOARD_PRIVATE_ROOT"] = str(tmp / "private")
    os.environ["READERBOARD_LOG_LEVEL"] = log_level
    if postgres:
        os.environ["READERBOARD_DATABASE_URL"] = fresh_postgres()
    else:
        os.environ.pop("READERBOARD_DATABASE_URL", None)
        os.environ["READERBOARD_DB_PATH"] = str(tmp / "db.sqlite3")
    django.setup()
    return tmp


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rng = random.Random(args.seed)
    tmp = platform_settings("bench-rush-", postgres=args.postgres, log_level="WARNING")
    from django.conf import settings  # noqa: PLC0415 - after django.setup()
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.services import api_token_create, team_create  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.models import QuestionScores, Score, Status, Submission  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.reload import challenge_load  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.worker_api import worker_token_create  # noqa: PLC0415 - after django.setup()
    from tests.builders.netns import net_host_make, net_host_remove  # noqa: PLC0415 - beside the processes
    from tests.builders.processes import (  # noqa: PLC0415 - after django.setup()
        ComputeWorker,
        RedisServer,
        WebServer,
        Worker,
        compute_workers,
        shared_mount,
        shared_mount_release,
    )

    call_command("migrate", verbosity=0)
    spec_path = tmp / "spec.yaml"
    spec_path.write_text(spec(args.quota_per_day))
    challenge = challenge_load(spec_path=spec_path)
    tokens = []
    for n in range(args.teams):
        user = User.objects.create_user(f"rush{n:03d}", password="rush-pw")
        team_create(challenge=challenge, owner=user, name=f"Team {n:03d}")
        tokens.append(api_token_create(user=user, name="rush")[1])
    bundle = io.BytesIO()
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.write(REPO / "tests" / "sandbox" / "systems" / "trivial" / "run.py", "run.py")
    system_zip = bundle.getvalue()
    files = [predictions(rng) for _ in range(8)]  # varied scores; uploads pick one each

    # The schedule: (at seconds, team, kind).  The burst team is team 0; other system teams 1..n.
    events: list[tuple[float, int, str]] = []
    events += [(rng.uniform(0, args.window), rng.randrange(args.teams), "predictions") for _ in range(args.uploads)]
    burst_at = args.window / 3
    events += [(burst_at, 0, "system") for _ in range(args.burst)]
    others = list(range(1, args.teams))
    rng.shuffle(others)
    firsts = others[:args.systems - args.burst]
    # A third of the other teams send their first system in the seconds after the burst, while it is
    # queued: fair claims start them within about one run, not after the burst's twenty.
    events += [(burst_at + rng.uniform(0.5, 3.0), team, "system") for team in firsts[:len(firsts) // 3]]
    events += [(rng.uniform(burst_at, args.window), team, "system") for team in firsts[len(firsts) // 3:]]
    events.sort()

    redis = RedisServer(tmp)
    redis.start()
    compute_root = Path(tempfile.mkdtemp(prefix="bench-rush-compute-"))
    hosts = [net_host_make(n) for n in (1, 2)] if args.netns else []
    web = WebServer(redis.url, tmp / "web.log", extra_env={"READERBOARD_LOG_LEVEL": "WARNING"},
                    also_on=[h.host_ip for h in hosts])
    if hosts:
        # Each compute worker reaches the internal API at its own link's near end, and nothing else.
        shared_mount(compute_root)
        computes = [ComputeWorker(web.url_on(h.host_ip), worker_token_create(name=f"rush-netns-{n}", queues=["cpu"]),
                                  compute_root / f"w{n}", tmp / f"rush-netns-{n}.log", name=f"rush-netns-{n}",
                                  net_host=h) for n, h in enumerate(hosts, start=1)]
    else:
        computes = compute_workers(web.url, compute_root, tmp, prefix="rush-compute")
    processes: list[Any] = [
        web,
        Worker(redis.url, tmp / "files.log", queues="celery"),
        Worker(redis.url, tmp / "control.log", queues="control", beat=True),
        *computes,
    ]
    for process in processes:
        process.start()
    sent: dict[int, tuple[float, int, str]] = {}  # submission id -> (client send time, team, kind)
    refused: Counter[str] = Counter()
    lock = threading.Lock()
    url = f"{web.url}/api/v1/challenges/{challenge.slug}"

    def send(at: float, team: int, kind: str, start: float) -> None:
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        headers = {"Authorization": f"Token {tokens[team]}"}
        began = time.time()
        try:
            if kind == "predictions":
                # One of eight files: a team sends one again by design, so it confirms (duplicate_refuse).
                response = requests.post(f"{url}/submissions/", headers=headers,
                                         data={"phase": "test", "allow_duplicate": "true"},
                                         files={"file": ("preds.json", rng.choice(files))}, timeout=120)
            else:
                response = requests.post(f"{url}/systems/", headers=headers,
                                         data={"phase": "test", "kind": "code_bundle"},
                                         files={"file": ("system.zip", system_zip)}, timeout=120)
        except requests.RequestException as exc:
            with lock:
                refused[f"{kind}: {type(exc).__name__}"] += 1
            return
        with lock:
            if response.status_code == 201:
                sent[int(response.json()["id"])] = (began, team, kind)
            else:
                detail = response.json().get("detail", "") if response.headers.get("content-type", "").startswith(
                    "application/json") else response.text[:80]
                refused[f"{kind}: {response.status_code} {'quota' if 'quota' in str(detail).lower() else detail}"] += 1

    try:
        print(f"rush: {len(events)} uploads over {args.window:.0f} s from {args.teams} teams ...", flush=True)
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            for future in [pool.submit(send, at, team, kind, start) for at, team, kind in events]:
                future.result()
        submitted_in = time.monotonic() - start
        deadline = time.monotonic() + 900
        while Submission.objects.filter(pk__in=list(sent)).exclude(
                status__in=(Status.FINISHED, Status.FAILED, Status.CANCELLED)).exists():
            if time.monotonic() > deadline:
                print("rush: submissions still not final after 15 minutes", file=sys.stderr)
                break
            time.sleep(1)
        drained_in = time.monotonic() - start
        rows = {s.pk: s for s in Submission.objects.filter(pk__in=list(sent))}
        waits: dict[str, list[float]] = {"predictions": [], "system": []}
        not_final, failed = [], []
        for pk, (began, _team, kind) in sent.items():
            s = rows[pk]
            if s.status not in (Status.FINISHED, Status.FAILED, Status.CANCELLED) or s.finished_at is None:
                not_final.append(pk)
                continue
            if s.status != Status.FINISHED:
                failed.append((pk, s.verdict, s.failure_reason[:100]))
            waits[kind].append(s.finished_at.timestamp() - began)
        overall = Counter(Score.objects.filter(submission_id__in=list(sent), dataset__isnull=True,
                                               metric="macro_f1").values_list("submission_id", flat=True))
        per_question = Counter(QuestionScores.objects.filter(submission_id__in=list(sent))
                               .values_list("submission_id", flat=True))
        finished = [pk for pk in sent if rows[pk].status == Status.FINISHED]
        exactly_once = (all(overall[pk] == 1 for pk in finished) and all(per_question[pk] == len(DATASETS)
                        for pk in finished) and all(rows[pk].attempts <= 1 for pk in sent if sent[pk][2] == "system"))
        # A team's first system while the burst team still had runs queued: upload -> claimed (started_at).
        burst_ids = [pk for pk, (_, team, kind) in sent.items() if team == 0 and kind == "system"]
        burst_last_start = max((started.timestamp() for pk in burst_ids if (started := rows[pk].started_at)),
                               default=0)
        first_waits = [started.timestamp() - began for pk, (began, team, kind) in sent.items()
                       if kind == "system" and team != 0 and (started := rows[pk].started_at)
                       and began < burst_last_start]
        report = {
            "teams": args.teams, "window_s": args.window, "database": settings.DATABASES["default"]["ENGINE"],
            "compute_hosts": "network namespaces" if hosts else "this machine's network",
            "sent": {k: sum(1 for v in sent.values() if v[2] == k) for k in ("predictions", "system")},
            "refused": dict(refused), "submitted_in_s": round(submitted_in, 1), "all_final_after_s": round(drained_in, 1),
            "not_final": not_final, "failed": failed, "exactly_once": exactly_once,
            "upload_to_score_s": {
                kind: {"p50": round(statistics.median(v), 2), "p95": round(percentile(v, 0.95), 2),
                       "max": round(max(v), 2), "n": len(v)} for kind, v in waits.items() if v},
            "first_system_wait_while_burst_queued_s": {
                "n": len(first_waits), "max": round(max(first_waits), 2) if first_waits else None,
                "p50": round(statistics.median(first_waits), 2) if first_waits else None},
            "burst_team_runs_s": round(burst_last_start - min(sent[pk][0] for pk in burst_ids), 1) if burst_ids else None,
        }
        print(json.dumps(report, indent=2))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return 0 if exactly_once and not not_final else 1
    finally:
        for process in reversed(processes):
            process.stop()
        shared_mount_release(compute_root)
        for host in hosts:
            net_host_remove(host)
        shutil.rmtree(compute_root, ignore_errors=True)
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
