"""The budget tracks page in headless Chromium at 1366 and 400 px: tracks, the charts, the figures.

Screenshots go to $TMPDIR/readerboard-budgets/; no page may be wider than the window.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from leaderboard.challenges.budget_tracks import budget_tracks_parse
from tests.builders.browser import sign_in
from tests.builders.budget_runs import budget_run
from tests.builders.cast import Cast
from tests.builders.chromium import chromium_driver, screenshot_widths
from tests.builders.systems import system_phases

SCREENSHOTS = Path(tempfile.gettempdir()) / "readerboard-budgets"

pytestmark = pytest.mark.django_db(transaction=True)

# (team, peak MiB, seconds, bundle KiB, every n-th answer wrong): a spread with a frontier to draw.
SYSTEMS = [("Tiny Distilled QA", 90, 20.0, 60, 3), ("Medium Reader", 300, 45.0, 400, 6),
           ("Large Ensemble of Long Name Readers", 900, 160.0, 2400, 0), ("Wasteful", 1200, 200.0, 3000, 4),
           ("Lean Baseline", 150, 30.0, 120, 2)]


@pytest.fixture
def chromium() -> Iterator[Any]:
    with chromium_driver(width=1366) as driver:
        yield driver


def test_the_budget_page_shows_tracks_and_a_frontier_at_both_widths(cast: Cast, live_server: Any, chromium: Any,
                                                                   tmp_path: Path) -> None:
    system_phases(cast)
    cast.dev.budget_tracks = budget_tracks_parse(
        [{"name": "Small (1 MiB, 256 MiB memory)", "image_mib": 1, "peak_memory_mib": 256},
         {"name": "Open", "image_mib": 4096}], where="test")
    cast.dev.save()
    for team, peak, seconds, kib, wrong in SYSTEMS:
        budget_run(phase=cast.dev, team_name=team, tmp=tmp_path, peak_mib=peak, seconds=seconds, pad_kib=kib,
                   wrong_every=wrong)
    driver = chromium
    driver.get(f"{live_server.url}/c/{cast.challenge.slug}/board/dev/budgets/")
    main = driver.find_element(By.TAG_NAME, "main")
    assert "over budget" in main.text and "Small (1 MiB, 256 MiB memory)" in main.text
    charts = driver.find_elements(By.CSS_SELECTOR, "figure.budget-chart svg")
    assert len(charts) == 3  # image size, memory, time per 1,000 questions (batch runs: no latency)
    assert driver.find_elements(By.CSS_SELECTOR, "#chart-peak_memory_mib circle.frontier-point")
    screenshot_widths(driver, SCREENSHOTS / "budgets")
    # At 400 px the chart fits the window (scaled by its viewBox), not cut or scrolled.
    driver.set_window_size(400, 1000)
    width = driver.execute_script("return document.querySelector('#chart-image_mib svg').getBoundingClientRect().width")
    assert 0 < width <= 400
    driver.find_element(By.ID, "chart-peak_memory_mib").screenshot(str(SCREENSHOTS / "budgets-chart-400.png"))
    driver.set_window_size(1366, 1000)
    # The board links to it; the upload page offers the track a system is meant for.
    driver.get(f"{live_server.url}/c/{cast.challenge.slug}/board/dev/")
    driver.find_element(By.CSS_SELECTOR, "#budgets-link a").click()
    assert driver.current_url.endswith("/board/dev/budgets/")
    driver.get(f"{live_server.url}/c/{cast.challenge.slug}/board/dev/")
    screenshot_widths(driver, SCREENSHOTS / "board")
    sign_in(driver, live_server.url, cast.alice)
    driver.get(f"{live_server.url}/c/{cast.challenge.slug}/submit/system/")
    assert driver.find_element(By.ID, "id_track").is_displayed()
    screenshot_widths(driver, SCREENSHOTS / "submit-system")
