"""Headless Debian Chromium for the page tests: one way to start it, shared by every browser fixture.

Without ``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` a browser test is skipped, except in CI
(``CI=true``), where their absence is a failure (deploy/setup.sh installs both).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_SECONDS = 30


@contextlib.contextmanager
def chromium_driver(*, width: int = 1400, height: int = 1000, downloads: Path | None = None) -> Iterator[Any]:
    """A WebDriver for headless Chromium; ``downloads``: save downloads there without asking."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        reason = f"{CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)

    profile = tempfile.mkdtemp(prefix="readerboard-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    if downloads is not None:
        options.add_experimental_option("prefs", {
            "download.default_directory": str(downloads),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        })
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_SECONDS)
    if downloads is not None:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot_widths(driver: Any, stem: Path, widths: tuple[int, ...] = (1366, 400)) -> None:
    """The whole page at each width, saved as ``<stem>-<width>.png``; nothing may overflow sideways."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    for width in widths:
        driver.set_window_size(width, 1000)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(int(height) + 120, 6000))
        driver.save_screenshot(f"{stem}-{width}.png")
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{stem.name} at {width}px is {overflow}px wider than the window"
    driver.set_window_size(widths[0], 1000)


def page_wait(driver: Any, seconds: float = WAIT_SECONDS) -> Any:
    """A WebDriverWait whose checks may read a page that a click is replacing.  Chromium then answers
    "Node with given id does not belong to the document", a plain WebDriverException and not the
    stale-element error WebDriverWait ignores, which means "not yet": the wait tries again (CI under
    load failed two sign-up and log-in tests on it)."""
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException, WebDriverException))


def page_replaced(driver: Any, element: Any, seconds: float = WAIT_SECONDS) -> None:
    """Wait until the page that held ``element`` is gone: a form's answer has arrived.  A check for
    what the answer shows (a message) could otherwise pass on the page before it, which may carry
    an earlier action's message, and the next click land on a node about to go."""
    page_wait(driver, seconds).until(ec.staleness_of(element))
