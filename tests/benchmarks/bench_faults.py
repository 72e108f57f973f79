"""How long each fault takes to recover from, with the platform's default leases, as it runs across hosts.

``python -m tests.benchmarks.bench_faults [--postgres] [--netns] [--only NAME ...] [--json OUT]``

Real processes, as ``bench_deadline_rush``: gunicorn, Redis, the prediction-file worker, the control
worker (finishing runs, the reaper, beat) and two compute workers reaching the platform through its
internal API only (``--netns``: each on a host of its own).  Leases, heartbeats and the reaper keep
their defaults (leaderboard/settings/base.py), so the figures are what an operator gets.  Each fault,
one after the other on the same platform:

* ``compute-kill``: kill -9 of the compute worker running a system (it would run 20 s): seconds from
  the kill to the run claimed again elsewhere, and to its score; whether it was scored exactly once.
* ``never-ends``: a system that never stops (limit 60 s), its worker killed -9 at once: how long its
  container lived (the engine's start and end), with the other worker sweeping dead owners' runs.
* ``never-ends-alone``: the same with every compute worker of the engine killed: only the
  container's own deadline helper is left to end it.
* ``broker-restart``: Redis stopped for 5 s and started again empty, a prediction file sent while it
  was down: seconds from the restart to its score.
* ``control-down``: the control worker stopped while a run ends, started 10 s later: seconds from its
  start to the run's score.
* ``control-kill-receiving``: the control worker frozen (SIGSTOP) as a run ends, so it takes the
  result's message and never acknowledges it, then killed -9 and replaced: seconds from the kill to
  the score (the kept result scored again, not the system run again: attempts stay 1).

Needs root, the engine and the base image (deploy/setup.sh).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import random
import shutil
import signal
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import docker
import requests

from tests.benchmarks.bench_deadline_rush import platform_settings, predictions
from workers import runner

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "demo" / "data" / "mrqa"
SCENARIOS = ("compute-kill", "never-ends", "never-ends-alone", "broker-restart", "control-down",
             "control-kill-receiving")

SLEEPER = """import json, os, sys, time
time.sleep(float(os.environ.get("SLEEP_S", "{sleep}")))
manifest = json.load(open(os.path.join(os.environ["READERBOARD_INPUT"], "manifest.json")))
for ds in manifest["datasets"]:
    answers = {{}}
    import gzip
    with gzip.open(os.path.join(os.environ["READERBOARD_INPUT"], ds["input"]), "rt") as fh:
        for line in fh:
            for qa in json.loads(line).get("qas", []):
                answers[qa["qid"]] = "x"
    json.dump(answers, open(os.path.join(os.environ["READERBOARD_OUTPUT"], ds["output"]), "w"))
"""


def sleeper_bundle(sleep_s: float) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run.py", SLEEPER.format(sleep=sleep_s))
    return buffer.getvalue()


def spec() -> str:
    return "\n".join([
        "slug: faults", "title: Faults", "metric_suite: mrqa",
        "systems: {limits: {time_limit_s: 60, memory_mb: 256}, max_running_per_team: 4}",
        "phases:",
        "  - {slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,",
        "     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions, code_bundle], quota: {per_day: 100}}",
        "datasets:",
        f"  - {{slug: squad, name: SQuAD, split: II, files: {{test: {DEMO / 'SQuAD.test.jsonl.gz'}}}}}",
        f"  - {{slug: xquad-en, name: XQuAD-en, split: II, files: {{test: {DEMO / 'XQuAD-en.test.jsonl.gz'}}}}}",
    ]) + "\n"


def wait(predicate: Callable[[], object], timeout: float, what: str) -> float:
    """Seconds until ``predicate()`` holds (polled every 0.2 s); raises after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.2)
    raise TimeoutError(f"{what}: not after {timeout:.0f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--netns", action="store_true")
    parser.add_argument("--only", nargs="*", choices=SCENARIOS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    # Stopped from outside (kill, ^C), it still stops what it started: its processes, namespaces, mounts.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = platform_settings("bench-faults-", postgres=args.postgres, log_level="INFO")
    from django.conf import settings  # noqa: PLC0415 - after django.setup()
    from django.contrib.auth.models import User  # noqa: PLC0415 - after django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after django.setup()

    from leaderboard.accounts.services import api_token_create, team_create  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.models import Score, Status, Submission  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.reload import challenge_load  # noqa: PLC0415 - after django.setup()
    from leaderboard.submissions.worker_api import worker_token_create  # noqa: PLC0415 - after django.setup()
    from tests.builders.netns import net_host_make, net_host_remove  # noqa: PLC0415 - beside the processes
    from tests.builders.processes import (  # noqa: PLC0415 - after django.setup()
        ComputeWorker,
        RedisServer,
        WebServer,
        Worker,
        shared_mount,
        shared_mount_release,
    )

    call_command("migrate", verbosity=0)
    spec_path = tmp / "spec.yaml"
    spec_path.write_text(spec())
    challenge = challenge_load(spec_path=spec_path)
    user = User.objects.create_user("faults", password="faults-pw")
    team_create(challenge=challenge, owner=user, name="Faults")
    token = api_token_create(user=user, name="faults")[1]

    redis = RedisServer(tmp)
    redis.start()
    hosts = [net_host_make(n) for n in (1, 2)] if args.netns else []
    web = WebServer(redis.url, tmp / "web.log", also_on=[h.host_ip for h in hosts])
    compute_root = Path(tempfile.mkdtemp(prefix="bench-faults-compute-"))
    shared_mount(compute_root)
    computes = [ComputeWorker(web.url_on(hosts[n - 1].host_ip) if hosts else web.url,
                              worker_token_create(name=f"faults-compute-{n}", queues=["cpu"]),
                              compute_root / f"w{n}", tmp / f"faults-compute-{n}.log", name=f"faults-compute-{n}",
                              net_host=hosts[n - 1] if hosts else None) for n in (1, 2)]
    files = Worker(redis.url, tmp / "files.log", queues="celery")
    control = Worker(redis.url, tmp / "control.log", queues="control", beat=True)
    processes: list[Any] = [web, files, control, *computes]
    for process in processes:
        process.start()
    engine = docker.from_env()
    url = f"{web.url}/api/v1/challenges/{challenge.slug}"
    headers = {"Authorization": f"Token {token}"}
    report: dict[str, Any] = {"database": "postgres" if args.postgres else "sqlite",
                              "compute_hosts": "network namespaces" if hosts else "this machine's network"}

    def submit_system(sleep_s: float) -> int:
        response = requests.post(f"{url}/systems/", headers=headers, data={"phase": "test", "kind": "code_bundle"},
                                 files={"file": ("system.zip", sleeper_bundle(sleep_s))}, timeout=60)
        response.raise_for_status()
        return int(response.json()["id"])

    def row(pk: int) -> Submission:
        return Submission.objects.get(pk=pk)

    def running_on(pk: int) -> ComputeWorker:
        wait(lambda: row(pk).status == Status.RUNNING and containers(pk), 120, "the run to start")
        owner = row(pk).worker
        return next(w for w in computes if owner.startswith(f"{w.name}/"))

    def containers(pk: int) -> list[Any]:
        found: list[Any] = engine.containers.list(all=True, filters={"label": f"readerboard.submission={pk}"})
        return found

    def restart(worker: ComputeWorker) -> None:
        worker.start()

    def life_of(container: Any) -> dict[str, Any]:
        """Once it stops: how long it lived by the engine's own clock (the limit counts from its start)."""
        wait(lambda: container.reload() or container.status != "running", 900, "the never-ending container to stop")
        state = container.attrs["State"]
        lived = (dt.datetime.fromisoformat(state["FinishedAt"][:26].rstrip("Z"))
                 - dt.datetime.fromisoformat(state["StartedAt"][:26].rstrip("Z"))).total_seconds()
        return {"limit_s": 60, "container_lived_s": round(lived, 1), "past_limit_s": round(lived - 60, 1),
                "exit_code": state.get("ExitCode")}

    def scored_once(pk: int) -> bool:
        return Score.objects.filter(submission_id=pk, dataset__isnull=True, metric="macro_f1").count() == 1

    try:
        wanted = args.only or list(SCENARIOS)
        if "compute-kill" in wanted:
            pk = submit_system(20)
            victim = running_on(pk)
            time.sleep(3)
            victim.kill()
            killed = time.monotonic()
            wait(lambda: row(pk).attempts == 2 and row(pk).status == Status.RUNNING, 600, "attempt 2")
            reclaimed = time.monotonic() - killed
            wait(lambda: row(pk).is_final, 600, "the score")
            report["compute-kill"] = {"kill_to_claimed_again_s": round(reclaimed, 1),
                                      "kill_to_score_s": round(time.monotonic() - killed, 1),
                                      "status": row(pk).status, "attempts": row(pk).attempts,
                                      "scored_once": scored_once(pk)}
            restart(victim)
            print(json.dumps({"compute-kill": report["compute-kill"]}), flush=True)
        if "never-ends" in wanted:
            pk = submit_system(10**6)
            victim = running_on(pk)
            orphan = containers(pk)[0]
            victim.kill()
            report["never-ends"] = life_of(orphan)
            wait(lambda: row(pk).is_final, 900, "the never-ending run to end")
            report["never-ends"].update(status=row(pk).status, verdict=row(pk).verdict, attempts=row(pk).attempts)
            restart(victim)
            print(json.dumps({"never-ends": report["never-ends"]}), flush=True)
        if "never-ends-alone" in wanted:
            # No worker left on the engine at all: only the container's own deadline helper ends it.
            pk = submit_system(10**6)
            running_on(pk)
            orphan = containers(pk)[0]
            for worker in computes:
                worker.kill()
            report["never-ends-alone"] = life_of(orphan)
            for worker in computes:
                restart(worker)
            wait(lambda: row(pk).is_final, 900, "the never-ending run to end")
            report["never-ends-alone"].update(status=row(pk).status, verdict=row(pk).verdict)
            print(json.dumps({"never-ends-alone": report["never-ends-alone"]}), flush=True)
        if "broker-restart" in wanted:
            redis.stop()
            response = requests.post(f"{url}/submissions/", headers=headers, data={"phase": "test"},
                                     files={"file": ("preds.json", predictions(random.Random(1)))},
                                     timeout=60)
            response.raise_for_status()
            pk = int(response.json()["id"])
            time.sleep(5)
            redis.start()
            restarted = []

            def supervised() -> bool:
                # As systemd (Restart=always), compose (restart: unless-stopped) or Kubernetes would: a
                # Celery worker that held a message when the broker vanished may exit (kombu's
                # "Unrecoverable error"), and is started again.
                for worker in (files, control):
                    if worker.proc is not None and worker.proc.poll() is not None:
                        restarted.append(worker.log.stem)
                        worker.proc = None
                        worker.start()
                return row(pk).is_final

            back = wait(supervised, 600, "the prediction file's score")
            report["broker-restart"] = {"restart_to_score_s": round(back, 1), "status": row(pk).status,
                                        "scored_once": scored_once(pk), "workers_restarted": restarted}
            print(json.dumps({"broker-restart": report["broker-restart"]}), flush=True)
        if "control-down" in wanted:
            pk = submit_system(5)
            running_on(pk)
            control.stop()
            wait(lambda: not containers(pk), 300, "the run to end")
            time.sleep(10)
            control.start()
            back = wait(lambda: row(pk).is_final, 600, "the score")
            report["control-down"] = {"start_to_score_s": round(back, 1), "status": row(pk).status,
                                      "attempts": row(pk).attempts, "scored_once": scored_once(pk)}
            print(json.dumps({"control-down": report["control-down"]}), flush=True)
        if "control-kill-receiving" in wanted:
            pk = submit_system(5)
            running_on(pk)
            assert control.proc is not None
            control.proc.send_signal(signal.SIGSTOP)  # it takes the next message and never finishes it
            wait(lambda: not containers(pk), 300, "the run to end")
            time.sleep(3)
            control.kill()
            control.start()
            back = wait(lambda: row(pk).is_final, 900, "the score")
            report["control-kill-receiving"] = {"kill_to_score_s": round(back, 1), "status": row(pk).status,
                                                "attempts": row(pk).attempts, "scored_once": scored_once(pk)}
            print(json.dumps({"control-kill-receiving": report["control-kill-receiving"]}), flush=True)
        print(json.dumps(report, indent=2))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return 0
    finally:
        for process in reversed(processes):
            process.stop()
        # This platform's runs only: another on the engine (the demo, a test run) is not ours.
        for container in engine.containers.list(all=True, filters=runner.instance_filter(
                settings.RUN_IMAGE_REPOSITORY, "readerboard.submission")):
            container.remove(force=True)
        shared_mount_release(compute_root)
        shutil.rmtree(compute_root, ignore_errors=True)
        for host in hosts:
            net_host_remove(host)
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
