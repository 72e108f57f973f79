"""Page helpers for the browser tests: the board's rows, a logged-in driver, a whole-page screenshot."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.test import Client
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.builders.chromium import page_replaced


def board_rows(driver) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in driver.find_elements(By.CSS_SELECTOR, "#board tbody tr")
    ]


SCREENSHOTS = Path(tempfile.gettempdir()) / "readerboard-data-page"


def screenshot(driver, name: str, width: int) -> Path:  # type: ignore[no-untyped-def]
    """The whole page at ``width`` px (the window grows to the page's height)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    driver.set_window_size(width, 1000)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(int(height) + 120, 6000))
    path = SCREENSHOTS / f"{name}-{width}.png"
    driver.save_screenshot(str(path))
    # Nothing overflows the page sideways: wide tables scroll inside their own box.
    overflow = driver.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name} at {width}px is {overflow}px wider than the window"
    driver.set_window_size(1366, 1000)
    return path


# The judging tests' photographs (tests/e2e/test_judging*_browser.py).
JUDGING_SHOTS = Path(tempfile.gettempdir()) / "readerboard-judging"


def sign_in(driver: Any, base: str, user: Any) -> None:
    """``user``'s session in the browser, without the login form (the accounts tests use the form)."""
    client = Client()
    client.force_login(user)
    driver.get(f"{base}/")
    driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})


def confirm(driver: Any, wait: Any, reason: str) -> None:
    driver.find_element(By.ID, "id_reason").send_keys(reason)
    button = driver.find_element(By.ID, "confirm")
    button.click()
    page_replaced(driver, button)  # the answer's, not the form's page (which may show an earlier message)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messages li.success")))
