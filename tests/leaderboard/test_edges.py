"""Edges (issue 22, section 4): a path that climbs out of /static/ is the site's 404, never a 500; the
compute workers' internal API and the site are mounted as ``READERBOARD_SERVE`` says, so a deployment's
public web process serves no /internal/ and its internal process, on a private address, nothing else."""

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


def _answers(serve: str, paths: list[str]) -> list[str]:
    """What a process with ``READERBOARD_SERVE=serve`` answers each path with: the view's URL name, or
    the status and start of its 404 page (rendered by the process's own handler, so a page that cannot
    render there would show up as a 500)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings.test", "READERBOARD_SERVE": serve}
    code = ("import sys, django; django.setup()\n"
            "from django.test import Client\n"
            "from django.urls import Resolver404, resolve\n"
            "for path in sys.argv[1:]:\n"
            "    try:\n        print(resolve(path).url_name)\n"
            "    except Resolver404:\n"
            "        response = Client(raise_request_exception=False).get(path)\n"
            "        print(response.status_code, response.content[:40])\n")
    lines = subprocess.run([sys.executable, "-c", code, *paths], cwd=REPO, env=env, capture_output=True, text=True,
                           check=True, timeout=120).stdout.strip().splitlines()
    return lines


def test_each_web_process_serves_only_its_side_and_both_answer_health() -> None:
    claim, site, api = "/internal/v1/runs/claim/", "/accounts/login/", "/api/v1/challenges/"
    public = _answers("public", [claim, site, api, "/healthz"])
    assert public[0].startswith("404 ") and public[1:] == ["login", "api-challenges", "health"], public
    internal = _answers("internal", [claim, site, api, "/admin/", "/", "/healthz"])
    assert internal[0] == "internal-run-claim" and internal[-1] == "health", internal
    # The site is not there at all, and its 404 is a plain one (the site's pages link to URLs it lacks).
    assert all(line == "404 b'Not found.\\n'" for line in internal[1:-1]), internal
    assert _answers("all", [claim, site]) == ["internal-run-claim", "login"]


def test_an_unknown_serve_value_is_refused_by_name() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings.test", "READERBOARD_SERVE": "everything"}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "READERBOARD_SERVE must be one of public, internal, all" in done.stderr
