"""Account security in a browser: a crafted sign-up link lands on this site, and Alice manages her
API tokens on their page.  The rules themselves, without a browser, are in
tests/leaderboard/test_accounts_security.py."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_digest
from tests.builders.accounts import PASSWORD, token_id
from tests.builders.cast import Cast
from tests.builders.chromium import WAIT_SECONDS, chromium_driver, screenshot_widths

SCREENSHOTS = Path(tempfile.gettempdir()) / "readerboard-accounts-security"


@pytest.fixture
def chromium() -> Iterator[object]:
    with chromium_driver(width=1366) as driver:
        yield driver


def screenshot(driver, name: str) -> None:  # type: ignore[no-untyped-def]
    """The whole page at 1366 and 400 px; nothing may overflow sideways."""
    screenshot_widths(driver, SCREENSHOTS / name)


@pytest.mark.django_db(transaction=True)
def test_a_new_user_signing_up_from_a_crafted_link_lands_on_this_site(
    cast: Cast, live_server: LiveServer, chromium: Any
) -> None:
    driver = chromium
    driver.get(f"{live_server.url}/accounts/signup/?next=https://evil.example/")
    screenshot(driver, "signup")
    driver.find_element(By.ID, "id_username").send_keys("erin")
    driver.find_element(By.ID, "id_email").send_keys("erin@example.org")
    driver.find_element(By.ID, "id_password1").send_keys(PASSWORD)
    driver.find_element(By.ID, "id_password2").send_keys(PASSWORD)
    driver.find_element(By.ID, "signup-submit").click()
    WebDriverWait(driver, WAIT_SECONDS).until(
        ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "We sent a link to erin@example.org"))
    assert driver.current_url == f"{live_server.url}/"
    screenshot(driver, "signed-up-home")


@pytest.mark.django_db(transaction=True)
def test_alice_creates_rotates_and_revokes_her_tokens_in_a_browser(
    cast: Cast, live_server: LiveServer, chromium: Any
) -> None:
    driver = chromium
    wait = WebDriverWait(driver, WAIT_SECONDS)
    driver.get(f"{live_server.url}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys("alice")
    driver.find_element(By.ID, "id_password").send_keys("alice-pw")
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait.until(ec.presence_of_element_located((By.ID, "api-tokens-link"))).click()
    wait.until(ec.presence_of_element_located((By.ID, "token-create")))
    screenshot(driver, "tokens-none")

    for name in ("laptop", "submit script"):
        driver.find_element(By.ID, "token-name").send_keys(name)
        driver.find_element(By.ID, "token-create").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "new-token"), f"“{name}”"))
    first = driver.find_element(By.ID, "token-key").text
    assert ApiToken.objects.get(user=cast.alice, name="submit script").digest == api_token_digest(first)
    screenshot(driver, "tokens-created")

    laptop = token_id(cast.alice, "laptop")
    driver.find_element(By.CSS_SELECTOR, f"#token-{laptop} .token-rotate").click()
    wait.until(ec.alert_is_present()).accept()
    wait.until(ec.text_to_be_present_in_element((By.ID, "new-token"), "its old key no longer works"))
    second = driver.find_element(By.ID, "token-key").text
    assert second != first and ApiToken.objects.get(pk=laptop).digest == api_token_digest(second)
    screenshot(driver, "tokens-rotated")

    driver.get(f"{live_server.url}/accounts/tokens/")
    assert second not in driver.page_source and first not in driver.page_source
    assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#tokens .token-name")] == ["laptop", "submit script"]
    screenshot(driver, "tokens-have-two")

    driver.find_element(By.CSS_SELECTOR, f"#token-{laptop} .token-revoke").click()
    wait.until(ec.alert_is_present()).accept()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "Token revoked"))
    assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#tokens .token-name")] == ["submit script"]
    assert list(ApiToken.objects.filter(user=cast.alice).values_list("name", flat=True)) == ["submit script"]
    screenshot(driver, "tokens-revoked")
