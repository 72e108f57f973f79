"""The organizer's submission page lists a retried run's attempts, and the team's lists none of
the attempt the platform lost; photographed at 1366 and 400 px (``readerboard-attempts/*.png`` in the
temporary folder), where neither page may overflow the window sideways.  The workers' part is played
by the services a worker and the reaper call (no engine in this lane)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import (
    submission_run_claim,
    submission_run_platform_failure,
    submissions_reap,
)
from tests.builders.browser import sign_in
from tests.builders.cast import Cast
from tests.builders.chromium import chromium_driver
from tests.builders.runs import bundle, gold_outputs, outcome
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(tempfile.gettempdir()) / "readerboard-attempts"
WIDTHS = (1366, 400)
LOST_WORKER = "compute-eu-1/gpu-node-17.internal:31337"


def shoot(driver: Any, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    for width in WIDTHS:
        driver.set_window_size(width, 1000)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(int(height) + 120, 5000))
        driver.save_screenshot(str(SHOTS / f"{name}-{width}.png"))
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} at {width}px is {overflow}px wider than the window"


def test_the_organizer_reads_every_attempt_and_the_team_only_its_own(  # type: ignore[no-untyped-def]
    cast: Cast, live_server, settings,
) -> None:
    settings.MAX_RUN_ATTEMPTS = 3
    system_phases(cast)
    run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    submission_run_claim(run.pk, worker=LOST_WORKER)
    submissions_reap(dead_workers=[LOST_WORKER])
    submission_run_claim(run.pk, worker="compute-eu-2/cpu-node-3.internal:4711")
    submission_run_platform_failure(run.pk, attempt=2, reason="engine unreachable",
                                    detail="Traceback (most recent call last):\n  docker.errors.APIError: 500")
    plan = submission_run_claim(run.pk, worker="compute-eu-2/cpu-node-3.internal:4712")
    assert plan is not None
    submission_run_finish(run.pk, attempt=3, outcome=outcome(outputs=gold_outputs(plan), duration_s=12.34,
                                                             peak_memory_bytes=180 * 2**20))
    with chromium_driver(width=1366, height=1000) as driver:
        sign_in(driver, live_server.url, cast.oscar)
        driver.get(f"{live_server.url}/c/demo/submissions/{run.pk}/")
        rows = driver.find_elements(By.CSS_SELECTOR, "#attempts tr.attempt")
        assert [r.get_attribute("data-number") for r in rows] == ["1", "2", "3"]
        assert LOST_WORKER in rows[0].text and "worker lost" in rows[0].text and "scored" in rows[2].text
        shoot(driver, "organizer")
    with chromium_driver(width=1366, height=1000) as driver:
        sign_in(driver, live_server.url, cast.alice)
        driver.get(f"{live_server.url}/c/demo/submissions/{run.pk}/")
        rows = driver.find_elements(By.CSS_SELECTOR, "#attempts tr.attempt")
        assert [r.get_attribute("data-number") for r in rows] == ["1"] and "scored" in rows[0].text
        assert "gpu-node-17" not in driver.page_source and "engine unreachable" not in driver.page_source
        shoot(driver, "team")
