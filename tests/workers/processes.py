"""Real processes for tests and benchmarks: a Redis server and Celery workers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.databases import database_url

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


class Worker:
    """``celery -A workers.celery_app worker`` against the test database and private storage.

    ``queues`` picks what it consumes: "celery" (prediction files), "systems" (runs),
    "control" (the reaper); ``beat`` embeds the scheduler that sends the reaper.
    """

    def __init__(self, broker_url: str, log: Path, *, queues: str = "celery", beat: bool = False,
                 extra_env: dict[str, str] | None = None) -> None:
        from django.conf import settings

        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "leaderboard.settings.dev",
            "READERBOARD_BROKER_URL": broker_url,
            # The test database, SQLite or Postgres (deploy/test.sh runs the suite on both).
            "READERBOARD_DATABASE_URL": database_url(settings.DATABASES["default"]),
            "READERBOARD_PRIVATE_ROOT": str(settings.PRIVATE_STORAGE_ROOT),
            "READERBOARD_VAR_DIR": str(log.parent / "var"),
            "READERBOARD_RUN_IMAGE_REPOSITORY": settings.RUN_IMAGE_REPOSITORY,
            "READERBOARD_DEBUG": "0",
            **(extra_env or {}),
        }
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

    def kill(self) -> None:
        """kill -9: no clean-up of any kind, as when a machine loses power."""
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
