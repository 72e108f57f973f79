"""A running system's log, live: what it printed so far goes from its worker to the platform over the
internal API, under the run's lease, capped as the final log is; its team reads it while the run goes
on public data, and on hidden data nothing of it, as the final log (``submission_run_report``).

The internal API is called with Django's test client, as in tests/workers/test_compute_hosts.py; the
real worker and engine are in tests/sandbox/test_live_log_run.py, the page's refresh in a browser in
tests/e2e/test_live_log_browser.py.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from leaderboard.sandbox.contract import RunNote, log_cap_chars
from leaderboard.submissions import selectors
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import submission_cancel, submissions_reap
from leaderboard.submissions.models import RunAttempt, Submission
from leaderboard.submissions.selectors import submission_run_plan
from leaderboard.submissions.worker_api import worker_token_create
from tests.builders.canary import CANARY
from tests.builders.cast import Cast
from tests.builders.runs import bundle, outcome
from tests.builders.systems import TEST_LIMITS, system_phases
from workers import runner

pytestmark = pytest.mark.django_db


def api(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def running(cast: Cast, token: str, *, phase: str = "dev") -> dict[str, Any]:
    """A system of team alpha in ``phase``, claimed by ``token``'s worker: its ticket."""
    system_phases(cast)
    submission_create_system(team=cast.alpha, phase=getattr(cast, phase), user=cast.alice, upload=bundle(),
                             kind="code_bundle")
    response = api(token).post("/internal/v1/runs/claim/", {"queue": "cpu", "instance": "host:1"},
                               content_type="application/json")
    ticket: dict[str, Any] = response.json()["ticket"]
    assert ticket is not None, response.content
    return ticket


def post_log(token: str, ticket: dict[str, Any], log: Any, notes: Any = (), *, attempt: int | None = None) -> Any:
    url = f"/internal/v1/runs/{ticket['submission_id']}/{attempt or ticket['attempt']}/log/"
    return api(token).post(url, json.dumps({"log": log, "notes": list(notes)}), content_type="application/json")


def team_reads(cast: Cast, pk: int) -> dict[str, str]:
    """Every surface of the submission its team (alice) reads: its page, the list, the API's answers."""
    alice = cast.client("alice")
    slug = cast.challenge.slug
    reads = {}
    for url in (f"/c/{slug}/submissions/{pk}/", f"/c/{slug}/submissions/", f"/api/v1/submissions/{pk}/",
                f"/api/v1/submissions/{pk}/log/", f"/api/v1/challenges/{slug}/submissions/"):
        response = alice.get(url)
        assert response.status_code == 200, (url, response.status_code)
        reads[url] = response.content.decode()
    return reads


def test_a_dev_run_shows_what_it_printed_so_far_on_its_page_and_in_the_api(cast: Cast) -> None:
    token = worker_token_create(name="host-a")
    ticket = running(cast, token)
    pk = ticket["submission_id"]
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/submissions/{pk}/").content.decode()
    # Nothing printed yet: said so, as live, not "The run wrote nothing."
    assert 'id="log-live"' in page and "Nothing printed yet" in page and "The run wrote nothing." not in page
    assert post_log(token, ticket, "loading the model\n").json() == {"kept": True}
    assert post_log(token, ticket, "loading the model\nepoch 1 of 3\n").status_code == 200  # the whole capture
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/submissions/{pk}/").content.decode()
    assert "loading the model\nepoch 1 of 3\n" in page and "live · so far" in page
    assert "The run wrote nothing." not in page and "Nothing printed yet" in page  # (hidden, for the script)
    log = cast.client("alice").get(f"/api/v1/submissions/{pk}/log/").json()
    assert log["status"] == "running" and log["live"] is True and log["log"] == "loading the model\nepoch 1 of 3\n"
    assert log["live_at"] and log["note"].startswith("Live: what the run has printed so far")
    detail = cast.client("alice").get(f"/api/v1/submissions/{pk}/").json()
    assert detail["log_available"] is True and detail["log_live"] is True

    # It ends: the final log replaces the live one, which the attempt no longer keeps.
    submission_run_finish(pk, attempt=1, outcome=outcome(logs="loading the model\nepoch 1 of 3\ndone\n"))
    assert RunAttempt.objects.get(submission_id=pk).live_log == ""
    log = cast.client("alice").get(f"/api/v1/submissions/{pk}/log/").json()
    assert log["live"] is False and log["log"].endswith("done\n") and log["live_at"] is None
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/submissions/{pk}/").content.decode()
    assert 'id="log-live"' not in page and "done\n" in page


def test_a_cut_in_the_live_log_is_marked_as_the_final_logs_is(cast: Cast) -> None:
    token = worker_token_create(name="host-a")
    ticket = running(cast, token)
    head, tail = "first lines\n", "last lines\n"
    note = RunNote("1000 bytes of log cut between the head and the tail", at=len(head)).as_json()
    assert post_log(token, ticket, head + tail, [note]).status_code == 200
    log = cast.client("alice").get(f"/api/v1/submissions/{ticket['submission_id']}/log/").json()
    assert log["log_cut_at"] == len(head) and log["platform_notes"] == [note["text"]]
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/submissions/{ticket['submission_id']}/").content
    assert b'class="log-cut"' in page


def test_a_live_log_is_taken_only_from_the_runs_worker_and_only_while_its_attempt_runs(cast: Cast,
                                                                                       settings: Any) -> None:
    settings.MAX_RUN_ATTEMPTS = 3
    mine, other = worker_token_create(name="host-a"), worker_token_create(name="host-b")
    ticket = running(cast, mine)
    pk = ticket["submission_id"]
    assert post_log(other, ticket, "a foreign worker's words").status_code == 404
    assert post_log(mine, ticket, "a later attempt's words", attempt=2).status_code == 404
    assert Client().post(f"/internal/v1/runs/{pk}/1/log/", "{}", content_type="application/json").status_code == 401
    assert post_log(mine, ticket, "attempt 1 printed this").status_code == 200
    # The worker is lost; the run is claimed again: attempt 1's late post is refused, and attempt 2
    # shows nothing of attempt 1's log.
    submissions_reap(dead_workers=["host-a/host:1"])
    Submission.objects.filter(pk=pk).update(dispatched_at=None)
    again = api(mine).post("/internal/v1/runs/claim/", {"queue": "cpu", "instance": "host:2"},
                           content_type="application/json").json()["ticket"]
    assert again["attempt"] == 2
    assert post_log(mine, ticket, "attempt 1, too late").status_code == 404
    log = cast.client("alice").get(f"/api/v1/submissions/{pk}/log/").json()
    assert log["live"] is True and log["log"] == ""
    assert RunAttempt.objects.get(submission_id=pk, number=1).live_log == ""  # ended: not kept
    # Cancelled: nothing more is taken, and what was kept goes.
    assert post_log(mine, again, "attempt 2 printed this").status_code == 200
    submission_cancel(submission=Submission.objects.get(pk=pk), user=cast.alice)
    assert post_log(mine, again, "after the cancel").status_code == 404
    assert RunAttempt.objects.get(submission_id=pk, number=2).live_log == ""


def test_a_live_log_longer_than_the_runs_log_cap_or_of_the_wrong_shape_is_refused_with_why(cast: Cast) -> None:
    token = worker_token_create(name="host-a")
    ticket = running(cast, token)
    cap = log_cap_chars(submission_run_plan(submission=Submission.objects.get()).limits)
    assert cap == TEST_LIMITS["log_bytes"]  # the final log's cap: the challenge's log_bytes
    assert post_log(token, ticket, "x" * cap).status_code == 200
    refused = post_log(token, ticket, "x" * (cap + 1))
    assert refused.status_code == 400
    assert refused.json()["detail"] == (f"the log has {cap + 1} characters, more than the run's log can hold "
                                        f"({cap})")
    assert RunAttempt.objects.get().live_log == "x" * cap  # the refused one changed nothing
    assert "'log' is not text" in post_log(token, ticket, 42).json()["detail"]
    bad_notes = post_log(token, ticket, "ok", [{"text": "a cut", "at": 99}])
    assert bad_notes.status_code == 400 and "a position in the log" in bad_notes.json()["detail"]
    url = f"/internal/v1/runs/{ticket['submission_id']}/1/log/"
    not_json = api(token).post(url, "{not json", content_type="application/json")
    assert not_json.status_code == 400 and not_json.json() == {"detail": "expected {log, notes}"}


def test_what_a_hidden_run_prints_while_it_runs_never_reaches_its_team(cast: Cast,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    token = worker_token_create(name="host-a")
    ticket = running(cast, token, phase="test")
    pk = ticket["submission_id"]
    assert post_log(token, ticket, f"reading the sealed inputs: {CANARY}\n").json() == {"kept": True}
    # The organizers read it live (it was kept, and is shown to whom the report lets see it)...
    oscar = cast.client("oscar").get(f"/c/{cast.challenge.slug}/submissions/{pk}/").content.decode()
    assert CANARY in oscar and "Organizers only, live" in oscar
    # ...its team nothing of it: not the text, not that it is live, not when it came.
    reads = team_reads(cast, pk)
    for url, text in reads.items():
        assert CANARY not in text, url
    log = json.loads(reads[f"/api/v1/submissions/{pk}/log/"])
    assert (log["log"], log["live"], log["live_at"], log["platform_notes"]) == (None, False, None, [])
    assert json.loads(reads[f"/api/v1/submissions/{pk}/"])["log_live"] is False
    assert 'id="log-live"' not in reads[f"/c/{cast.challenge.slug}/submissions/{pk}/"]
    # A released earlier log does not open a live one: no organizer has read what it prints now.
    Submission.objects.filter(pk=pk).update(log_released_at=Submission.objects.get(pk=pk).created_at)
    assert all(CANARY not in text for text in team_reads(cast, pk).values())
    Submission.objects.filter(pk=pk).update(log_released_at=None)
    # After the run, still nothing of it.
    submission_run_finish(pk, attempt=1, outcome=outcome(logs=f"{CANARY} at the end\n"))
    assert all(CANARY not in text for text in team_reads(cast, pk).values())

    # The probe: were the phase's data public, the same reads would carry the canary, so the
    # checks above can fail.
    probe = running(cast, token, phase="test")
    assert post_log(token, probe, f"reading the sealed inputs: {CANARY}\n").status_code == 200
    monkeypatch.setattr(selectors, "phase_runs_on_hidden_data", lambda *, phase: False)
    leaked = team_reads(cast, probe["submission_id"])
    assert CANARY in leaked[f"/c/{cast.challenge.slug}/submissions/{probe['submission_id']}/"]
    assert CANARY in leaked[f"/api/v1/submissions/{probe['submission_id']}/log/"]


def test_the_live_log_is_read_in_one_place_only() -> None:
    """What of a live log a viewer reads is ``submission_run_report``'s to say, so no other module or
    template of the web app touches its fields: models declares them, attempts writes them, the
    report's selector reads them."""
    root = Path(__file__).resolve().parents[2] / "leaderboard"
    field = re.compile(r"\blive_log(_notes|_at)?\b")
    touching = {str(path.relative_to(root)) for path in [*root.rglob("*.py"), *root.rglob("*.html")]
                if "migrations" not in path.parts and field.search(path.read_text(encoding="utf-8"))}
    assert touching == {"submissions/models.py", "submissions/attempts.py", "submissions/selectors.py"}


# --------------------------------------------------------------------------- the worker's side


def test_the_worker_sends_the_capture_only_when_something_new_was_printed() -> None:
    capture = runner.LogCapture(64)
    sent: list[tuple[str, list[RunNote]]] = []
    printed = threading.Event()

    def send(text: str, notes: list[RunNote]) -> None:
        sent.append((text, notes))
        printed.set()

    with runner.log_live(capture, send, every=0.05):
        time.sleep(0.3)
        assert sent == []  # nothing printed: nothing sent
        capture.feed(b"hello\n")
        assert printed.wait(5)
        time.sleep(0.3)
        assert sent == [("hello\n", [])]  # once, though the thread woke several times since
        printed.clear()
        capture.feed(b"x" * 100)  # past the cap: the capture's head and tail, and its note of the cut
        assert printed.wait(5)
    text, notes = sent[-1]
    assert len(text) <= 64 and text.startswith("hello\n") and notes and notes[0].at is not None
    count = len(sent)
    capture.feed(b"after the run\n")
    time.sleep(0.2)
    assert len(sent) == count  # stopped with its block


def test_a_live_log_that_cannot_be_sent_does_not_stop_the_run() -> None:
    capture = runner.LogCapture(64)
    tried = threading.Event()

    def send(text: str, notes: list[RunNote]) -> None:
        tried.set()
        raise ConnectionError("the platform is restarting")

    with runner.log_live(capture, send, every=0.05):
        capture.feed(b"hello\n")
        assert tried.wait(5)
    assert capture.result()[0] == "hello\n"
