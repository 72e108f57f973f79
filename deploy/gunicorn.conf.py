"""gunicorn's settings for Readerboard's web process (deploy/serve.sh runs it with this file).

READERBOARD_WEB_* variables override the numbers.  What decides them is uploads: a prediction file
is at most 50 MiB and a system (a ``docker save`` archive) at most 2 GiB.  At 100 Mbit/s those take
4 s and 3 minutes to arrive; at 10 Mbit/s (a team on conference Wi-Fi on the last day) 40 s and
half an hour.  gunicorn kills a worker that has not reported to it for ``timeout`` seconds, and a
*sync* worker cannot report while it serves a request: its timeout would have to outlast the
slowest 2 GiB upload, and a worker that truly hangs would go unnoticed for as long.  So the workers
are threaded (gthread): each one's main thread reports every second while its threads read request
bodies for as long as the clients take, and ``timeout`` only catches a process that hangs whole.
A thread waits at most a few seconds for a request's first bytes before the connection goes back
to the main thread, so idle connections hold no thread.  Each upload does hold one thread while its
body arrives: WORKERS x THREADS is how many uploads (and page views) are served at once, 2 x cores x
8 by default.
"""

from __future__ import annotations

import os


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(f"READERBOARD_WEB_{name}", default))


def binds_parse(text: str) -> list[str]:
    """READERBOARD_WEB_BIND as gunicorn's ``bind`` list: addresses separated by spaces or commas, each
    ``HOST:PORT``, ``[IPv6]:PORT`` or ``unix:PATH`` (e.g. ``"0.0.0.0:8000 [::]:8000"``: IPv4 and IPv6)."""
    binds = [part for part in text.replace(",", " ").split() if part]
    if not binds:
        raise SystemExit("readerboard: READERBOARD_WEB_BIND names no address: e.g. 0.0.0.0:8000 or "
                         "\"127.0.0.1:8000 [::1]:8000\"")
    return binds


wsgi_app = "leaderboard.wsgi:application"
bind = binds_parse(os.environ.get("READERBOARD_WEB_BIND", "0.0.0.0:8000"))  # where it listens: addresses, by spaces or commas
worker_class = "gthread"
# Processes for CPU work (a page, the check of a 50 MiB prediction file holds the GIL for about a
# second); threads for waiting on clients.
workers = _env_int("WORKERS", 2 * (os.cpu_count() or 1))
threads = _env_int("THREADS", 8)  # per process: uploads and pages waiting on the network or the database
# Only a worker that stopped reporting at all: never an upload that is slow (see above).
timeout = _env_int("TIMEOUT_S", 120)
# On a restart (a deploy, SIGTERM), requests in flight get this long to finish: an upload begun
# before a deadline is in time if its body arrives within READERBOARD_UPLOAD_DEADLINE_GRACE_S
# (15 minutes), so a restart does not cut it off sooner.  Stopping an idle server is immediate.
graceful_timeout = _env_int("GRACEFUL_TIMEOUT_S", 15 * 60)
keepalive = 5
# A worker is replaced (gracefully) after this many requests, so slow memory growth stays bounded.
max_requests = _env_int("MAX_REQUESTS", 2000)
max_requests_jitter = max_requests // 10
# The application is loaded once, in the master, and each worker forked from it: a replaced worker
# serves within milliseconds.  Loaded in each worker instead, every replacement cost a second of one
# core's CPU (importing Django and the project) while its clients queued on the other worker, the
# tail of bench_board_served.  The price: HUP starts new workers with the code already loaded, so a
# new release needs the server restarted (TERM, then start), not reloaded.
preload_app = True


def pre_fork(server: object, worker: object) -> None:
    """No database connection crosses a fork: two processes on one socket would garble each other's
    queries.  Loading the application opens none; this keeps it so if some import ever does."""
    from django.db import connections  # noqa: PLC0415 - Django is loaded by now (preload_app)

    connections.close_all()

# The workers' heartbeat files: on tmpfs where there is one (an overlay file system can stall fsync).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# X-Forwarded-* headers are believed only from these addresses (the proxy in front, if any).
forwarded_allow_ips = os.environ.get("READERBOARD_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = "-"
errorlog = "-"
# No control socket (gunicornc): one path per user for every server on the host, so two would
# clash; signals do the same (HUP rereads this file and replaces the workers, TERM stops gracefully,
# TTIN/TTOU add or remove a worker).
control_socket_disable = True
