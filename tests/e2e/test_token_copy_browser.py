"""A new API token's copy button, in headless Chromium: it puts the key on the clipboard (read back
from the real clipboard, with the page granted the permission); without a script there is no button
and the key is plain selectable text."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_digest
from tests.builders.cast import Cast
from tests.builders.chromium import WAIT_SECONDS, chromium_driver, screenshot_widths

SCREENSHOTS = Path(tempfile.gettempdir()) / "readerboard-token-copy"


@pytest.fixture
def chromium() -> Iterator[Any]:
    with chromium_driver(width=1366) as driver:
        yield driver


def make_token(driver: Any, base: str, name: str) -> str:
    wait = WebDriverWait(driver, WAIT_SECONDS)
    driver.get(f"{base}/accounts/login/?next=/accounts/tokens/")
    driver.find_element(By.ID, "id_username").send_keys("alice")
    driver.find_element(By.ID, "id_password").send_keys("alice-pw")
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait.until(ec.presence_of_element_located((By.ID, "token-name"))).send_keys(name)
    driver.find_element(By.ID, "token-create").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "new-token"), f"“{name}”"))
    return str(driver.find_element(By.ID, "token-key").text)


@pytest.mark.django_db(transaction=True)
def test_the_copy_button_puts_the_new_key_on_the_clipboard(cast: Cast, live_server, chromium) -> None:  # type: ignore[no-untyped-def]
    driver = chromium
    driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": live_server.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    key = make_token(driver, live_server.url, "laptop")
    assert ApiToken.objects.get(user=cast.alice, name="laptop").digest == api_token_digest(key)
    button = driver.find_element(By.ID, "token-copy")
    assert button.is_displayed() and button.text == "Copy"
    screenshot_widths(driver, SCREENSHOTS / "token-new")
    driver.find_element(By.ID, "token-copy").click()
    WebDriverWait(driver, WAIT_SECONDS).until(ec.text_to_be_present_in_element((By.ID, "token-copied"), "Copied."))
    # Read back from the system clipboard itself, not from the page's own variables.
    pasted = driver.execute_async_script(
        "var done = arguments[0]; navigator.clipboard.readText().then(done, function (e) { done('error: ' + e); });")
    assert pasted == key
    screenshot_widths(driver, SCREENSHOTS / "token-copied")


@pytest.mark.django_db(transaction=True)
def test_without_a_script_there_is_no_button_and_the_key_is_selectable_text(cast: Cast, live_server, chromium) -> None:  # type: ignore[no-untyped-def]
    driver = chromium
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    key = make_token(driver, live_server.url, "no-js")
    assert ApiToken.objects.get(user=cast.alice, name="no-js").digest == api_token_digest(key)
    assert not driver.find_element(By.ID, "token-copy").is_displayed()  # a button that could not work is not shown
    # One click selects the whole key (its "-" and "_" would stop a double click's word).
    driver.find_element(By.ID, "token-key").click()
    assert driver.execute_script("return window.getSelection().toString()") == key
    assert "A click on the key selects it whole" in driver.find_element(By.ID, "new-token").text
    screenshot_widths(driver, SCREENSHOTS / "token-new-no-script")
