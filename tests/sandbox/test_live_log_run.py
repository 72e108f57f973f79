"""A running system's log, live, for real: the ``platform`` fixture's compute workers send what a system
printed while it runs over the internal API, and its team's page shows it while the run is still
running; a run on hidden data shows its team nothing of it, while it runs or after, though its
organizers read it live.  The internal API's rules (lease, cap) are in tests/workers/test_live_log.py."""

from __future__ import annotations

import secrets
import time

import pytest

from leaderboard.submissions.models import Status, Submission
from tests.builders.canary import CANARY
from tests.builders.systems import Platform, printing_bundle, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

RUNNING_STATUS = 'class="status-running"'


def test_a_running_dev_systems_page_shows_what_it_printed_and_a_hidden_runs_shows_nothing(platform: Platform) -> None:
    cast = platform.cast
    slug = cast.challenge.slug
    marker = f"RBLIVE-{secrets.token_hex(4)}: loading the model"
    dev = platform.submit(printing_bundle(marker, sleep_s=12), phase="dev")
    hidden = platform.submit(printing_bundle(f"{CANARY}: read the sealed inputs", sleep_s=12), phase="test")
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

    # The hidden run: its organizers read what it printed while it runs; its team, nothing of it.
    team_urls = [f"/c/{slug}/submissions/{hidden}/", f"/api/v1/submissions/{hidden}/",
                 f"/api/v1/submissions/{hidden}/log/", f"/c/{slug}/submissions/",
                 f"/api/v1/challenges/{slug}/submissions/"]
    organizer_saw_it_running = False
    deadline = time.monotonic() + 120
    while not Submission.objects.get(pk=hidden).is_final:
        assert time.monotonic() < deadline, platform.logs()
        for url in team_urls:
            assert CANARY not in alice.get(url).content.decode(), f"the canary reached the team through {url}"
        page = oscar.get(f"/c/{slug}/submissions/{hidden}/").content.decode()
        organizer_saw_it_running |= RUNNING_STATUS in page and CANARY in page
        time.sleep(0.5)
    assert organizer_saw_it_running, "the hidden run's live log never reached its organizers: nothing was tested"
    assert Submission.objects.get(pk=hidden).status == Status.FINISHED, platform.logs()
    for url in team_urls:
        assert CANARY not in alice.get(url).content.decode(), f"the canary reached the team through {url} after"
