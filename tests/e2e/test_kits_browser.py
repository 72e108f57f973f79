"""The Data page and the contract of every demo challenge whose kit changed (issue 25), in a real browser.

A team member opens each Data page (the kit's link) and the challenge page (the system contract, whose
example of a sealed input name is the one a run reads), at 1366 and 400 px; the screenshots are for
people to look at, the assertions for what must hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from leaderboard.accounts.services import team_create
from leaderboard.challenges.selectors import sealed_input_example
from leaderboard.submissions.reload import challenge_load
from tests.builders.browser import screenshot
from tests.builders.chromium import WAIT_SECONDS, chromium_driver

REPO = Path(__file__).resolve().parents[2]
CHANGED = ("mrqa-demo", "mrc2018-demo", "quac-demo", "coqa-demo")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def chromium() -> Iterator[object]:
    with chromium_driver(width=1366) as driver:
        yield driver


def test_the_data_pages_and_contracts_of_the_changed_kits(live_server, chromium) -> None:  # type: ignore[no-untyped-def]
    User.objects.create_user("organizer")
    alice = User.objects.create_user("alice", password="alice-pw")
    challenges = [challenge_load(spec_path=REPO / "deploy" / "demo" / f"{slug}.yaml") for slug in CHANGED]
    for challenge in challenges:
        team_create(challenge=challenge, owner=alice, name=f"Alpha {challenge.slug}")
    driver = chromium
    driver.get(f"{live_server.url}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys("alice")
    driver.find_element(By.ID, "id_password").send_keys("alice-pw")
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    WebDriverWait(driver, WAIT_SECONDS).until(ec.url_changes(f"{live_server.url}/accounts/login/"))
    for challenge in challenges:
        driver.get(f"{live_server.url}/c/{challenge.slug}/data/")
        main = driver.find_element(By.TAG_NAME, "main").text
        assert "starting kit" in main.lower(), challenge.slug
        screenshot(driver, f"kits-data-{challenge.slug}", 1366)
        screenshot(driver, f"kits-data-{challenge.slug}", 400)
        driver.get(f"{live_server.url}/c/{challenge.slug}/")
        page = driver.find_element(By.TAG_NAME, "main").text
        assert "hidden-07" not in page
        example = sealed_input_example(challenge=challenge)
        if example and "/input/manifest.json" in page:
            assert example in page, (challenge.slug, example)
        screenshot(driver, f"kits-challenge-{challenge.slug}", 1366)
        screenshot(driver, f"kits-challenge-{challenge.slug}", 400)

    # The archive of published results has no data: its Data page offers no kit and says why, and its
    # board dates the published results as published.
    challenge_load(spec_path=REPO / "deploy" / "demo" / "mrqa2019-archive.yaml")
    driver.get(f"{live_server.url}/c/mrqa2019/data/")
    main = driver.find_element(By.TAG_NAME, "main").text
    assert "This challenge has no data files, so it has no starting kit either." in main
    assert not driver.find_elements(By.ID, "starting-kit") and "starting-kit.zip" not in driver.page_source
    screenshot(driver, "kits-data-mrqa2019", 1366)
    screenshot(driver, "kits-data-mrqa2019", 400)
