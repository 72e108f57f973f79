"""The participants' client as a participant gets it: built and pip-installed into a fresh virtual environment
(``deploy/packages/client``, none of the platform's dependencies), its ``readerboard`` commands run as
processes against a real web server (gunicorn) and a real control worker that scores the upload.

Alice logs in with a named token, lists the challenge (her team's quota), downloads the kit and the dev
data (sha256 checked), submits a prediction file and follows it to its score, finds her row on the
board and the log's answer; a code bundle and a Docker image (``submit-image``, saved by a stand-in
``docker``) wait in the run queue with their positions.  A wrong token, a refused upload, a missing file
and a server that is down each end in one line and a non-zero exit status, with no traceback.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from leaderboard.accounts.services import api_token_create
from leaderboard.challenges.models import Phase
from tests.builders.cast import REPO, Cast, gold_predictions
from tests.builders.image_archives import Entry, image_archive
from tests.builders.processes import RedisServer, WebServer, Worker


def _install(venv: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # From the repository, as the README says; pip builds it with hatchling in an isolated environment.
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(REPO / "deploy" / "packages" / "client")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    installed = subprocess.run([str(venv / "bin" / "python"), "-c", "import django"], capture_output=True, timeout=60)
    assert installed.returncode != 0, "the client's environment has Django: it must install without the platform"
    return venv / "bin" / "readerboard"


@pytest.mark.django_db(transaction=True)  # the server's processes read what this test committed
def test_the_installed_client_takes_part_in_a_challenge(cast: Cast, real_broker: RedisServer, tmp_path: Path) -> None:
    readerboard = _install(tmp_path / "venv")
    _, key = api_token_create(user=cast.alice, name="laptop")  # as made on /accounts/tokens/
    # The dev phase runs systems too here, so that the two system uploads have a queue to wait in.
    Phase.objects.filter(pk=cast.dev.pk).update(allowed_kinds=["predictions", "code_bundle", "docker_image"])
    home, work, tools = tmp_path / "home", tmp_path / "work", tmp_path / "tools"
    for folder in (home, work, tools):
        folder.mkdir()
    # A stand-in for `docker save -o PATH IMAGE`: writes a real docker-save archive of a tiny image.
    archive = tmp_path / "image.tar"
    archive.write_bytes(image_archive([[Entry("app/run.py", b"print('hello')\n")]], cmd=["python3", "/app/run.py"]))
    docker = tools / "docker"
    docker.write_text(f'#!/bin/sh\n[ "$1" = save ] && [ "$2" = -o ] || exit 3\ncp "{archive}" "$3"\n')
    docker.chmod(0o755)
    env = {"PATH": f"{tools}:{readerboard.parent}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}

    def rb(*args: str, stdin: str | None = None, extra: dict[str, str] | None = None,
           ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(readerboard), *args], cwd=work, env={**env, **(extra or {})}, input=stdin,
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    web = WebServer(real_broker.url, tmp_path / "web.log")
    worker = Worker(real_broker.url, tmp_path / "worker.log")
    web.start()
    worker.start()
    try:
        assert "submit-image" in rb("--help").stdout
        # A wrong token is refused at login, in one line, and nothing is saved.
        wrong = rb("login", "--url", web.url, stdin="0123456789abcdef\n", ok=False)
        assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1, wrong.stderr
        assert "refused the API token (Invalid token" in wrong.stderr
        assert not (home / ".config" / "readerboard" / "config.json").exists()

        login = rb("login", "--url", web.url, stdin=key + "\n")
        assert f"Logged in to {web.url} with the token 'laptop'" in login.stdout
        config = home / ".config" / "readerboard" / "config.json"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert json.loads(config.read_text()) == {"url": web.url, "token": key, "token_name": "laptop"}

        listed = rb("challenges").stdout
        assert "demo: Demo MRQA  [mrqa; your team: Alpha]" in listed
        dev_line = next(line for line in listed.splitlines() if line.strip().startswith("dev "))
        assert "open" in dev_line and "2099-01-01 00:00" in dev_line and "5 of 5 today" in dev_line, listed
        assert "prediction files, code bundle, Docker image" in dev_line

        fetched = rb("download", "demo").stdout
        kit = work / "demo-starting-kit"
        assert (kit / "README.md").exists() and (kit / "system" / "run.py").exists()
        assert os.access(kit / "system" / "run.py", os.X_OK)
        assert (kit / "dev" / "demo-squad-dev.jsonl.gz").exists(), fetched
        assert fetched.count("sha256 checked") >= 3
        assert "already here" in rb("download", "demo").stdout  # a second download fetches nothing again

        preds = work / "preds.json"
        preds.write_text(json.dumps(gold_predictions()))
        submitted = rb("submit", "demo", "dev", str(preds), "--description", "gold answers").stdout
        assert "prediction files" in submitted and "accepted" in submitted, submitted
        pk = submitted.split("Submission ", 1)[1].split(" ", 1)[0]
        followed = rb("follow", pk, "--interval", "0.5", "--timeout", "60").stdout
        assert "finished" in followed and "ranking score: 100.00" in followed, followed
        assert "status: finished" in rb("status", pk).stdout
        assert "has no log: only a system's run writes one" in rb("log", pk).stdout

        board = rb("board", "demo", "dev").stdout.splitlines()
        row = next(line for line in board if "Alpha" in line)
        assert row.split()[0] == "1" and "100.00" in row, board
        assert "4 of 5 today" in rb("challenges", "demo").stdout

        # Systems: a code bundle, then an image saved by `docker save`; no compute worker runs here, so
        # both wait in the queue and say where.
        bundle = work / "system.zip"
        with zipfile.ZipFile(bundle, "w") as zipped:
            zipped.writestr("run.py", "print('hello')\n")
        queued = rb("submit", "demo", "dev", str(bundle)).stdout
        assert "code_bundle for demo/dev, queued, position 1 in the queue" in queued, queued
        imaged = rb("submit-image", "demo", "dev", "my-system:latest").stdout
        assert "Saving my-system:latest with `docker save`" in imaged
        assert "docker_image for demo/dev, queued, position 2 in the queue" in imaged, imaged
        assert "my-system-latest.tar" in imaged
        listing = rb("submissions", "demo").stdout
        assert listing.count("queued") == 2 and "finished" in listing

        # Refusals and failures, one line each, exit status 1.
        bad = work / "bad.json"
        bad.write_text("{oops")
        refused = rb("submit", "demo", "dev", str(bad), ok=False)
        assert refused.returncode == 1
        assert refused.stderr.startswith("readerboard: refused by the server (HTTP 400): bad.json: not valid JSON")
        assert refused.stderr.count("\n") == 1
        for args, extra, said in [
            (("status", pk), {"READERBOARD_TOKEN": "0123456789abcdef"}, "refused the API token (Invalid token"),
            (("submit", "demo", "dev", "missing.json"), {}, "no such file: missing.json"),
            (("submit", "demo", "test", str(bundle)), {}, "demo/test takes prediction files, not code bundle"),
            (("status", "999999"), {}, "no submission 999999 of your team's"),
            (("challenges",), {"READERBOARD_URL": "http://127.0.0.1:9"}, "cannot reach the server at"),
        ]:
            failed = rb(*args, extra=extra, ok=False)
            assert failed.returncode == 1, (args, failed.stdout)
            assert failed.stderr.startswith("readerboard: ") and failed.stderr.count("\n") == 1, failed.stderr
            assert said in failed.stderr, failed.stderr
    finally:
        worker.stop()
        web.stop()
