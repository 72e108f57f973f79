"""Pages that say what they mean, in a real browser: upload links only where a phase takes that
kind, the forms' phase lists, and what each average covers; each page shot at 1366 and 400 px."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from tests.builders.browser import sign_in
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.chromium import screenshot_widths

SHOTS = Path(tempfile.gettempdir()) / "readerboard-pages"

pytestmark = pytest.mark.django_db(transaction=True)


def test_links_forms_and_averages_say_what_they_mean(cast: Cast, live_server, browser) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, live_server.url
    cast.challenge.ranking_scope = {"splits": ["II", "III"]}
    cast.challenge.save()
    cast.test.allowed_kinds = ["docker_image", "code_bundle"]  # the test phase takes systems only
    cast.test.save()
    first = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                          upload=upload(gold_predictions(wrong_every=4)),
                                          limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(first.pk)
    sign_in(driver, base, cast.alice)

    driver.get(f"{base}/c/demo/")
    accepts = [row.find_elements(By.TAG_NAME, "td")[5].text for row in
               driver.find_elements(By.CSS_SELECTOR, "#phases tr")[1:]]
    assert accepts == ["prediction files", "Docker images or code bundles"]
    screenshot_widths(driver, SHOTS / "challenge")

    driver.get(f"{base}/c/demo/submit/")
    assert [o.text for o in Select(driver.find_element(By.ID, "id_phase")).options] == ["---------", "Dev"]
    screenshot_widths(driver, SHOTS / "submit")
    driver.get(f"{base}/c/demo/submit/system/")
    assert [o.text for o in Select(driver.find_element(By.ID, "id_phase")).options] == ["---------", "Test"]
    screenshot_widths(driver, SHOTS / "submit-system")

    driver.get(f"{base}/c/demo/board/dev/")
    covers = driver.find_element(By.ID, "averages").text
    assert "SQuAD (Split I) is not in it" in covers
    screenshot_widths(driver, SHOTS / "board-dev")

    for phase in (cast.dev, cast.test):
        phase.allowed_kinds = ["docker_image", "code_bundle"]
        phase.save()
    driver.get(f"{base}/c/demo/")
    assert "Submit predictions" not in driver.find_element(By.TAG_NAME, "main").text
    screenshot_widths(driver, SHOTS / "challenge-systems-only")
    driver.get(f"{base}/c/demo/submit/")  # followed from elsewhere: the system form, saying why
    assert driver.current_url.endswith("/c/demo/submit/system/")
    assert "does not take prediction files" in driver.find_element(By.TAG_NAME, "main").text \
        or "does not take prediction files" in driver.page_source
    screenshot_widths(driver, SHOTS / "submit-redirected")
