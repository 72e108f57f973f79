"""A large board served by the production server (gunicorn, ``deploy/serve.sh``) to concurrent clients.

``python -m tests.benchmarks.bench_board_served [--teams 1000] [--clients 8] [--requests 300]
[--json RESULTS.json]``

The board is ``bench_board``'s (1,000 teams x 10 submissions x 12 datasets, 20 baselines, in a
throwaway SQLite file).  The script starts ``deploy/serve.sh`` on it (production settings, gunicorn's
threaded workers, a Redis of its own as the broker, no Celery worker: nothing rebuilds in the
background, so the first read builds each snapshot), reads each endpoint once to build the
snapshots, then sends ``--requests`` requests per endpoint from ``--clients`` threads, each on its
own keep-alive connection.  Reported per endpoint: median, p95 and p99 (nearest rank) in ms.

Every answer is measured for the three viewers: the public (no session), "participant" (a member of a
team with a row: their row is marked) and "organizer" (the organizer view).  Each viewer's first answer
is checked to be that viewer's (their row marked; the organizer banner), so a session the server does
not accept cannot pass for a viewer's figures: the sessions are signed with the server's secret key.

Then the repeated-read load, for each viewer: every client reads the board page, the API and the
exports over and over, sending back the ETag it got (as a browser or a polling script does); the
share of 304s and their latency are reported.  Then, in-process, the CPU time of one request per
endpoint (a 200 and a 304), which other work on the machine does not inflate.  Last, how long a
change's rebuild takes (every view of the phase built again from the database, with its
renderings), and how long one reader pays when it finds the snapshot stale (the board page right
after a change, before any rebuild).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import runpy
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.benchmarks import bench_board

REPO = Path(__file__).resolve().parents[2]
# The server's secret key, set before Django starts here too: a session's auth hash is signed with it,
# and a session made under another key is dropped by the server (the request is then the public's).
SECRET_KEY = "bench-only"
# A team member's page marks their row, or links to the page that has it.
OWN_ROW = (b'<tr class="own', b'id="own-row-link"')
ORGANIZER_BANNER = b'id="organizer-banner"'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def wait_listening(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"nothing listens on {port} after {timeout} s")


def get(conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> tuple[int, str, float]:
    status, etag, ms, _ = get_body(conn, path, headers)
    return status, etag, ms


def get_body(conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> tuple[int, str, float, bytes]:
    t0 = time.perf_counter()
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    return response.status, response.getheader("ETag") or "", (time.perf_counter() - t0) * 1000, body


def load(port: int, paths: Sequence[str], headers: dict[str, str], clients: int, requests: int,
         conditional: bool = False) -> dict[str, Any]:
    """``requests`` GETs spread over ``clients`` threads, each with a keep-alive connection."""
    per_client = max(1, requests // clients)
    times: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        etags: dict[str, str] = {}
        mine: list[float] = []
        codes: dict[int, int] = {}
        for i in range(per_client):
            path = paths[(i + k) % len(paths)]
            sent = {**headers, **({"If-None-Match": etags[path]} if conditional and path in etags else {})}
            status, etag, ms = get(conn, path, sent)
            if etag:
                etags[path] = etag
            mine.append(ms)
            codes[status] = codes.get(status, 0) + 1
        conn.close()
        with lock:
            times.extend(mine)
            for code, n in codes.items():
                statuses[code] = statuses.get(code, 0) + n

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"requests": len(times), "median_ms": statistics.median(times), "p95_ms": pct(times, 0.95),
            "p99_ms": pct(times, 0.99), "per_s": len(times) / wall, "statuses": statuses}


def session_cookie(username: str) -> str:
    """A logged-in session for ``username``, made in the database the server reads."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY  # noqa: PLC0415 - after django.setup()
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.contrib.sessions.backends.db import SessionStore  # noqa: PLC0415 - after django.setup()

    user = User.objects.get(username=username)
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"sessionid={store.session_key}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--submissions", type=int, default=10)
    parser.add_argument("--datasets", type=int, default=12)
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=300, help="per endpoint")
    parser.add_argument("--workers", type=int, help="gunicorn processes (default: production's, 2 x cores)")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn process")
    parser.add_argument("--cpu-runs", type=int, default=50, help="in-process requests per endpoint, for CPU time")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    if args.workers is None:  # what deploy/serve.sh runs with no READERBOARD_WEB_WORKERS
        args.workers = int(runpy.run_path(str(REPO / "deploy" / "gunicorn.conf.py"))["workers"])
    var_dir = Path(tempfile.mkdtemp(prefix="bench_served_"))
    os.environ["READERBOARD_SECRET_KEY"] = SECRET_KEY
    bench_board.django_setup(var_dir)
    from django.conf import settings  # noqa: PLC0415 - after django.setup()
    from django.db import connections  # noqa: PLC0415 - after django.setup()

    db_path = Path(settings.DATABASES["default"]["NAME"])
    t0 = time.perf_counter()
    bench_board.build(argparse.Namespace(teams=args.teams, submissions=args.submissions, datasets=args.datasets,
                                         seed=args.seed))
    print(f"setup {time.perf_counter() - t0:.0f} s: {args.teams} teams, {args.datasets} datasets", flush=True)
    participant, organizer = session_cookie("participant"), session_cookie("organizer")
    connections.close_all()

    redis_port, web_port = free_port(), free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings.prod",
        "READERBOARD_SECRET_KEY": SECRET_KEY,
        "READERBOARD_DATABASE_URL": f"sqlite:///{db_path}",
        "READERBOARD_EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
        "READERBOARD_VAR_DIR": str(var_dir / "var"),
        "READERBOARD_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
        "READERBOARD_WEB_BIND": f"127.0.0.1:{web_port}",
        "READERBOARD_WEB_WORKERS": str(args.workers),
        "READERBOARD_WEB_THREADS": str(args.threads),
        "READERBOARD_MIGRATE": "0",
        "PYTHON": sys.executable,
    }
    log = open(var_dir / "serve.log", "w")  # noqa: SIM115
    server = subprocess.Popen(["bash", "deploy/serve.sh"], cwd=REPO, env=env, stdout=log, stderr=log)
    report: dict[str, Any] = {"teams": args.teams, "clients": args.clients, "workers": args.workers,
                              "threads": args.threads, "python": sys.version.split()[0]}
    try:
        wait_listening(web_port, 120)
        base = f"/c/{bench_board.SLUG}/board/{bench_board.PHASE}"
        api = f"/api/v1/challenges/{bench_board.SLUG}/phases/{bench_board.PHASE}/leaderboard/"
        viewers = {"public": {}, "participant": {"Cookie": participant}, "organizer": {"Cookie": organizer}}
        endpoints: dict[str, tuple[str, str]] = {}  # name: (path, viewer)
        for viewer in viewers:
            board = f"{base}/organizer" if viewer == "organizer" else base
            endpoints[f"board page ({viewer})"] = (f"{board}/", viewer)
            endpoints[f"board page 5 ({viewer})"] = (f"{board}/?page=5", viewer)
            endpoints[f"API leaderboard ({viewer})"] = (api + ("?view=organizer" if viewer == "organizer" else ""),
                                                        viewer)
            endpoints[f"JSON export ({viewer})"] = (f"{board}/export.json", viewer)
            endpoints[f"CSV export ({viewer})"] = (f"{board}/export.csv", viewer)
            endpoints[f"chart.svg ({viewer})"] = (f"{board}/chart.svg", viewer)
        conn = http.client.HTTPConnection("127.0.0.1", web_port, timeout=300)
        first: dict[str, float] = {}
        for name, (path, viewer) in endpoints.items():
            status, _, ms, body = get_body(conn, path, viewers[viewer])
            assert status == 200, (name, path, status, (var_dir / "serve.log").read_text()[-2000:])
            if name.startswith("board page ("):
                # The answer is the viewer's: else a rejected session would be timed as the public.
                assert any(m in body for m in OWN_ROW) == (viewer == "participant"), (name, "own row marked?")
                assert (ORGANIZER_BANNER in body) == (viewer == "organizer"), (name, "organizer view?")
            first[name] = ms
        conn.close()
        report["first_read_ms"] = first
        results = {}
        for name, (path, viewer) in endpoints.items():
            results[name] = load(web_port, [path], viewers[viewer], args.clients, args.requests)
        report["endpoints"] = results
        report["repeated_reads"] = {
            viewer: load(web_port, [path for path, v in endpoints.values() if v == viewer], headers, args.clients,
                         args.requests * 2, conditional=True)
            for viewer, headers in viewers.items()
        }
    finally:
        server.terminate()
        server.wait(30)
        redis.terminate()
        log.close()
    # A worker replaced mid-run (max_requests) boots again while the clients wait: the tail shows it.
    served = (var_dir / "serve.log").read_text(errors="replace")
    report["worker_boots"] = served.count("Booting worker")
    report["worker_restarts"] = served.count("Autorestarting worker")

    # In-process: a change's rebuild, and a reader that meets a stale snapshot.
    from django.test import Client  # noqa: PLC0415 - after django.setup()

    from leaderboard.challenges.models import Phase  # noqa: PLC0415 - after django.setup()
    from leaderboard.challenges.versions import board_changed  # noqa: PLC0415 - after django.setup()
    from leaderboard.rankings.snapshots import board_snapshots_rebuild  # noqa: PLC0415 - after django.setup()

    phase = Phase.objects.get(challenge__slug=bench_board.SLUG, slug=bench_board.PHASE)
    # CPU per request, in one thread of this process (the snapshots are current): what a request costs
    # whatever else the machine runs, unlike the latencies above.  Test settings: no WhiteNoise.
    cpu: dict[str, dict[str, float]] = {}
    for name, (path, viewer) in endpoints.items():
        c = Client(headers={k: v for k, v in viewers[viewer].items()})
        assert c.get(path).status_code == 200, (name, "in-process")
        etag = c.get(path).headers["ETag"]
        for kind, extra in (("200", {}), ("304", {"If-None-Match": etag})):
            t0 = time.process_time()
            for _ in range(args.cpu_runs):
                c.get(path, headers=extra)
            cpu.setdefault(name, {})[kind] = (time.process_time() - t0) * 1000 / args.cpu_runs
    report["cpu_ms_per_request"] = cpu
    rebuilds, stale_reads = [], []
    for _ in range(3):
        board_changed(challenge_id=phase.challenge_id)
        t0 = time.perf_counter()
        board_snapshots_rebuild(phase.challenge_id)
        rebuilds.append(time.perf_counter() - t0)
        board_changed(challenge_id=phase.challenge_id)
        t0 = time.perf_counter()
        assert Client().get(f"/c/{bench_board.SLUG}/board/{bench_board.PHASE}/").status_code == 200
        stale_reads.append(time.perf_counter() - t0)
    report["rebuild_s"] = {"median": statistics.median(rebuilds), "max": max(rebuilds), "views": 2}
    report["stale_read_s"] = {"median": statistics.median(stale_reads), "max": max(stale_reads)}

    print(f"\n{'endpoint':<34} {'median ms':>10} {'p95 ms':>8} {'p99 ms':>8} {'req/s':>7}  statuses")
    for name, r in report["endpoints"].items():
        print(f"{name:<34} {r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['per_s']:>7.0f}  "
              f"{r['statuses']}  (first read {first[name]:.0f} ms)")
    print(f"gunicorn workers booted {report['worker_boots']} times ({report['worker_restarts']} replaced "
          f"after max_requests)")
    print(f"\nCPU ms per request in-process ({args.cpu_runs} runs each): 200 / 304")
    for name, per_status in cpu.items():
        print(f"{name:<34} {per_status['200']:>7.2f} / {per_status['304']:>5.2f}")
    print()
    for viewer, rr in report["repeated_reads"].items():
        share = rr["statuses"].get(304, 0) / rr["requests"]
        print(f"repeated reads with If-None-Match ({viewer}): {share:.1%} answered 304; median "
              f"{rr['median_ms']:.1f} ms, p95 {rr['p95_ms']:.1f} ms ({rr['requests']} requests, {rr['statuses']})")
    print(f"rebuild after a change (public + organizer view of the phase): median {report['rebuild_s']['median']:.2f} s, "
          f"max {report['rebuild_s']['max']:.2f} s")
    print(f"a page read that finds its snapshot stale: median {report['stale_read_s']['median']:.2f} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    connections.close_all()
    shutil.rmtree(var_dir, ignore_errors=True)
    shutil.rmtree(db_path.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
