"""Peak memory of a real web process while it takes a 200 MB upload and serves a 200 MB download.

``python -m tests.benchmarks.bench_transfer [--mb 200] [--json OUT]``

Starts ``manage.py runserver --noreload`` (DEBUG off) in a subprocess on a throwaway SQLite
database and private storage, with its own ``redis-server`` as the broker (nothing consumes the
queued run), and samples that process's resident memory from ``/proc/<pid>/status``:

* **upload**: a ``--mb`` MB code bundle (``run.py`` plus incompressible bytes, stored) posted to the
  API ``/api/v1/challenges/<slug>/systems/`` with a token, streamed from disk by the client with a
  Content-Length (the server spools it to disk, hashes it, checks the archive, stores and queues it);
* **download**: a ``--mb`` MB Split I training file fetched from the Data page's file URL with a
  logged-in session (``/c/<slug>/data/train/<dataset>/``), and the same file through the API
  (``/api/v1/challenges/<slug>/data/train/<dataset>/``, token), read in 1 MiB chunks and checked
  against its sha256.

After a warm-up (the Data page, a login, a small upload: the first use of each code path is not
the transfer's), and before each transfer, the kernel's peak-RSS mark is reset (``echo 5 > /proc/<pid>/clear_refs``), so
the reported ``VmHWM`` is the peak of that transfer alone; a sampler thread also records the largest
``VmRSS`` it saw every 10 ms (a cross-check where clear_refs is not permitted).  The training file's
row is inserted directly (``challenge_load`` would validate 200 MB of JSON in the loading process, which
is not what is measured here).  Kept out of pytest: it is a script.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import django

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "demo" / "data" / "mrqa"
SLUG = "bench-transfer"
PASSWORD = "bench-transfer-pw-42"
CHUNK = 1 << 20


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the uploaded bundle and of the training file")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return parser.parse_args(argv)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(tmp: Path, broker_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings.dev",
        "READERBOARD_DEBUG": "0",
        "READERBOARD_VAR_DIR": str(tmp / "var"),
        "READERBOARD_DB_PATH": str(tmp / "db.sqlite3"),
        "READERBOARD_PRIVATE_ROOT": str(tmp / "private"),
        "READERBOARD_BROKER_URL": f"redis://127.0.0.1:{broker_port}/0",
        "READERBOARD_LOG_LEVEL": "WARNING",
        "TMPDIR": str(tmp / "tmp"),  # Django spools multipart uploads here
    })
    return env


def incompressible(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        block = os.urandom(CHUNK)
        written = 0
        while written < size:
            piece = block[: min(CHUNK, size - written)]
            # Vary each block cheaply so no layer can deduplicate it.
            fh.write(hashlib.sha256(written.to_bytes(8, "big")).digest() + piece[32:])
            written += len(piece)


def bench_challenge(tmp: Path, env: dict[str, str], *, slug: str, title: str, phase: str,
                    password: str) -> tuple[Any, str]:
    """Migrate, load a one-dataset challenge (the demo's SQuAD dev) whose dev phase has the
    ``phase`` settings, and add a user with a team and a token; returns the challenge and token."""
    os.environ.update(env)

    django.setup()
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.services import api_token_create, team_create  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.reload import challenge_load  # noqa: PLC0415 - after django.setup()

    call_command("migrate", verbosity=0)
    spec = tmp / "spec.yaml"
    spec.write_text("\n".join([
        f"slug: {slug}",
        f"title: {title}",
        "metric_suite: mrqa",
        "phases:",
        "  - {slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,",
        f"     closes_at: 2099-01-01T00:00:00Z, {phase}}}",
        "datasets:",
        f"  - {{slug: squad, name: SQuAD, split: I, files: {{dev: {DEMO / 'SQuAD.dev.jsonl.gz'}}}}}",
        "",
    ]))
    challenge = challenge_load(spec_path=spec)
    user = User.objects.create_user("bench", password=password)
    team_create(challenge=challenge, owner=user, name="Bench")
    return challenge, api_token_create(user=user, name="bench")[1]


def setup(tmp: Path, env: dict[str, str], size: int) -> dict[str, Any]:
    """Load a small challenge with a user, and add a ``size``-byte training file."""
    challenge, token = bench_challenge(tmp, env, slug=SLUG, title="Transfer benchmark",
                                       phase="allowed_kinds: [predictions, code_bundle]", password=PASSWORD)
    from leaderboard.challenges.models import Dataset, DatasetFile  # noqa: PLC0415 - after django.setup()

    # The training file: written straight into private storage, streamed and hashed.
    stored = Path(env["READERBOARD_PRIVATE_ROOT"]) / "gold" / "bench" / f"{SLUG}-squad-train.jsonl.gz"
    stored.parent.mkdir(parents=True, exist_ok=True)
    incompressible(stored, size)
    digest = hashlib.sha256()
    with open(stored, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    DatasetFile.objects.create(
        dataset=Dataset.objects.get(challenge=challenge, slug="squad"), portion="train",
        gold=str(stored.relative_to(env["READERBOARD_PRIVATE_ROOT"])), sha256=digest.hexdigest(),
        size_bytes=size, n_questions=1, qids=["q"],
    )
    bundle = tmp / "bundle.zip"
    blob = tmp / "blob.bin"
    incompressible(blob, size)
    with zipfile.ZipFile(bundle, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("run.py", "print('hello')\n")
        z.write(blob, "weights.bin")
    blob.unlink()
    small = tmp / "small.zip"  # for the warm-up upload: the code path loaded before measuring
    with zipfile.ZipFile(small, "w") as z:
        z.writestr("run.py", "print('hello')\n")
    from django.db import connections  # noqa: PLC0415 - after django.setup()

    connections.close_all()  # the web process is the one to measure; this one only prepared the data
    return {"token": token, "train_sha256": digest.hexdigest(), "bundle": bundle, "small": small}


# --------------------------------------------------------------------------- the web process


def status_kb(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) if match else 0


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Sampler:
    """The largest VmRSS of ``pid`` seen while running, every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 0.01) -> None:
        self.pid, self.every, self.peak_kb = pid, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, status_kb(self.pid, "VmRSS"))
            time.sleep(self.every)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


# --------------------------------------------------------------------------- HTTP, streamed both ways


def multipart(fields: dict[str, str], file_field: str, path: Path) -> tuple[str, int, Iterator[bytes]]:
    """A multipart body streamed from disk: (content type, length, chunks)."""
    boundary = "readerboard-bench-" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    head = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ) + (f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{path.name}"\r\n'
         "Content-Type: application/zip\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        yield head
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
        yield tail

    return f"multipart/form-data; boundary={boundary}", len(head) + path.stat().st_size + len(tail), chunks()


def login(port: int) -> str:
    """A session cookie from the login form (CSRF cookie first, as a browser does)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/accounts/login/")
    response = conn.getresponse()
    page = response.read().decode()
    cookies = SimpleCookie(response.getheader("Set-Cookie"))
    csrf = cookies["csrftoken"].value
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    body = f"csrfmiddlewaretoken={token}&username=bench&password={PASSWORD}"
    conn.request("POST", "/accounts/login/", body=body, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}",
        "Referer": f"http://127.0.0.1:{port}/accounts/login/",
    })
    response = conn.getresponse()
    response.read()
    assert response.status == 302, response.status
    session = SimpleCookie(response.getheader("Set-Cookie"))["sessionid"].value
    conn.close()
    return f"sessionid={session}"


@dataclass
class Figure:
    what: str
    url: str
    status: int
    seconds: float
    mb_per_s: float
    peak_vmhwm_mb: float | None  # kernel's peak RSS during this transfer alone (after clear_refs)
    peak_sampled_rss_mb: float
    rss_before_mb: float
    rss_after_mb: float


def measure(pid: int, what: str, url: str, size: int, run: Any) -> Figure:
    time.sleep(0.5)  # let the previous request's memory settle
    before = status_kb(pid, "VmRSS")
    resettable = reset_peak(pid)
    started = time.monotonic()
    with Sampler(pid) as sampler:
        status = run()
    seconds = time.monotonic() - started
    hwm = status_kb(pid, "VmHWM") if resettable else None
    return Figure(
        what=what, url=url, status=status, seconds=round(seconds, 2), mb_per_s=round(size / 2**20 / seconds, 1),
        peak_vmhwm_mb=round(hwm / 1024, 1) if hwm is not None else None,
        peak_sampled_rss_mb=round(sampler.peak_kb / 1024, 1), rss_before_mb=round(before / 1024, 1),
        rss_after_mb=round(status_kb(pid, "VmRSS") / 1024, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    size = args.mb * 2**20
    tmp = Path(tempfile.mkdtemp(prefix="readerboard-bench-transfer-"))
    (tmp / "tmp").mkdir()
    broker_port, web_port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(broker_port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))
        env = environment(tmp, broker_port)
        print(f"setting up in {tmp} ({args.mb} MB files)...", flush=True)
        prepared = setup(tmp, env, size)
        web = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{web_port}", "--noreload"],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp / "web.log", "wb"),
        )
        procs.append(web)
        wait_listening(web_port, web)
        conn = http.client.HTTPConnection("127.0.0.1", web_port, timeout=600)
        token = prepared["token"]
        upload_url = f"/api/v1/challenges/{SLUG}/systems/"

        def upload(path: Path) -> int:
            ctype, length, chunks = multipart({"phase": "dev", "kind": "code_bundle"}, "file", path)
            conn.request("POST", upload_url, body=chunks, headers={
                "Authorization": f"Token {token}", "Content-Type": ctype, "Content-Length": str(length),
            })
            response = conn.getresponse()
            payload = response.read()
            assert response.status == 201, (response.status, payload[:500])
            return response.status

        # Warm up: imports, the Data page (which builds the starting kit), a login, a small upload,
        # so that what is measured below is the transfers, not the first use of their code.
        conn.request("GET", f"/c/{SLUG}/data/")
        warm = conn.getresponse()
        warm.read()
        assert warm.status == 200, warm.status
        cookie = login(web_port)
        upload(prepared["small"])
        time.sleep(0.5)
        idle = status_kb(web.pid, "VmRSS")
        figures = [measure(web.pid, f"upload {args.mb} MB code bundle (API, token)", upload_url, size,
                           lambda: upload(prepared["bundle"]))]

        def download(url: str, headers: dict[str, str]) -> int:
            conn.request("GET", url, headers=headers)
            response = conn.getresponse()
            digest, received = hashlib.sha256(), 0
            while chunk := response.read(CHUNK):
                digest.update(chunk)
                received += len(chunk)
            assert response.status == 200, response.status
            assert received == size and digest.hexdigest() == prepared["train_sha256"], (received, size)
            return response.status

        page_url = f"/c/{SLUG}/data/train/squad/"
        figures.append(measure(web.pid, f"download {args.mb} MB training file (Data page, session)", page_url, size,
                               lambda: download(page_url, {"Cookie": cookie})))
        api_url = f"/api/v1/challenges/{SLUG}/data/train/squad/"
        figures.append(measure(web.pid, f"download {args.mb} MB training file (API, token)", api_url, size,
                               lambda: download(api_url, {"Authorization": f"Token {token}"})))
        conn.close()
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nweb process (runserver --noreload, DEBUG off) after warm-up: VmRSS {idle / 1024:.1f} MB\n")
    print("| transfer | status | time | throughput | peak RSS (VmHWM) | peak RSS (sampled) | RSS before / after |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for f in figures:
        hwm = f"{f.peak_vmhwm_mb} MB" if f.peak_vmhwm_mb is not None else "n/a"
        print(f"| {f.what} | {f.status} | {f.seconds} s | {f.mb_per_s} MB/s | {hwm} | {f.peak_sampled_rss_mb} MB "
              f"| {f.rss_before_mb} / {f.rss_after_mb} MB |")
    if args.json:
        args.json.write_text(json.dumps({
            "mb": args.mb, "idle_rss_mb": round(idle / 1024, 1), "figures": [asdict(f) for f in figures],
            "load_average": os.getloadavg(),
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
