"""deploy/serve.sh for real: migrate, collectstatic and gunicorn serve the style sheet through
WhiteNoise and a page read from this test's database, on two free loopback ports at once
(READERBOARD_WEB_BIND takes several addresses), keep serving while workers are replaced, and stop
on SIGTERM.
The production settings themselves are in tests/leaderboard/test_production.py."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from tests.builders.cast import REPO, Cast
from tests.builders.databases import database_url
from tests.builders.production import SECRET, clean_env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.mark.django_db(transaction=True)  # gunicorn's processes read what this test committed
def test_serve_sh_runs_gunicorn_with_whitenoise_on_this_database(cast: Cast, tmp_path: Path) -> None:
    port, second_port = _free_port(), _free_port()
    env = clean_env(
        tmp_path,
        READERBOARD_SECRET_KEY=SECRET,
        READERBOARD_DATABASE_URL=database_url(settings.DATABASES["default"]),
        READERBOARD_PRIVATE_ROOT=str(settings.PRIVATE_STORAGE_ROOT),
        READERBOARD_STATIC_ROOT=str(tmp_path / "static"),
        READERBOARD_WEB_BIND=f"127.0.0.1:{port} 127.0.0.1:{second_port}",
        READERBOARD_EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend",
        READERBOARD_WEB_WORKERS="2",
        READERBOARD_WEB_THREADS="2",
        READERBOARD_WEB_MAX_REQUESTS="3",  # workers replaced during the test (no jitter below 10)
        PYTHON=sys.executable,
    )
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(["bash", str(REPO / "deploy" / "serve.sh")], cwd=tmp_path, env=env,
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, f"gunicorn did not listen: {log.read_text()}"
                time.sleep(0.2)
        base = f"http://127.0.0.1:{port}"

        # The challenge page comes from this test's database through gunicorn's workers.
        status, headers, page = _get(f"{base}/c/demo/")
        assert status == 200, page[:2000]
        html = page.decode()
        assert "Demo MRQA" in html
        assert headers["Server"].startswith("gunicorn")

        # The style sheet under its own name and under the hashed name the page links to (cached for
        # a year), compressed when the client takes gzip: WhiteNoise, not a view.
        status, headers, css = _get(f"{base}/static/readerboard/site.css")
        assert status == 200 and headers["Content-Type"].startswith("text/css")
        assert headers.get("Content-Encoding") == "gzip"
        hashed = html.split('href="/static/readerboard/site.', 1)[1].split('"', 1)[0]
        status, headers, hashed_css = _get(f"{base}/static/readerboard/site.{hashed}")
        assert status == 200 and hashed_css == css
        assert "max-age=315360000" in headers["Cache-Control"] and "immutable" in headers["Cache-Control"]

        # The second address serves the same site.
        status, _, second = _get(f"http://127.0.0.1:{second_port}/c/demo/")
        assert status == 200 and "Demo MRQA" in second.decode()

        # A missing static file is a 404, and private storage is out of reach from /static/.
        assert _get(f"{base}/static/readerboard/no-such.css")[0] == 404
        assert _get(f"{base}/static/../private/")[0] == 404
        assert _get(f"{base}/static/..%2f..%2fsettings.py")[0] == 404

        # Workers replaced after their 3 requests keep serving pages from the database: forked from
        # the master's loaded application (preload_app), with no connection of the master's.
        for _ in range(12):
            status, _, page = _get(f"{base}/c/demo/")
            assert status == 200 and "Demo MRQA" in page.decode()
    finally:
        server.send_signal(signal.SIGTERM)  # gunicorn's graceful stop: idle workers exit at once
        try:
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
    assert server.returncode == 0, log.read_text()
    served = log.read_text()
    assert "Autorestarting worker" in served and served.count("Booting worker") > 2, served[-3000:]
