"""Edges (issue 22, section 4): a path that climbs out of /static/ is the site's 404, never a 500; the
compute workers' internal API is mounted only where ``INTERNAL_API`` is on, so a deployment's public
web process can leave /internal/ off its port while a second one serves it on a private address."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import Any
from urllib.parse import unquote

import pytest
from django.contrib.staticfiles.management.commands.runserver import Command as Runserver
from django.test import RequestFactory, override_settings

from leaderboard.settings import dev
from tests.builders.cast import REPO

TRAVERSALS = ["/static/..%2f..%2fsettings.py", "/static/..%2f..%2f..%2fetc%2fpasswd",
              "/static/%2e%2e/%2e%2e/manage.py", "/static/../private/"]


def _demo_handler() -> Any:
    """The WSGI handler runserver builds with the flags deploy/demo.sh passes it."""
    demo = (REPO / "deploy" / "demo.sh").read_text()
    [line] = [line for line in demo.splitlines() if "manage.py runserver" in line]
    flags = shlex.split(line)
    return Runserver().get_handler(use_static_handler="--nostatic" not in flags,
                                   insecure_serving="--insecure" in flags)


@pytest.mark.parametrize("path", TRAVERSALS)
def test_a_path_out_of_static_is_the_sites_404_as_the_demo_serves_it(db: None, path: str) -> None:
    # The demo's settings' middleware (WhiteNoise, as in production) behind the demo's runserver handler:
    # with --insecure, Django's static view raised SuspiciousFileOperation here (a 500).
    with override_settings(MIDDLEWARE=dev.MIDDLEWARE):
        handler = _demo_handler()
        environ = RequestFactory().get("/").environ
        environ["PATH_INFO"] = unquote(path)
        started: list[str] = []
        body = b"".join(handler(environ, lambda status, headers, exc_info=None: started.append(status)))
    assert started[0].startswith("404"), (started, body[:300])
    assert b"Traceback" not in body and b"SuspiciousFileOperation" not in body


def _resolves(path: str, internal_api: str) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings.test", "READERBOARD_INTERNAL_API": internal_api}
    code = ("import django; django.setup()\n"
            "from django.urls import Resolver404, resolve\n"
            f"try:\n    print(resolve({path!r}).url_name)\nexcept Resolver404:\n    print('404')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_the_internal_api_is_mounted_only_where_it_is_on() -> None:
    claim = "/internal/v1/runs/claim/"
    assert _resolves(claim, "1") == "internal-run-claim"
    assert _resolves(claim, "0") == "404"
    assert _resolves("/api/v1/challenges/", "0") == "api-challenges"  # the rest of the site stays
