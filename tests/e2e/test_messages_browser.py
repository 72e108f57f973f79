"""Issue 16's pages in a real browser: a board row's coverage, the upload forms' phase names and
errors (each once, one per dataset), the submission page's labels and the "Split I F1" column.

The demo cast's test phase takes prediction files and ranks on XQuAD-en and the sealed CoQA
(``ranking: {incomplete: zero}``): a prediction row answers 1 of the 2 ranked datasets.
Screenshots at 1366 and 400 px wide go to the temporary directory (readerboard-issue16-*.png).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.challenges.models import Challenge, SubmissionKind
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.browser import board_rows, sign_in
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.chromium import WAIT_SECONDS
from tests.builders.uploads import first_qids

SHOTS = Path(tempfile.gettempdir())
WIDTHS = (1366, 400)

pytestmark = pytest.mark.django_db(transaction=True)


def shoot(driver, name: str) -> None:  # type: ignore[no-untyped-def]
    for width in WIDTHS:
        driver.set_window_size(width, 1100)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(max(height + 120, 600), 4000))
        driver.save_screenshot(str(SHOTS / f"readerboard-issue16-{name}-{width}.png"))
    driver.set_window_size(1366, 1100)


def test_issue16_pages_in_a_browser(cast: Cast, live_server, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    driver, base = browser, live_server.url
    # Ranked on the full average, CoQA's 0 included ("isolating", the default before issue 22).
    Challenge.objects.filter(pk=cast.challenge.pk).update(sealed_aggregates="isolating")
    # Alpha's prediction file on the test phase answers XQuAD-en only; Charlie's system answered both.
    submission_create_predictions(team=cast.alpha, phase=cast.test, user=cast.alice,
                                  upload=upload(gold_predictions("test")),
                                  limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    run = Submission.objects.create(team=cast.charlies, phase=cast.test, kind=SubmissionKind.DOCKER_IMAGE,
                                    status=Status.SCORING)
    datasets = {d.slug: d for d in cast.challenge.datasets.all()}
    scores_write(submission=run, results={
        datasets["xquad-en"]: DatasetResult(metrics={"f1": 80.0, "em": 70.0}, per_example=[]),
        datasets["coqa"]: DatasetResult(metrics={"f1": 60.0, "em": 50.0}, per_example=[]),
    })
    driver.get(f"{base}/c/demo/board/test/")
    rows = board_rows(driver)
    assert [(r[0], " ".join(r[1].split())) for r in rows] == [("1", "Charlie's"), ("2", "Alpha 1 of 2 datasets")]
    tag = driver.find_element(By.CSS_SELECTOR, "#board .tag.coverage")
    assert tag.is_displayed() and tag.text == "1 of 2 datasets"
    assert "each one a row did not answer counts 0" in driver.find_element(By.ID, "ranking").text
    shoot(driver, "board-coverage")
    # Under "incomplete: unranked" the same row is shown unranked, with the reason in full.
    Challenge.objects.filter(pk=cast.challenge.pk).update(ranking_scope={"incomplete": "unranked"})
    driver.get(f"{base}/c/demo/board/test/")
    assert [r[0] for r in board_rows(driver)] == ["1", "—"]
    reason = driver.find_element(By.CSS_SELECTOR, "#board .excluded-reason")
    assert reason.is_displayed() and reason.text.startswith("answered 1 of the 2 ranked datasets")
    shoot(driver, "board-unranked")
    Challenge.objects.filter(pk=cast.challenge.pk).update(ranking_scope={"incomplete": "zero"})

    # The upload form: phase names, and an upload refused for two datasets names both, once each.
    sign_in(driver, base, cast.alice)
    driver.get(f"{base}/c/demo/submit/")
    phase = Select(driver.find_element(By.ID, "id_phase"))
    assert [o.text for o in phase.options] == ["---------", "Dev", "Test"]
    preds = gold_predictions()
    for qid in first_qids(7):
        del preds["squad"][qid]
    preds["xquad-en"]["bogus-1"] = "x"
    bad = tmp_path / "preds.json"
    bad.write_text(json.dumps(preds))
    phase.select_by_visible_text("Dev")
    driver.find_element(By.ID, "id_file").send_keys(str(bad))
    driver.find_element(By.ID, "upload-submit").click()
    # The click returns before the answer to the form's POST is shown (CI once read the form before it).
    WebDriverWait(driver, WAIT_SECONDS).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".errorlist li")))
    errors = [li.text for li in driver.find_elements(By.CSS_SELECTOR, ".errorlist li")]
    assert len(errors) == 2, errors
    assert errors[0].startswith("preds.json [squad]: 7 question(s) have no prediction")
    assert errors[1].startswith("preds.json [xquad-en]: 1 id(s) are not questions of this dataset")
    main = driver.find_element(By.TAG_NAME, "main").text
    assert main.count("7 question(s) have no prediction") == 1 and main.count("bogus-1") == 1
    shoot(driver, "upload-errors")
    for each in (cast.dev, cast.test):  # the system form lists only phases that take systems
        each.allowed_kinds = ["predictions", "docker_image", "code_bundle"]
        each.save()
    driver.get(f"{base}/c/demo/submit/system/")
    assert [o.text for o in Select(driver.find_element(By.ID, "id_phase")).options] == ["---------", "Dev", "Test"]
    shoot(driver, "system-form")

    # A finished dev submission: the board's labels on its page, and the Split I column on the board.
    good = tmp_path / "good.json"
    good.write_text(json.dumps(gold_predictions(wrong_every=5)))
    driver.get(f"{base}/c/demo/submit/")
    Select(driver.find_element(By.ID, "id_phase")).select_by_visible_text("Dev")
    driver.find_element(By.ID, "id_file").send_keys(str(good))
    driver.find_element(By.ID, "upload-submit").click()
    # The upload redirects to the submission page; wait for its scores before reading them.
    WebDriverWait(driver, WAIT_SECONDS).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#scores tr:nth-child(2)")))
    labels = [row.find_elements(By.TAG_NAME, "td")[1].text for row in
              driver.find_elements(By.CSS_SELECTOR, "#scores tr")[1:]]
    assert labels[:4] == ["Macro F1", "Macro EM", "Split I F1", "Split II F1"]
    assert not [label for label in labels if "_" in label]
    shoot(driver, "submission-labels")
    driver.get(f"{base}/c/demo/board/dev/")
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#board thead tr:nth-child(2) th")]
    assert heads[:4] == ["Macro F1", "Macro EM", "Split I F1", "Split II F1"]
    shoot(driver, "board-split-i")
