"""The pages the smaller points of a participant's walk changed, in headless Chromium at 1366 and 400 px
(screenshots in ``$TMPDIR/readerboard-smaller``; nothing may overflow sideways): the home page's
status per challenge, a submission's rank and averages and one-question slices, the duplicate upload
asked about and sent, and the console's failures told apart by cause."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from leaderboard.challenges.models import Challenge, Phase
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from tests.builders.browser import sign_in
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.chromium import WAIT_SECONDS, screenshot_widths

SHOTS = Path(tempfile.gettempdir()) / "readerboard-smaller"

pytestmark = pytest.mark.django_db(transaction=True)


def scored(cast: Cast, team: str, wrong_every: int) -> Submission:
    owner, user = (cast.alpha, cast.alice) if team == "alpha" else (cast.charlies, cast.charlie)
    submission = submission_create_predictions(team=owner, phase=cast.dev, user=user,
                                               upload=upload(gold_predictions(wrong_every=wrong_every)),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED
    return submission


def text_of(driver: Any, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def test_the_changed_pages_at_both_widths(cast: Cast, live_server, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, live_server.url
    Challenge.objects.filter(pk=cast.challenge.pk).update(ranking_scope={"splits": ["II", "III"]})
    Phase.objects.filter(pk=cast.dev.pk).update(closes_at=timezone.now() + dt.timedelta(days=3, hours=4, minutes=30))
    mine = scored(cast, "alpha", 3)
    scored(cast, "charlies", 7)

    driver.get(f"{base}/")
    assert "Dev: open, 3 days 4 h left" in driver.find_element(By.CSS_SELECTOR, ".challenge-status").text
    screenshot_widths(driver, SHOTS / "home")

    sign_in(driver, base, cast.alice)
    driver.get(f"{base}/c/demo/submissions/{mine.pk}/")
    assert text_of(driver, "board-place") == "rank 2 of 2 on the Dev board"
    assert "SQuAD (Split I) is not in it." in text_of(driver, "averages")
    one = driver.find_element(By.XPATH, "//tbody[@data-family='answer length']//tr[td[1]='8+']/td[@class='num ci']")
    assert one.text == "one question"
    screenshot_widths(driver, SHOTS / "submission")

    # The same file again through the form: asked, nothing counted; the ticked box sends it.
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(gold_predictions(wrong_every=3)))
    driver.get(f"{base}/c/demo/submit/")
    driver.find_element(By.CSS_SELECTOR, f"#id_phase option[value='{cast.dev.pk}']").click()
    driver.find_element(By.ID, "id_file").send_keys(str(preds))
    driver.find_element(By.ID, "upload-submit").click()
    WebDriverWait(driver, WAIT_SECONDS).until(ec.presence_of_element_located((By.ID, "allow-duplicate")))
    assert f"the same as your submission {mine.pk}" in driver.find_element(By.CSS_SELECTOR, ".errorlist").text
    assert Submission.objects.filter(team=cast.alpha).count() == 1
    screenshot_widths(driver, SHOTS / "duplicate-asked")
    driver.find_element(By.ID, "id_file").send_keys(str(preds))
    driver.find_element(By.ID, "allow-duplicate").click()
    driver.find_element(By.ID, "upload-submit").click()
    WebDriverWait(driver, WAIT_SECONDS).until(ec.url_contains("/c/demo/submissions/"))
    assert Submission.objects.filter(team=cast.alpha).count() == 2

    for i in range(8):
        Submission.objects.create(team=cast.charlies, phase=cast.dev, kind="code_bundle", status="failed",
                                  failure_cause="platform", failure_reason="the platform could not run it",
                                  description=f"engine down {i}")
    driver.delete_all_cookies()
    sign_in(driver, base, cast.oscar)
    driver.get(f"{base}/c/demo/console/")
    counts = text_of(driver, "status-counts")
    assert "platform errors (not the teams' fault, not counted) 8" in counts, counts
    screenshot_widths(driver, SHOTS / "console")
    driver.get(f"{base}/c/demo/console/submissions/?status=failed&cause=platform")
    assert "8 submissions" in text_of(driver, "found")
    screenshot_widths(driver, SHOTS / "console-platform-errors")
    driver.get(f"{base}/c/demo/")
    screenshot_widths(driver, SHOTS / "challenge")
