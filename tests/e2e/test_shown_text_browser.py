"""A participant names a team with a text-direction override on the team page, in a real browser:
the page says which character and where, keeps the form, and no team is made.  Photographed at
1366 and 400 px (``readerboard-data-page/shown-text-*.png`` in the temporary folder)."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from leaderboard.accounts.models import Team
from tests.builders.browser import screenshot, sign_in
from tests.builders.cast import Cast
from tests.builders.chromium import WAIT_SECONDS, page_replaced

pytestmark = pytest.mark.django_db(transaction=True)

SPOOF = "Alpha\u202eahplA"


def test_the_team_page_says_which_character_a_name_may_not_hold(
    cast: Cast, live_server: Any, browser: Any
) -> None:
    driver, base = browser, live_server.url
    sign_in(driver, base, cast.dave)
    driver.get(f"{base}/c/demo/team/")
    driver.find_element(By.ID, "id_name").send_keys(SPOOF)
    button = driver.find_element(By.ID, "create-team")
    button.click()
    page_replaced(driver, button)
    error = WebDriverWait(driver, WAIT_SECONDS).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, ".messages li.error")))
    assert error.text == (
        "the team's name holds the text-direction control U+202E at character 6: use visible characters only")
    assert driver.find_element(By.ID, "create-team").is_displayed()  # the form is there to try again
    for width in (1366, 400):
        screenshot(driver, "shown-text-refused", width)
    assert not Team.objects.filter(challenge=cast.challenge, name=SPOOF).exists()
