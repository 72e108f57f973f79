"""A running dev system's page follows what it prints: the page's script asks the log's endpoint every
2 s and replaces its copy of the log without a reload, marked live; once the run ends the page reloads
with the whole log.  Photographed at 1366 and 400 px (``readerboard-live-log/*.png`` in the temporary
folder), where the page may not overflow the window sideways.  The worker's part is played by the
service its internal API calls (no engine in this lane: tests/sandbox/test_live_log_run.py has one)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import Submission
from leaderboard.submissions.worker_api import submission_run_live_log_store
from tests.builders.browser import sign_in
from tests.builders.cast import Cast
from tests.builders.chromium import chromium_driver, page_wait, screenshot_widths
from tests.builders.runs import bundle, outcome
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(tempfile.gettempdir()) / "readerboard-live-log"

FIRST = ("[2026-12-02 18:40:01] loading the reader (bert-base-uncased, 110M parameters) from /system/model\n"
         "[2026-12-02 18:40:04] reading /input/manifest.json: 5 datasets\n")
MORE = ("[2026-12-02 18:40:09] squad-dev.jsonl.gz: 1200 questions, batch 32, "
        "max_seq_len=384 doc_stride=128 tokenizer=/system/model/vocab.txt "
        "(a long line, as a progress report can be, wraps inside the box)\n"
        "[2026-12-02 18:40:12] squad-dev.jsonl.gz: 320/1200 answered\n")


def print_so_far(pk: int, log: str) -> None:
    """What the run's worker sends over the internal API, by the service its view calls."""
    assert submission_run_live_log_store(submission=Submission.objects.select_related("phase__challenge").get(pk=pk),
                                         log=log, notes=[])


def test_the_running_dev_systems_page_follows_what_it_prints(cast: Cast, live_server: Any) -> None:
    system_phases(cast)
    run = submission_create_system(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    assert submission_run_claim(run.pk, worker="local/cpu-node-3:4711") is not None
    with chromium_driver(width=1366, height=1000) as driver:
        sign_in(driver, live_server.url, cast.alice)
        driver.get(f"{live_server.url}/c/{cast.challenge.slug}/submissions/{run.pk}/")
        assert driver.find_element(By.ID, "log-live").text == "live · so far"
        assert driver.find_element(By.ID, "log-empty").is_displayed()
        assert "The run wrote nothing." not in driver.page_source
        screenshot_widths(driver, SHOTS / "nothing-yet")
        driver.execute_script("window.notReloaded = true;")  # gone if the page reloads

        print_so_far(run.pk, FIRST)
        page_wait(driver).until(lambda d: "loading the reader" in d.find_element(By.ID, "log").text)
        print_so_far(run.pk, FIRST + MORE)
        page_wait(driver).until(lambda d: "320/1200 answered" in d.find_element(By.ID, "log").text)
        assert driver.execute_script("return window.notReloaded === true;"), "the page reloaded to show the log"
        assert not driver.find_element(By.ID, "log-empty").is_displayed()
        assert "under way" in driver.find_element(By.ID, "run").text
        assert "as of" in driver.find_element(By.ID, "log-live-at").text
        assert driver.find_element(By.ID, "status").text == "running"
        # Nothing new printed: the polls leave the page's copy alone (a reader's selection stays), the
        # copy the page came with too.
        driver.refresh()
        driver.execute_script("window.notReloaded = true;")
        driver.execute_script("window.copyShown = document.getElementById('log').firstChild;")
        time.sleep(5)
        assert driver.execute_script("return document.getElementById('log').firstChild === window.copyShown;")
        screenshot_widths(driver, SHOTS / "running")

        # The run ends: a new status reloads the page, with the whole log and no "live" mark.
        submission_run_finish(run.pk, attempt=1, outcome=outcome(logs=FIRST + MORE + "Killed: out of patience\n",
                                                                 exit_code=1))
        page_wait(driver).until(lambda d: not d.execute_script("return window.notReloaded === true;"))
        page_wait(driver).until(lambda d: d.find_element(By.ID, "status").text != "running")
        assert not driver.find_elements(By.ID, "log-live")
        assert driver.find_element(By.ID, "log").text.endswith("out of patience")
        screenshot_widths(driver, SHOTS / "ended")


def test_a_running_hidden_systems_page_shows_its_team_nothing_of_what_it_prints(cast: Cast, live_server: Any) -> None:
    system_phases(cast)
    run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    assert submission_run_claim(run.pk, worker="local/cpu-node-3:4711") is not None
    print_so_far(run.pk, "reading hidden-128898.jsonl.gz: RBCANARY9c41e2\n")
    with chromium_driver(width=1366, height=1000) as driver:
        sign_in(driver, live_server.url, cast.alice)
        driver.get(f"{live_server.url}/c/{cast.challenge.slug}/submissions/{run.pk}/")
        assert not driver.find_elements(By.ID, "log-live") and not driver.find_elements(By.ID, "log")
        assert "shown to the organizers only" in driver.find_element(By.ID, "log-note").text
        assert "RBCANARY" not in driver.page_source
        screenshot_widths(driver, SHOTS / "hidden-team")
    with chromium_driver(width=1366, height=1000) as driver:
        sign_in(driver, live_server.url, cast.oscar)
        driver.get(f"{live_server.url}/c/{cast.challenge.slug}/submissions/{run.pk}/")
        assert "RBCANARY9c41e2" in driver.find_element(By.ID, "log").text
        assert driver.find_element(By.ID, "log-note").text.startswith("Organizers only, live")
        screenshot_widths(driver, SHOTS / "hidden-organizer")
