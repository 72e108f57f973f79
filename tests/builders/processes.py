"""Real processes for tests and benchmarks: Redis, gunicorn, the control worker, compute workers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from django.conf import settings

from leaderboard.submissions.worker_api import worker_token_create
from tests.builders.databases import database_url
from tests.builders.netns import NetHost

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _need(binary: str) -> str:
    path = shutil.which(binary) or (f"/usr/bin/{binary}" if Path(f"/usr/bin/{binary}").exists() else None)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{binary} is not installed; deploy/setup.sh installs it")
        pytest.skip(f"{binary} is not installed (run deploy/setup.sh)")
    return path


class RedisServer:
    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = _need("redis-server")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


class Process:
    """A process a test started: stopped gracefully (SIGTERM, then SIGKILL after 15 s) or killed."""

    proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """kill -9: no clean-up of any kind, as when a machine loses power (for a compute worker, the
        shell exec'd into celery: one process)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


class Worker(Process):
    """``celery -A workers.celery_app worker`` (the control worker) against the test database
    (SQLite or Postgres: deploy/test.sh runs the suite on both) and private storage.

    ``queues`` picks what it consumes: "celery" (prediction files), "control" (the reaper,
    finishing runs); ``beat`` embeds the scheduler that sends the reaper.
    """

    def __init__(self, broker_url: str, log: Path, *, queues: str = "celery", beat: bool = False,
                 extra_env: dict[str, str] | None = None) -> None:
        self.env = test_process_env(broker_url, log, extra_env)
        self.log = log
        self.queues = queues
        self.beat = beat
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "--pool=solo",
                   "--concurrency=1", "--loglevel=INFO", "--without-gossip", "--without-mingle",
                   "--without-heartbeat", "-Q", self.queues]
        if self.beat:
            command.append("--beat")
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)



def test_process_env(broker_url: str, log: Path, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The trusted side's environment: the test database, private storage and broker."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings.dev",
        "READERBOARD_BROKER_URL": broker_url,
        "READERBOARD_DATABASE_URL": database_url(settings.DATABASES["default"]),
        "READERBOARD_PRIVATE_ROOT": str(settings.PRIVATE_STORAGE_ROOT),
        "READERBOARD_VAR_DIR": str(log.parent / "var"),
        "READERBOARD_RUN_IMAGE_REPOSITORY": settings.RUN_IMAGE_REPOSITORY,
        "READERBOARD_DEBUG": "0",
        # What the platform's processes mail (organizers' alerts) is kept in files a test can read.
        "READERBOARD_EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "READERBOARD_EMAIL_FILE_PATH": str(log.parent / "mail"),
        **(extra_env or {}),
    }


class WebServer(Process):
    """The web app under gunicorn (threaded workers, as deploy/serve.sh runs it), on the test database:
    what compute workers reach through the internal API."""

    def __init__(self, broker_url: str, log: Path, *, extra_env: dict[str, str] | None = None,
                 workers: int = 2, threads: int = 4, also_on: Sequence[str] = ()) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # ``also_on``: more addresses it listens on (the near end of each test host's link), each
        # an allowed host name too, as an operator names the address compute hosts reach.
        self.also_on = list(also_on)
        allowed = {"READERBOARD_ALLOWED_HOSTS": ",".join(["localhost", "127.0.0.1", *self.also_on])} if also_on else {}
        self.env = test_process_env(broker_url, log, {**allowed, **(extra_env or {})})
        self.log = log
        self.workers, self.threads = workers, threads
        self.proc: subprocess.Popen[bytes] | None = None

    def url_on(self, address: str) -> str:
        return f"http://{address}:{self.port}"

    def start(self) -> None:
        binds = [arg for address in ["127.0.0.1", *self.also_on] for arg in ("--bind", f"{address}:{self.port}")]
        command = [sys.executable, "-m", "gunicorn", "leaderboard.wsgi:application", *binds,
                   "--workers", str(self.workers), "--threads", str(self.threads),
                   "--timeout", "300", "--graceful-timeout", "5"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not listen:\n{self.log.read_text(errors='replace')[-3000:]}")



def hidden_paths() -> list[Path]:
    """What a compute worker must not see: the private storage (gold, uploads) and the databases."""
    private = Path(settings.PRIVATE_STORAGE_ROOT)
    candidates = [private.parent if private.parent.name.startswith("readerboard-test-") else private,
                  REPO / "var", Path("/var/lib/postgresql")]
    db_name = Path(str(settings.DATABASES["default"]["NAME"]))
    if db_name.is_absolute():
        candidates.append(db_name.parent)
    found: list[Path] = []
    for path in candidates:
        if path.exists() and not any(path == p or path.is_relative_to(p) for p in found):
            found.append(path)
    return found


def shared_mount(path: Path) -> None:
    """Make ``path`` a mount whose sub-mounts propagate both ways between namespaces: a compute worker
    in its own mount namespace mounts its run areas there, and the engine (in this one) must see them."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    subprocess.run(["mount", "--make-shared", str(path)], check=True)


def shared_mount_release(path: Path) -> None:
    subprocess.run(["umount", "-R", "-l", str(path)], capture_output=True, check=False)


class ComputeWorker(Process):
    """``python -m workers.compute`` as a compute host runs it: its environment holds its queues, the API
    URL and its token, and nothing else (no broker of the platform's (no database URL, no Django
    settings) -- the platform's internal API is its only network peer; it runs in a mount namespace of its own in which the private storage and the databases
    are empty folders (a tmpfs mounted over each), so it cannot read them even as root."""

    def __init__(self, api_url: str, token: str, work_dir: Path, log: Path, *,
                 queues: str = "cpu", name: str = "compute", hide: list[Path] | None = None,
                 extra_env: dict[str, str] | None = None, net_host: NetHost | None = None) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "HOME": str(work_dir),
            "LANG": "C.UTF-8",
            "READERBOARD_COMPUTE_QUEUES": queues,
            "READERBOARD_API_URL": api_url,
            "READERBOARD_WORKER_TOKEN": token,
            "READERBOARD_WORK_DIR": str(work_dir),
            "READERBOARD_RUN_IMAGE_REPOSITORY": settings.RUN_IMAGE_REPOSITORY,
            **{k: v for k, v in os.environ.items() if k in ("DOCKER_HOST", "CI")},
            **(extra_env or {}),
        }
        self.work_dir = work_dir
        self.log = log
        self.queues = queues
        self.name = name
        self.hide = hide if hide is not None else hidden_paths()
        # A host of its own on the network (tests.builders.netns): the API at its link's near end is
        # all it reaches.  None: this machine's network, loopback included.
        self.net_host = net_host
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        _need("unshare")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # In the new namespace: each hidden path becomes a private mount (so that what is mounted
        # over it stays in this namespace, even where the host's mounts are shared), then an empty
        # read-only tmpfs covers it.  The work folder stays shared with the host (shared_mount).
        script = "set -e\n" + "".join(
            f'mount --bind "{p}" "{p}"; mount --make-private "{p}"; '
            f'mount -t tmpfs -o size=4k,mode=0000,ro readerboard-hidden "{p}"\n'
            for p in self.hide
        ) + 'exec "$@"\n'
        command = ["unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c", script, "sh",
                   sys.executable, "-m", "workers.compute"]
        if self.net_host is not None:
            command = self.net_host.command(command)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)


def compute_workers(api_url: str, root: Path, logs: Path, *, count: int = 2,
                    prefix: str = "compute") -> list[ComputeWorker]:
    """``count`` compute workers (not started), each with a token of its own (made in the test's
    database), a work folder under ``root`` (made a shared mount: see ``shared_mount``) and a log."""
    shared_mount(root)
    # Each states its hardware, as an operator's host would (budget boards show it beside the figures).
    return [ComputeWorker(api_url, worker_token_create(name=f"{prefix}-{n}"), root / f"w{n}",
                          logs / f"{prefix}-{n}.log", name=f"{prefix}{n}",
                          extra_env={"READERBOARD_HARDWARE_CLASS": f"test host {n}"}) for n in range(1, count + 1)]
