"""Compute hosts on networks of their own: each compute worker in a network namespace whose only
peer is the web app's internal API (``platform_on_hosts``), with only its own settings.

Systems run to scores across the hosts; a host killed mid-run has its run finished exactly once by
the other; and a hostile host, with its token in hand, reaches neither the broker nor the database,
and gets nothing of a run that is not its own through the internal API.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import docker
import pytest
from django.conf import settings

from leaderboard.submissions.models import QuestionScores, Status, Submission
from tests.builders.netns import NetHost
from tests.builders.processes import ComputeWorker
from tests.builders.systems import SYSTEMS, Platform, our_containers, script_bundle, slow_bundle, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FORBIDDEN_ENV = ("READERBOARD_DATABASE_URL", "DJANGO_SETTINGS_MODULE", "READERBOARD_PRIVATE_ROOT",
                 "READERBOARD_SECRET_KEY", "READERBOARD_BROKER_URL", "READERBOARD_VAR_DIR")

# What a hostile host tries, run inside its namespace with its own token: each attempt prints one
# JSON line {"what": ..., "ok": reached-or-allowed, "detail": ...}.
PROBE = textwrap.dedent("""
    import json, socket, sys, urllib.request, urllib.error
    api, token, targets, other = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    wanted = set(json.loads(sys.argv[5]))
    def say(what, ok, detail=""):
        print(json.dumps({"what": what, "ok": ok, "detail": str(detail)[:200]}), flush=True)
    for name, host, port in targets:
        try:
            socket.create_connection((host, port), timeout=2).close()
            say(name, True)
        except OSError as exc:
            say(name, False, exc)
    def call(what, method, path, body=None):
        if what not in wanted:
            return
        request = urllib.request.Request(api + path, method=method, data=None if body is None else
                                         json.dumps(body).encode(), headers={
            "Authorization": "Bearer " + token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                say(what, True, response.status)
        except urllib.error.HTTPError as exc:
            say(what, False, exc.code)
        except OSError as exc:
            say(what, False, exc)
    call("claim another queue", "POST", "/internal/v1/runs/claim/", {"queue": "gpu", "instance": "x:1"})
    sid, attempt = other
    call("another host's input", "GET", f"/internal/v1/runs/{sid}/{attempt}/inputs/0/")
    call("another host's system", "GET", f"/internal/v1/runs/{sid}/{attempt}/system/")
    call("another host's heartbeat", "POST", f"/internal/v1/runs/{sid}/{attempt}/heartbeat/", {})
    call("another host's failure", "POST", f"/internal/v1/runs/{sid}/{attempt}/failure/",
         {"participant": True, "reason": "forged", "detail": ""})
""")


CALLS = ("claim another queue", "another host's input", "another host's system", "another host's heartbeat",
         "another host's failure")


def probe(host: NetHost | None, api: str, token: str, targets: list[tuple[str, str, int]],
          other: tuple[int, int], calls: tuple[str, ...] = CALLS) -> dict[str, dict[str, Any]]:
    command = [sys.executable, "-c", PROBE, api, token, json.dumps(targets), json.dumps(list(other)),
               json.dumps(list(calls))]
    if host is not None:
        command = host.command(command)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return {line["what"]: line for line in map(json.loads, done.stdout.splitlines())}


def token_of(worker: ComputeWorker) -> str:
    return worker.env["READERBOARD_WORKER_TOKEN"]


def database_port() -> int:
    return int(settings.DATABASES["default"].get("PORT") or 5432)


def assert_scored_once(submission: Submission, datasets: int) -> None:
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}"
    assert QuestionScores.objects.filter(submission=submission).count() == datasets
    assert submission.scores.filter(dataset__isnull=True, metric="macro_f1").count() == 1


def test_hosts_of_their_own_run_systems_to_scores_and_a_killed_host_is_finished_elsewhere_once(
    platform_on_hosts: Platform, engine: docker.DockerClient
) -> None:
    platform = platform_on_hosts
    for worker in platform.compute:
        names = {e.split(b"=", 1)[0].decode()
                 for e in Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0") if e}
        assert not names & set(FORBIDDEN_ENV), names
    slow = platform.submit(slow_bundle())
    quick = platform.submit(script_bundle(SYSTEMS / "trivial" / "run.py"), who="charlie")
    wait_for(lambda: Submission.objects.get(pk=slow).status == Status.RUNNING
             and list(our_containers(engine, f"readerboard.submission={slow}")), 60, "the slow run to start", platform)
    owner = Submission.objects.get(pk=slow).worker  # "<token name>/<host:pid>"
    victim = next(w for w in platform.compute if owner.startswith(f"{w.name}/"))
    survivor = next(w for w in platform.compute if w is not victim)
    victim.kill()
    submission = platform.wait_final(slow, timeout=180)
    assert_scored_once(submission, datasets=2)
    assert submission.attempts == 2
    assert submission.worker.startswith(f"{survivor.name}/"), submission.worker
    assert_scored_once(platform.wait_final(quick, timeout=120), datasets=2)
    wait_for(lambda: not list(our_containers(engine, f"readerboard.submission={slow}")), 60,
             "the dead host's container to go", platform)


def test_a_hostile_host_reaches_neither_broker_nor_database_nor_another_hosts_run(
    platform_on_hosts: Platform, engine: docker.DockerClient
) -> None:
    platform = platform_on_hosts
    hostile, other = platform.compute
    # The other host runs a long system, so that there is a run of someone else's to reach for.
    pk = platform.submit(slow_bundle(sleep_s=15))  # the test limit is 20 s
    wait_for(lambda: Submission.objects.get(pk=pk).status == Status.RUNNING, 60, "the run to start", platform)
    running = Submission.objects.get(pk=pk)
    if running.worker.startswith(f"{hostile.name}/"):
        hostile, other = other, hostile
    assert hostile.net_host is not None and other.net_host is not None and platform.web is not None
    redis_port = int(platform.redis.url.rsplit(":", 1)[1].split("/")[0])
    near = hostile.net_host.host_ip
    targets = [("broker on the link", near, redis_port), ("broker on loopback", "127.0.0.1", redis_port),
               ("database on the link", near, database_port()),
               # The web app listens there too, for the other host: no route leads beyond one's own link.
               ("the web app on the other host's link", other.net_host.host_ip, platform.web.port)]
    api = platform.web.url_on(near)
    seen = probe(hostile.net_host, api, token_of(hostile), targets, (pk, running.attempts))
    for name, *_ in targets:
        assert seen[name]["ok"] is False, seen[name]
    assert seen["claim another queue"]["detail"] == "403", seen
    for what in ("another host's input", "another host's system", "another host's heartbeat",
                 "another host's failure"):
        assert seen[what]["ok"] is False and seen[what]["detail"] == "404", seen[what]
    # The forged failure changed nothing: the run goes on and is scored.
    assert_scored_once(platform.wait_final(pk, timeout=180), datasets=2)


def test_the_hostile_hosts_probe_can_fail(platform_on_hosts: Platform) -> None:
    """The probe above reports reach and access truly: from this machine's own network the broker
    answers, and the host that owns a run gets its files at the very addresses refused to the other."""
    platform = platform_on_hosts
    assert platform.web is not None
    redis_port = int(platform.redis.url.rsplit(":", 1)[1].split("/")[0])
    pk = platform.submit(slow_bundle(sleep_s=15))
    wait_for(lambda: Submission.objects.get(pk=pk).status == Status.RUNNING, 60, "the run to start", platform)
    running = Submission.objects.get(pk=pk)
    owner = next(w for w in platform.compute if running.worker.startswith(f"{w.name}/"))
    assert owner.net_host is not None
    here = probe(None, platform.web.url, token_of(owner), [("broker on loopback", "127.0.0.1", redis_port)],
                 (pk, running.attempts), calls=())
    assert here["broker on loopback"]["ok"] is True, here
    own = probe(owner.net_host, platform.web.url_on(owner.net_host.host_ip), token_of(owner), [],
                (pk, running.attempts), calls=("another host's input", "another host's system"))
    assert own["another host's input"]["ok"] is True and own["another host's system"]["ok"] is True, own
    assert_scored_once(platform.wait_final(pk, timeout=180), datasets=2)
