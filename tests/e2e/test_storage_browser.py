"""The storage budget as people read it, in a real browser: the challenge page states it, the upload
page shows what the team's files take, a refused upload says why, and a freed file's page says so.

Headless Chromium against the live server, at 1366 and 400 px (screenshots in the temporary folder,
``readerboard-storage-*.png``).  Skipped without ``chromium`` and ``chromium-driver``, except in CI.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.submissions.models import Submission
from tests.builders.browser import screenshot, sign_in
from tests.builders.cast import Cast
from tests.builders.chromium import WAIT_SECONDS
from tests.builders.storage import finish, post_id, weights
from tests.builders.systems import TEST_LIMITS, system_phases

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_budget_is_stated_used_refused_and_a_freed_file_is_explained(
    cast: Cast, live_server: LiveServer, browser: Any, tmp_path: Path  # noqa: F811
) -> None:
    system_phases(cast)
    cast.challenge.system_settings = {"limits": TEST_LIMITS, "storage_mb_per_team": 1}
    cast.challenge.save()
    old, kept = post_id(cast, weights(400 * 1024), "alice"), post_id(cast, weights(300 * 1024), "alice")
    finish(old, score=10, days_ago=60)
    finish(kept, score=20, days_ago=50)
    driver = browser
    base = live_server.url
    sign_in(driver, base, cast.alice)

    driver.get(f"{base}/c/demo/")
    budget = driver.find_element(By.ID, "storage-budget").text
    assert "each team may keep 1.0 MiB of uploads in this challenge" in budget
    screenshot(driver, "readerboard-storage-challenge", 1366)
    screenshot(driver, "readerboard-storage-challenge", 400)

    driver.get(f"{base}/c/demo/submit/system/")
    assert "your team's stored uploads take 700.4 KiB of its 1.0 MiB" in driver.find_element(By.ID, "storage-usage").text
    too_big = tmp_path / "too-big.zip"
    too_big.write_bytes(weights(500 * 1024))
    Select(driver.find_element(By.NAME, "phase")).select_by_value(str(cast.dev.pk))
    Select(driver.find_element(By.NAME, "kind")).select_by_value("code_bundle")
    driver.find_element(By.NAME, "file").send_keys(str(too_big))
    driver.find_element(By.ID, "system-submit").click()
    WebDriverWait(driver, WAIT_SECONDS).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".errorlist")))
    assert len(driver.find_elements(By.CSS_SELECTOR, ".errorlist")) == 1, "the refusal is shown once"
    error = driver.find_element(By.CSS_SELECTOR, ".errorlist").text
    assert "storage budget: team Alpha's stored uploads take 700.4 KiB of its 1.0 MiB" in error
    assert Submission.objects.count() == 2
    screenshot(driver, "readerboard-storage-refused", 1366)
    screenshot(driver, "readerboard-storage-refused", 400)

    call_command("storage_retain", "--older-than", "30", "--keep-newest", "1", stdout=io.StringIO())
    assert not Submission.objects.get(pk=old).file
    driver.get(f"{base}/c/demo/submissions/{old}/")
    freed = driver.find_element(By.ID, "file-freed").text
    assert "system.zip: the uploaded file (400.2 KiB) was deleted by the organizers' storage retention on " \
           f"{timezone.now():%Y-%m-%d}" in freed
    screenshot(driver, "readerboard-storage-freed", 1366)
    screenshot(driver, "readerboard-storage-freed", 400)
    driver.get(f"{base}/c/demo/submit/system/")
    assert "take 300.2 KiB of its 1.0 MiB" in driver.find_element(By.ID, "storage-usage").text
    finished_at = Submission.objects.get(pk=kept).finished_at
    assert finished_at is not None and dt.timedelta(0) <= timezone.now() - finished_at  # untouched row
