"""A team submits a system through the form and watches it in Chromium: queue position, running,
finished and scores, with no manual reload (real worker, Redis and Docker engine).  The system
prints all of /input (hidden test data with a canary planted in every hidden dataset), so its log
is the organizers' until one of them releases it, which the browser does too: the team's page
carries none of it before, the organizer's does, and the team's does once released."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.submissions.models import Status, Submission
from tests.builders.canary import CANARY, LEAK, plant_canaries
from tests.builders.chromium import page_replaced, page_wait
from tests.builders.systems import TEST_LIMITS, Platform, bundle, slow_bundle, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
SCREENSHOT = Path(tempfile.gettempdir()) / "readerboard-system.png"
SCREENSHOT_ORGANIZER = Path(tempfile.gettempdir()) / "readerboard-system-organizer.png"


def test_the_submission_page_follows_a_system_from_the_queue_to_its_scores(
    platform: Platform, live_server: LiveServer, browser: Any, tmp_path: Path  # noqa: F811
) -> None:
    driver = browser
    wait = WebDriverWait(driver, 120)
    base = live_server.url
    # Another team's system holds the only runner, so ours waits in the queue first.  The only one:
    # the platform's second compute worker would claim ours within a tenth of a second (it is woken
    # when a run is queued), before its page could show it queued (CI once saw it already running).
    # It holds it for 30 s, not the fault tests' 8: logging in and uploading took longer than 8 s once
    # in CI under load; under the test limits' 20 s it would be killed (and run again) at 20.
    platform.compute[1].stop()
    platform.cast.challenge.system_settings["limits"] = {**TEST_LIMITS, "time_limit_s": 60}
    platform.cast.challenge.save()
    ahead = platform.submit(slow_bundle(sleep_s=30), who="charlie")
    wait_for(lambda: Submission.objects.get(pk=ahead).status == Status.RUNNING, 60, "the first run", platform)

    plant_canaries(platform.cast)
    log_in(driver, base, "alice")
    driver.get(f"{base}/c/demo/")
    assert "How your system runs" in driver.find_element(By.ID, "contract").text
    assert "256 MiB" in driver.find_element(By.ID, "contract").text  # the challenge's own limits

    archive = tmp_path / "prints-input.zip"
    # Its "log" mode prints every hidden input; it first sleeps, so the page can be seen following it.
    archive.write_bytes(bundle(("run.py", LEAK.read_text().replace('MODE = "log"\n', 'MODE = "log"\ntime.sleep(4)\n', 1))))
    driver.get(f"{base}/c/demo/submit/system/")
    Select(driver.find_element(By.ID, "id_phase")).select_by_value(str(platform.cast.test.pk))
    Select(driver.find_element(By.ID, "id_kind")).select_by_value("code_bundle")
    driver.find_element(By.ID, "id_file").send_keys(str(archive))
    driver.find_element(By.ID, "system-submit").click()

    wait.until(ec.presence_of_element_located((By.ID, "status")))
    assert driver.find_element(By.ID, "status").text == "queued"
    assert driver.find_element(By.ID, "queue-position").text == "1"
    # The page follows the run by itself: running, then finished with scores and the log.
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "running"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "finished"))
    assert driver.find_elements(By.CSS_SELECTOR, "#scores tr")
    # What the system printed of /input (every hidden question and context) stays with the organizers.
    assert not driver.find_elements(By.ID, "log")
    assert "organizers only" in driver.find_element(By.ID, "log-note").text
    assert CANARY not in driver.page_source
    assert "Hidden-07" in driver.find_element(By.ID, "scores").text
    for name in ("CoQA", "DROP"):
        assert name not in driver.page_source  # the sealed datasets' names are nowhere on the page
    driver.save_screenshot(str(SCREENSHOT))
    submission_url = driver.current_url

    # The organizer reads the log, and releases it after the confirmation.
    log_in(driver, base, "oscar")
    driver.get(submission_url)
    assert CANARY in driver.find_element(By.ID, "log").text
    assert "its team does not see this log" in driver.find_element(By.ID, "log-note").text
    driver.save_screenshot(str(SCREENSHOT_ORGANIZER))
    driver.find_element(By.CSS_SELECTOR, "#release-log a").click()  # the console asks why, says what it discloses
    wait.until(ec.presence_of_element_located((By.ID, "confirm-form")))
    assert "this run read sealed data" in driver.find_element(By.ID, "consequences").text
    driver.find_element(By.NAME, "reason").send_keys("the team asked what its system printed")
    driver.find_element(By.ID, "confirm").click()
    driver.get(submission_url)
    wait.until(ec.text_to_be_present_in_element((By.ID, "log-note"), "Released to the team by oscar"))

    log_in(driver, base, "alice")
    driver.get(submission_url)
    assert CANARY in driver.find_element(By.ID, "log").text
    assert "Released to the team by oscar" in driver.find_element(By.ID, "log-note").text
    released = Submission.objects.get(pk=int(submission_url.rstrip("/").rsplit("/", 1)[1]))
    assert released.log_released_by == platform.cast.oscar


def log_in(driver, base: str, who: str) -> None:  # type: ignore[no-untyped-def]
    driver.delete_all_cookies()
    driver.get(f"{base}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys(who)
    driver.find_element(By.ID, "id_password").send_keys(f"{who}-pw")
    button = driver.find_element(By.CSS_SELECTOR, "form button, form input[type=submit]")
    button.click()
    # Read the nav of the answer's page: reading the login page's while Chromium replaces it failed in
    # CI ("unhandled inspector error", not an error any wait ignores).
    page_replaced(driver, button)
    page_wait(driver).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "header.top nav"), who))
