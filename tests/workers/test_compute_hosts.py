"""Compute workers on other hosts: what they hold, what the internal API gives them, queues and fairness.

These call the internal API with Django's test client: the same views a compute worker reaches over
HTTP.  The workers themselves, on the ``platform`` fixture, are in tests/sandbox/test_compute_hosts_platform.py.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django import db
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from leaderboard.challenges.models import DatasetFile
from leaderboard.console.selectors import queue_report
from leaderboard.core.enqueue import FINISH_RUN
from leaderboard.sandbox.contract import Limits, RunTicket, outcome_as_json
from leaderboard.submissions import evaluation
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.models import Status, Submission, Verdict
from leaderboard.submissions.selectors import run_queue_order, submission_queue_position, submission_run_plan
from leaderboard.submissions.worker_api import (
    _results_dir,
    run_results_waiting,
    run_ticket_build,
    submission_run_claim_next,
    worker_token_create,
)
from tests.builders.cast import Cast
from tests.builders.responses import streamed
from tests.builders.runs import bundle, gold_outputs, outcome
from tests.builders.systems import system_phases
from workers import control_runs, runner, tasks

# --------------------------------------------------------------------------- real processes


# --------------------------------------------------------------------------- the internal API


def queued_system(cast: Cast, team: str = "alpha") -> Submission:
    owner = {"alpha": cast.alice, "charlies": cast.charlie}[team]
    return submission_create_system(team=getattr(cast, team), phase=cast.test, user=owner, upload=bundle(),
                                    kind="code_bundle")


def api(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def claim(client: Client, queue: str = "cpu") -> Any:
    response = client.post("/internal/v1/runs/claim/", {"queue": queue, "instance": "host:1"},
                           content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["ticket"]


@pytest.mark.django_db
def test_the_internal_api_wants_a_worker_token(cast: Cast) -> None:
    system_phases(cast)
    queued_system(cast)
    for client in (Client(), api("rbw_not-a-token"), Client(HTTP_AUTHORIZATION="Token x")):
        response = client.post("/internal/v1/runs/claim/", {"queue": "cpu", "instance": "h:1"},
                               content_type="application/json")
        assert response.status_code == 401
    assert Submission.objects.get().status == Status.QUEUED


@pytest.mark.django_db
def test_a_token_scoped_to_an_organizers_queue_cannot_claim_anothers_runs(cast: Cast) -> None:
    """A host an organizer attaches for its own queue holds a token for that queue only: a claim on
    the platform's cpu queue (another challenge's systems and hidden inputs) is refused."""
    system_phases(cast)
    queued_system(cast)  # on the cpu queue
    out = io.StringIO()
    call_command("worker_token_create", "acme-host", "--queue", "acme", stdout=out)
    scoped = api(out.getvalue().strip())
    refused = scoped.post("/internal/v1/runs/claim/", {"queue": "cpu", "instance": "h:1"},
                          content_type="application/json")
    assert refused.status_code == 403 and "acme only" in refused.json()["detail"]
    assert Submission.objects.get().status == Status.QUEUED
    own = scoped.post("/internal/v1/runs/claim/", {"queue": "acme", "instance": "h:1"},
                      content_type="application/json")
    assert own.status_code == 200 and own.json() == {"ticket": None, "retry_after": 2.0}  # nothing of its queue waits
    # The platform's own workers (no queue named) still claim from any queue.
    assert claim(api(worker_token_create(name="host-a")))["submission_id"] == Submission.objects.get().pk


@pytest.mark.django_db
def test_a_ticket_carries_what_the_run_needs_and_nothing_of_the_sealed_dataset(cast: Cast) -> None:
    system_phases(cast)
    submission = queued_system(cast)
    token = worker_token_create(name="host-a")
    ticket = claim(api(token))
    assert ticket["submission_id"] == submission.pk and ticket["attempt"] == 1
    text = json.dumps(ticket)
    # The test portion has CoQA, sealed as Hidden-07: the worker reads the alias, never its name,
    # slug, re-keying secret or where anything is stored.
    assert "Hidden-07" in text and "coqa" not in text.lower()
    assert cast.challenge.secret not in text and str(settings.PRIVATE_STORAGE_ROOT) not in text
    assert "gold" not in text
    submission.refresh_from_db()
    assert submission.status == Status.RUNNING and submission.worker == "host-a/host:1"

    sealed_source = DatasetFile.objects.get(dataset__slug="coqa", portion="test").inputs.path
    real_qids = [json.loads(line)["qas"][0]["qid"] for line in gzip.open(sealed_source, "rt")
                 if '"qas"' in line][:20]
    client = api(token)
    for entry in ticket["inputs"]:
        response = client.get(f"/internal/v1/{entry['url']}")
        assert response.status_code == 200
        body = streamed(response)
        assert (len(body), hashlib.sha256(body).hexdigest()) == (entry["size"], entry["sha256"])
        if "hidden-07" in entry["name"]:
            plain = gzip.decompress(body).decode()
            assert "Hidden-07" in plain and not any(qid in plain for qid in real_qids)
    system = client.get(f"/internal/v1/{ticket['system']['url']}")
    assert hashlib.sha256(streamed(system)).hexdigest() == ticket["system"]["sha256"]


@pytest.mark.django_db
def test_a_run_is_its_claimers_alone_and_only_while_it_is_the_current_attempt(cast: Cast) -> None:
    system_phases(cast)
    queued_system(cast)
    mine, other = worker_token_create(name="host-a"), worker_token_create(name="host-b")
    ticket = claim(api(mine))
    base = f"/internal/v1/runs/{ticket['submission_id']}/{ticket['attempt']}"
    for path in (f"{ticket['inputs'][0]['url']}", ticket["system"]["url"]):
        assert api(other).get(f"/internal/v1/{path}").status_code == 404
    assert api(other).post(f"{base}/heartbeat/").status_code == 404
    assert api(mine).post(f"{base}/heartbeat/").json() == {"keep": True}
    stale = f"/internal/v1/runs/{ticket['submission_id']}/{ticket['attempt'] + 1}"
    assert api(mine).post(f"{stale}/heartbeat/").status_code == 404
    # A replaced token stops working at once.
    worker_token_create(name="host-a")
    assert api(mine).post(f"{base}/heartbeat/").status_code == 401


@pytest.mark.django_db
def test_an_outcome_handed_back_is_checked_kept_and_scored_on_the_trusted_side(
    cast: Cast, django_capture_on_commit_callbacks: Any
) -> None:
    system_phases(cast)
    submission = queued_system(cast)
    token = worker_token_create(name="host-a")
    ticket = claim(api(token))
    base = f"/internal/v1/runs/{ticket['submission_id']}/{ticket['attempt']}"
    outcome = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_too_large": False,
               "duration_s": 1.5, "logs": "hello\n", "runtime": "runc", "peak_memory_bytes": 3 * 2**20,
               "not_started": "", "notes": [], "output_errors": {}, "outputs_too_large": []}
    # An output the run does not have is refused, and nothing is kept.
    refused = api(token).post(f"{base}/outcome/", {"outcome": json.dumps(outcome),
                                                   "coqa.json": _file("coqa.json", b"{}")})
    assert refused.status_code == 400 and "outputs the run does not have" in refused.json()["detail"]
    assert Submission.objects.get(pk=submission.pk).status == Status.RUNNING
    # The real outputs: one answers every question, the other is missing.
    first, second = ticket["output_names"]
    missing = {**outcome, "output_errors": {second: f"output missing: expected /output/{second}"}}
    inputs = streamed(api(token).get(f"/internal/v1/{ticket['inputs'][0]['url']}"))
    qids = [qa["qid"] for line in gzip.decompress(inputs).decode().splitlines()[1:]
            for qa in json.loads(line)["qas"]]
    answers = json.dumps(dict.fromkeys(qids, "x")).encode()
    with django_capture_on_commit_callbacks(execute=True):
        accepted = api(token).post(f"{base}/outcome/", {"outcome": json.dumps(missing),
                                                        first: _file(first, answers)})
    assert accepted.status_code == 202, accepted.content
    # Scored by the FINISH_RUN task (in-process in tests): the missing output is the team's verdict.
    submission.refresh_from_db()
    assert submission.status == Status.FAILED and submission.verdict == Verdict.OUTPUT_MISSING
    assert submission.log == "hello\n" and submission.peak_memory_mb == 3
    # The run is over: its worker is told to stop, and nothing more is taken from it.
    assert api(token).post(f"{base}/heartbeat/").status_code == 404
    assert api(token).post(f"{base}/outcome/", {"outcome": json.dumps(outcome)}).status_code == 404


def _file(name: str, data: bytes) -> Any:
    return SimpleUploadedFile(name, data)


@pytest.mark.django_db
def test_claims_interleave_teams_and_keep_each_under_its_running_limit(cast: Cast) -> None:
    system_phases(cast)
    cast.challenge.system_settings = {**cast.challenge.system_settings, "max_running_per_team": 2}
    cast.challenge.save()
    burst = [queued_system(cast, "alpha") for _ in range(5)]
    late = queued_system(cast, "charlies")  # after alpha's five
    order = [submission_run_claim_next(queue="cpu", worker=f"w/{n}").plan for n in range(4)]
    claimed = [plan.submission_id if plan else None for plan in order]
    # Alpha's first, then Charlie's at once (fewest running), then alpha's second: alpha is then at its limit.
    assert claimed[:3] == [burst[0].pk, late.pk, burst[1].pk]
    assert claimed[3] is None
    held = submission_run_claim_next(queue="cpu", worker="w/5")
    assert held.plan is None and held.held_back
    # Another queue's workers never take these.
    assert submission_run_claim_next(queue="gpu", worker="w/6").plan is None


@pytest.mark.django_db(transaction=True)
def test_two_workers_asking_at_once_for_one_run_one_gets_it(cast: Cast) -> None:
    """No message names the run, so the claim alone must be atomic: each of two threads (two
    database connections) asks at the same moment, over and over; each run goes to exactly one."""
    system_phases(cast)
    for _ in range(5):
        submission = queued_system(cast)
        start = threading.Barrier(2)
        got: list[int | None] = []

        def ask(n: int, start: threading.Barrier = start, got: list[int | None] = got) -> None:
            try:
                start.wait()
                plan = submission_run_claim_next(queue="cpu", worker=f"w/{n}").plan
                got.append(plan.submission_id if plan else None)
            finally:
                db.connection.close()

        threads = [threading.Thread(target=ask, args=(n,)) for n in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sorted(got, key=lambda x: x is None) == [submission.pk, None], got
        assert Submission.objects.get(pk=submission.pk).status == Status.RUNNING
        Submission.objects.filter(pk=submission.pk).update(status=Status.FAILED)  # off the team's limit


@pytest.mark.django_db
def test_the_queue_shown_is_the_order_the_claims_take(cast: Cast) -> None:
    """The console's queue and a team's position come from the claims' own order (issue 9): a
    burst of one team interleaves with the others, and runs past the team's limit say they are
    held back; claiming one after another then takes exactly that order."""
    system_phases(cast)
    cast.challenge.system_settings = {**cast.challenge.system_settings, "max_running_per_team": 2}
    cast.challenge.save()
    burst = [queued_system(cast, "alpha") for _ in range(4)]
    late = [queued_system(cast, "charlies") for _ in range(2)]
    predicted = run_queue_order(queue="cpu")
    assert [r.submission_id for r in predicted] == [burst[0].pk, late[0].pk, burst[1].pk, late[1].pk,
                                                      burst[2].pk, burst[3].pk]
    assert [r.held_back for r in predicted] == [False] * 4 + [True, True]
    assert submission_queue_position(submission=late[0]) == 2  # not 5, as first come, first served said
    systems = next(q for q in queue_report(challenge=cast.challenge).queues if q.key == "systems")
    assert [(w.position, w.submission.pk, w.held_back) for w in systems.waiting] == [
        (n, r.submission_id, r.held_back) for n, r in enumerate(predicted, 1)]
    claimed = [submission_run_claim_next(queue="cpu", worker=f"w/{n}").plan for n in range(6)]
    assert [plan.submission_id for plan in claimed if plan] == [r.submission_id for r in predicted if not r.held_back]
    assert claimed[4] is None and claimed[5] is None  # the rest wait for one of alpha's runs to end


@pytest.mark.django_db
def test_a_run_is_claimed_with_no_message_sent(cast: Cast, monkeypatch: pytest.MonkeyPatch) -> None:
    """A queued system is a row, not a message: intake sends nothing, and a worker's claim finds it."""
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr("leaderboard.core.enqueue.send_task", lambda name, pk, **_: sent.append((name, pk)))
    system_phases(cast)
    submission = queued_system(cast)
    assert sent == []
    assert claim(api(worker_token_create(name="host-a")))["submission_id"] == submission.pk


@pytest.mark.django_db
def test_the_challenges_gpus_reach_the_ticket_a_gpu_worker_claims(cast: Cast) -> None:
    """From the spec to the ticket: what the compute worker passes to the engine (next test)."""
    system_phases(cast)
    cast.challenge.system_settings = {**cast.challenge.system_settings, "queue": "gpu", "gpus": 2}
    cast.challenge.save()
    queued_system(cast)
    assert submission_run_claim_next(queue="cpu", worker="w/1").plan is None  # not a cpu worker's
    plan = submission_run_claim_next(queue="gpu", worker="w/2").plan
    assert plan is not None
    ticket = RunTicket.from_json(json.loads(json.dumps(run_ticket_build(plan).as_json())))  # as it travels
    assert ticket.gpus == 2


def test_a_gpu_request_is_built_as_dockers_gpus_flag_builds_it(tmp_path: Path) -> None:
    spec = runner.RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, limits=Limits(), gpus=2)
    [request] = runner._create_kwargs(spec)["device_requests"]
    assert (request["Driver"], request["Count"], request["Capabilities"]) == ("nvidia", 2, [["gpu"]])
    plain = runner.RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, limits=Limits())
    assert "device_requests" not in runner._create_kwargs(plain)


def test_the_compute_worker_imports_no_django_settings_and_no_broker() -> None:
    env = {"PATH": os.environ["PATH"], "READERBOARD_API_URL": "http://127.0.0.1:1", "READERBOARD_WORKER_TOKEN": "x"}
    probe = ("import sys, workers.compute; workers.compute.transport('cpu'); "
             "print(sorted(m for m in sys.modules if m.startswith(('leaderboard.', 'django.conf', 'django.db'))));"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'celery', 'kombu', 'redis', 'amqp', 'billiard'}))")
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2], check=True)
    platform_modules, broker_modules = result.stdout.strip().splitlines()
    # Of leaderboard only the run contract (no Django): answers_json is the one rule for answers, which
    # the worker applies to interactive answers.
    assert platform_modules == ("['leaderboard.sandbox', 'leaderboard.sandbox.answers_json', "
                                "'leaderboard.sandbox.archives', 'leaderboard.sandbox.contract']")
    # No broker client at all: the internal API is how it learns of work.
    assert broker_modules == "[]"


@pytest.mark.django_db
def test_a_result_whose_scoring_message_was_lost_is_sent_again_and_leftovers_go(cast: Cast, settings: Any) -> None:
    settings.REDISPATCH_AFTER_S = 60
    system_phases(cast)
    submission = queued_system(cast)
    token = worker_token_create(name="host-a")
    ticket = claim(api(token))
    outcome = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_too_large": False,
               "duration_s": 1.0, "logs": "", "runtime": "runc", "peak_memory_bytes": None, "not_started": "",
               "notes": [], "output_errors": {}, "outputs_too_large": []}
    # Not in a captured on-commit block: the FINISH_RUN message is never sent, as if the broker lost it.
    response = api(token).post(f"/internal/v1/runs/{submission.pk}/{ticket['attempt']}/outcome/",
                               {"outcome": json.dumps(outcome)})
    assert response.status_code == 202
    folder = _results_dir(submission.pk)
    assert run_results_waiting() == ([], [])  # just handed back: its message may still come
    old = time.time() - 120
    os.utime(folder / "outcome.json", (old, old))
    assert run_results_waiting() == ([submission.pk], [])
    # Once the run is not running any more (scored, cancelled, reaped), its result goes.
    Submission.objects.filter(pk=submission.pk).update(status=Status.CANCELLED)
    assert run_results_waiting() == ([], [submission.pk])
    assert not folder.exists()


class _ControlWorkerKilled(BaseException):
    """Not an ``Exception``: nothing of the platform catches it, as nothing runs after a SIGKILL."""


@pytest.mark.django_db
def test_a_control_worker_killed_while_scoring_is_resumed_by_the_reaper_from_the_kept_result(
    cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_phases(cast)
    submission = queued_system(cast)
    token = worker_token_create(name="host-a")
    ticket = claim(api(token))
    by_slug = gold_outputs(submission_run_plan(submission=submission))
    outputs = {ds.output_name: _file(ds.output_name, by_slug[ds.slug])
               for ds in submission_run_plan(submission=submission).datasets}
    handed = api(token).post(f"/internal/v1/runs/{submission.pk}/{ticket['attempt']}/outcome/",
                             {"outcome": json.dumps(outcome_as_json(outcome())), **outputs})
    assert handed.status_code == 202, handed.content

    def killed(**_: Any) -> None:
        raise _ControlWorkerKilled

    with monkeypatch.context() as patched:  # the finish task dies half-way through the scoring
        patched.setattr(evaluation, "scores_write", killed)
        with pytest.raises(_ControlWorkerKilled):
            tasks.finish_run(submission.pk)
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(control_runs, "send_task", lambda name, pk, **_: sent.append((name, pk)))
    # The restarted control worker's reap at start-up: within the scoring's lease, it leaves the result.
    assert control_runs.runs_reap().stopped == [] and sent == []
    assert (_results_dir(submission.pk) / "outcome.json").is_file()
    # Once the lease passed (simulated): the finish is sent again, the run is not re-queued.
    Submission.objects.filter(pk=submission.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert control_runs.runs_reap().stopped == [] and sent == [(FINISH_RUN, submission.pk)]
    tasks.finish_run(submission.pk)
    tasks.finish_run(submission.pk)  # the first message, redelivered at last: nothing to do
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED and submission.attempts == 1, submission.failure_reason
    assert not _results_dir(submission.pk).exists()
