"""A participant's whole journey in a real browser: sign up, make a team, upload, see the board change.

Runs headless Chromium against pytest-django's live server. Scoring runs in-process right
after the upload commits (``CELERY_TASK_ALWAYS_EAGER``), so the detail page shows the result.
Needs Debian's ``chromium`` and ``chromium-driver`` (``deploy/setup.sh`` installs them): without
them the test is skipped, except in CI (``CI=true``), where their absence is a failure.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core import mail
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select

from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status, Submission
from tests.builders.browser import board_rows
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.chromium import page_wait

SCREENSHOT = Path(tempfile.gettempdir()) / "readerboard-board.png"

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_new_participant_signs_up_submits_and_tops_the_board(
    cast: Cast, live_server: LiveServer, browser: Any, tmp_path: Path
) -> None:
    driver = browser
    wait = page_wait(driver)
    base = live_server.url
    # A rival already on the board, with a weaker system.
    rival = submission_create_predictions(
        team=cast.charlies, phase=cast.dev, user=cast.charlie, upload=upload(gold_predictions(wrong_every=2)),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    rival.refresh_from_db()
    assert rival.status == Status.FINISHED, rival.failure_reason

    # Before: the board has the rival only.
    board_url = f"{base}/c/{cast.challenge.slug}/board/{cast.dev.slug}/"
    driver.get(board_url)
    before = board_rows(driver)
    assert [row[1] for row in before] == ["Charlie's"]

    # Sign up through the form, open the link it mails to confirm the address, and log in.
    driver.get(f"{base}/accounts/signup/")
    driver.find_element(By.ID, "id_username").send_keys("erin")
    driver.find_element(By.ID, "id_email").send_keys("erin@example.org")
    driver.find_element(By.ID, "id_password1").send_keys("a-long-browser-pw-42")
    driver.find_element(By.ID, "id_password2").send_keys("a-long-browser-pw-42")
    driver.find_element(By.ID, "signup-submit").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "We sent a link to erin@example.org"))
    link = re.search(r"https?://\S+/accounts/confirm/\S+/", str(mail.outbox[-1].body))
    assert link, mail.outbox[-1].body
    driver.get(link.group(0))
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "is confirmed"))
    driver.get(f"{base}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys("erin")
    driver.find_element(By.ID, "id_password").send_keys("a-long-browser-pw-42")
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "header.top nav"), "erin"))

    # Create a team on the team page.
    driver.get(f"{base}/c/{cast.challenge.slug}/team/")
    driver.find_element(By.ID, "id_name").send_keys("Birch Readers")
    driver.find_element(By.ID, "id_affiliation").send_keys("Browser University")
    driver.find_element(By.ID, "create-team").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "You are in Birch Readers"))

    # Upload a prediction file with some wrong answers through the submit form.
    preds = tmp_path / "birch-dev.json"
    preds.write_text(json.dumps(gold_predictions(wrong_every=7)))
    driver.get(f"{base}/c/{cast.challenge.slug}/submit/")
    Select(driver.find_element(By.ID, "id_phase")).select_by_value(str(cast.dev.pk))
    driver.find_element(By.ID, "id_file").send_keys(str(preds))
    driver.find_element(By.ID, "upload-submit").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "finished"))
    assert driver.find_element(By.ID, "status").text == "finished"
    assert driver.find_elements(By.CSS_SELECTOR, "#scores tr")  # the scores are listed

    submission = Submission.objects.get(team__name="Birch Readers")
    assert submission.status == Status.FINISHED
    macro_f1 = Score.objects.get(submission=submission, dataset=None, metric="macro_f1").value
    assert macro_f1 is not None and rival.primary_score is not None and rival.primary_score < macro_f1 < 100

    # After: the team's row is first, with its macro F1 in the primary column.
    driver.get(board_url)
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#board thead tr:nth-child(2) th")]
    primary = heads.index("Macro F1") + 2  # Rank and System come first in the body rows
    after = board_rows(driver)
    assert [row[1].split(" (")[0] for row in after] == ["Birch Readers", "Charlie's"]
    assert after[0][0] == "1" and after[1][0] == "2"
    assert after[0][primary] == f"{macro_f1:.2f}"
    groups = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#board thead th.group")]
    # Two rows with per-question scores: the board says whether their difference is real (issue 12).
    assert groups == ["Overall", "Significance", "SQuAD", "XQuAD-en"]
    assert after[0][heads.index("p vs leader") + 2] == "leader"
    low, high = (float(x) for x in after[0][heads.index("95% CI") + 2].split("–"))
    assert low <= macro_f1 <= high
    assert driver.find_element(By.CSS_SELECTOR, ".chart svg rect").is_displayed()
    # Nothing of the chart (rotated dataset names, the legend) is cut off at its right edge.
    drawn, width = driver.execute_script(
        "var s = document.querySelector('.chart svg'), b = s.getBBox(); return [b.x + b.width, s.width.baseVal.value];"
    )
    assert drawn <= width
    driver.save_screenshot(str(SCREENSHOT))

    # Sorting: a click on a header reorders the rows; a second click reverses them.
    def names() -> list[str]:
        return [row[1].split(" (")[0] for row in board_rows(driver)]

    header = driver.find_elements(By.CSS_SELECTOR, "#board thead tr:first-child th")
    system, rank = header[1], header[0]
    system.click()  # text columns sort Z-A first
    assert names() == ["Charlie's", "Birch Readers"]
    rank.click()  # the rank column sorts 1, 2, ... first
    assert [row[0] for row in board_rows(driver)] == ["1", "2"]
    f1 = driver.find_elements(By.CSS_SELECTOR, "#board thead tr:nth-child(2) th")[heads.index("Macro F1")]
    f1.click()  # score columns sort best first
    assert names() == ["Birch Readers", "Charlie's"]
    f1.click()
    assert names() == ["Charlie's", "Birch Readers"]
