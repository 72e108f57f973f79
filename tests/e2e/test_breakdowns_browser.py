"""The breakdowns in a browser: they read at 1366 and 400 px without sideways overflow.

The rules of what each viewer sees are in tests/leaderboard/test_breakdowns.py."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By

from tests.builders.breakdowns import FOR_ORGANIZERS, HIDDEN, submit
from tests.builders.cast import Cast
from tests.builders.chromium import screenshot_widths

SHOTS = Path(tempfile.gettempdir()) / "readerboard-breakdowns"


@pytest.mark.django_db(transaction=True)
def test_the_breakdown_reads_at_1366_and_400_px_without_sideways_overflow(
    cast: Cast, live_server: LiveServer, browser: Any  # noqa: F811
) -> None:
    dev = submit(cast, "dev")
    test = submit(cast, "test")
    client = Client()
    client.force_login(cast.alice)
    browser.get(f"{live_server.url}/")
    browser.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})
    browser.get(f"{live_server.url}/c/demo/submissions/{dev.pk}/")
    tables = browser.find_elements(By.CSS_SELECTOR, "#breakdowns table.breakdown")
    assert len(tables) == 2 and "answer length" in tables[0].text and "8+" in tables[0].text
    screenshot_widths(browser, SHOTS / "team-dev")
    browser.get(f"{live_server.url}/c/demo/submissions/{test.pk}/")
    assert HIDDEN in browser.find_element(By.ID, "breakdowns").text
    screenshot_widths(browser, SHOTS / "team-test")
    organizer = Client()
    organizer.force_login(cast.oscar)
    browser.add_cookie({"name": "sessionid", "value": organizer.cookies["sessionid"].value, "path": "/"})
    browser.get(f"{live_server.url}/c/demo/submissions/{test.pk}/")
    assert FOR_ORGANIZERS in browser.find_element(By.ID, "breakdowns").text
    screenshot_widths(browser, SHOTS / "organizer-test")
    assert all((SHOTS / f"{name}-{width}.png").exists() for name in ("team-dev", "team-test", "organizer-test")
               for width in (1366, 400))
