"""A running system's log, live, for real: the ``platform`` fixture's compute workers send what a system
printed while it runs over the internal API, and its team's page shows it while the run is still
running; a run on hidden data shows its team nothing of it, while it runs or after, though its
organizers read it live.  The internal API's rules (lease, cap) are in tests/workers/test_live_log.py."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import docker
import pytest

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE
from leaderboard.submissions.models import Status, Submission
from scoring.dialogs import Mode, Session
from tests.builders.canary import CANARY
from tests.builders.converse import LIMITS, dialog
from tests.builders.systems import Platform, printing_bundle, wait_for
from workers import runner
from workers.converse import converse

RUNNING_STATUS = 'class="status-running"'


@pytest.mark.django_db(transaction=True)
def test_a_running_dev_systems_page_shows_what_it_printed_and_a_hidden_runs_shows_nothing(platform: Platform) -> None:
    cast = platform.cast
    slug = cast.challenge.slug
    marker = f"RBLIVE-{secrets.token_hex(4)}: loading the model"
    dev = platform.submit(printing_bundle(marker, sleep_s=12), phase="dev")
    alice, oscar = cast.client("alice"), cast.client("oscar")

    seen: dict[str, str] = {}

    def dev_page_shows_it() -> bool:
        page = alice.get(f"/c/{slug}/submissions/{dev}/").content.decode()
        assert Submission.objects.get(pk=dev).status in (Status.QUEUED, Status.RUNNING), (
            "the dev run ended before its page showed what it printed\n" + platform.logs())
        if RUNNING_STATUS in page and marker in page:  # one answer: running, and the line shown
            seen["page"] = page
            return True
        return False

    started = time.monotonic()
    wait_for(dev_page_shows_it, 60, "the running dev system's page to show what it printed", platform)
    print(f"dev line on the page {time.monotonic() - started:.1f} s after the upload")
    assert "live · so far" in seen["page"] and "The run wrote nothing." not in seen["page"]
    log = alice.get(f"/api/v1/submissions/{dev}/log/").json()
    assert log["live"] is True and marker in log["log"]
    assert platform.wait_final(dev).status == Status.FINISHED

    # The hidden run, sent once the dev run is done (sent beside it, it could run and end while this
    # test still watched the dev run; 14 s, within the 20 s time limit): its organizers read what it
    # printed while it runs; its team, nothing of it.
    hidden = platform.submit(printing_bundle(f"{CANARY}: read the sealed inputs", sleep_s=14), phase="test")
    team_urls = [f"/c/{slug}/submissions/{hidden}/", f"/api/v1/submissions/{hidden}/",
                 f"/api/v1/submissions/{hidden}/log/", f"/c/{slug}/submissions/",
                 f"/api/v1/challenges/{slug}/submissions/"]
    organizer_saw_it_running = False
    deadline = time.monotonic() + 120
    while not Submission.objects.get(pk=hidden).is_final:
        assert time.monotonic() < deadline, platform.logs()
        page = oscar.get(f"/c/{slug}/submissions/{hidden}/").content.decode()
        organizer_saw_it_running |= RUNNING_STATUS in page and CANARY in page
        for url in team_urls:
            assert CANARY not in alice.get(url).content.decode(), f"the canary reached the team through {url}"
        time.sleep(0.3)
    assert organizer_saw_it_running, ("the hidden run's live log never reached its organizers: nothing was "
                                      f"tested\n{platform.logs()}")
    assert Submission.objects.get(pk=hidden).status == Status.FINISHED, platform.logs()
    for url in team_urls:
        assert CANARY not in alice.get(url).content.decode(), f"the canary reached the team through {url} after"


def test_an_interactive_system_sends_what_it_prints_to_stderr_while_it_plays(engine: docker.DockerClient,
                                                                             tmp_path: Path) -> None:
    """The turn-by-turn run's container: its stderr (stdout is its answers) goes out while it plays."""
    script = ("import json, sys, time\n"
              "sys.stderr.write('warming up the reader\\n'); sys.stderr.flush()\n"
              "for line in sys.stdin:\n"
              "    time.sleep(2)\n"
              "    request = json.loads(line)\n"
              "    print(json.dumps({'id': request['id'], 'answer': 'x', 'yesno': 'x', 'followup': 'y'}), flush=True)\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    spec = runner.RunSpec(image=DEFAULT_BASE_IMAGE, command=["python3", "-u", "-c", script],
                          input_dir=tmp_path / "in", output_dir=tmp_path / "out", limits=LIMITS,
                          labels={"readerboard.test": "live-log"})
    sessions = [Session(dialog(), Mode.OWN)]
    sent: list[tuple[float, str]] = []
    started = time.monotonic()
    talk = converse(engine, spec, sessions, turn_limit_s=5,
                    live_log=lambda log, notes: sent.append((time.monotonic() - started, log)))
    assert talk.verdict == "finished", talk.reason
    assert sent and sent[0][1] == "warming up the reader\n", sent
    # While it played (three turns of 2 s each), not at its end: and once, as nothing more was printed.
    assert sent[0][0] < talk.duration_s - 1 and len(sent) == 1, (sent, talk.duration_s)
