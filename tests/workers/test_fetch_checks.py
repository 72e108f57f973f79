"""A compute worker keeps a downloaded file only if it is exactly what the ticket names (issue 10):
its size and its sha256, checked while it streams.  Served over real HTTP by a local server that
can tamper with what it sends."""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from leaderboard.sandbox.contract import TicketFile
from workers import runner
from workers.internal_api import HttpTransport

GOOD = b"the system's archive, as the platform stored it\n" * 1000


class Server(http.server.ThreadingHTTPServer):
    served: dict[str, bytes] = {}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        body = self.server.served[self.path.rsplit("/", 2)[-2]]  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.served = {
        "good": GOOD,
        "tampered": GOOD[:-2] + b"X\n",  # same size, other bytes
        "longer": GOOD + b"and more",  # past the size the ticket names
        "shorter": GOOD[:100],
    }
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


def item(name: str) -> TicketFile:
    return TicketFile(name=f"{name}.tar", url=f"files/{name}/", sha256=hashlib.sha256(GOOD).hexdigest(), size=len(GOOD))


@pytest.mark.parametrize("name", ["tampered", "longer", "shorter"])
def test_a_download_that_is_not_what_the_ticket_names_is_refused_and_removed(
    server: Server, tmp_path: Path, name: str,
) -> None:
    transport = HttpTransport(f"http://127.0.0.1:{server.server_address[1]}", "rbw_x", queue="cpu", instance="h:1")
    target = tmp_path / "image.tar"
    with pytest.raises(runner.PlatformError, match="did not match its size and sha256"):
        transport.fetch(None, item(name), target)  # type: ignore[arg-type]
    assert not target.exists()


def test_the_exact_file_is_kept(server: Server, tmp_path: Path) -> None:
    transport = HttpTransport(f"http://127.0.0.1:{server.server_address[1]}", "rbw_x", queue="cpu", instance="h:1")
    target = tmp_path / "image.tar"
    transport.fetch(None, item("good"), target)  # type: ignore[arg-type]
    assert target.read_bytes() == GOOD
