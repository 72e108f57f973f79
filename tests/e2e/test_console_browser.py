"""An organizer runs the challenge from the console in a real browser, and the public board follows.

oscar finds another team's failed system run with its log, runs it again (the failure stays in its
history beside the new scores), reveals the sealed Split III dataset after reading what becomes
public, seals it again, and disqualifies the team; a second browser, signed in as nobody, reads the
public board after each step.  The worker's part of the re-run is played by the services a worker
calls (no engine in this lane).  Every console page is photographed at 1366 and 400 px
(``readerboard-console/*.png`` in the temporary folder) and must not overflow the window sideways.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.challenges.models import AuditEntry
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import ScoreHistory, Status, Submission, WorkerToken
from leaderboard.submissions.worker_api import worker_token_create
from tests.builders.browser import board_rows, sign_in
from tests.builders.cast import Cast
from tests.builders.chromium import WAIT_SECONDS, chromium_driver
from tests.builders.console import FAILED_LOG, bundle, console_world_build, run_as_worker

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(tempfile.gettempdir()) / "readerboard-console"
WIDTHS = (1366, 400)


@pytest.fixture
def browsers() -> Iterator[tuple[Any, Any]]:
    """The organizer's browser and the public's."""
    with chromium_driver(width=1366, height=1000) as organizer, chromium_driver(width=1366, height=1000) as public:
        yield organizer, public


def shoot(driver: Any, name: str) -> list[Path]:
    """The whole page at each width; nothing may overflow sideways (wide tables scroll in their box)."""
    SHOTS.mkdir(exist_ok=True)
    paths = []
    for width in WIDTHS:
        driver.set_window_size(width, 1000)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(int(height) + 120, 5000))
        path = SHOTS / f"{name}-{width}.png"
        driver.save_screenshot(str(path))
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} at {width}px is {overflow}px wider than the window"
        paths.append(path)
    driver.set_window_size(1366, 1000)
    return paths


def public_board(driver: Any, base: str) -> dict[str, list[str]]:
    """The public test board's rows by team, and its header cells (group, metric)."""
    driver.get(f"{base}/c/demo/board/test/")
    rows = {row[1].split(" (")[0].split("\n")[0]: row for row in board_rows(driver)}
    rows["__groups__"] = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#board thead th.group")]
    return rows


def confirm(driver: Any, wait: Any, reason: str) -> None:
    driver.find_element(By.ID, "id_reason").send_keys(reason)
    driver.find_element(By.ID, "confirm").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messages li.success")))


def test_an_organizer_reruns_reveals_seals_and_disqualifies_and_the_public_board_follows(
    cast: Cast, live_server: LiveServer, browsers: tuple[Any, Any]
) -> None:
    world = console_world_build(cast)
    organizer, public = browsers
    wait = WebDriverWait(organizer, WAIT_SECONDS)
    base = live_server.url
    before = public_board(public, base)
    assert "Charlie's" not in before and before["Alpha"][0] == "1"  # a failed participant run has no row
    assert "Hidden-07" in before["__groups__"] and "CoQA" not in public.page_source

    # The challenge page leads the organizer to the console; the submissions list, filtered to failures.
    sign_in(organizer, base, cast.oscar)
    organizer.get(f"{base}/c/demo/")
    organizer.find_element(By.CSS_SELECTOR, "#console-link a").click()
    wait.until(ec.presence_of_element_located((By.ID, "sealed-datasets")))
    shoot(organizer, "home")
    organizer.find_element(By.LINK_TEXT, "Submissions").click()
    Select(organizer.find_element(By.NAME, "status")).select_by_value("failed")
    organizer.find_element(By.ID, "filter-submit").click()
    wait.until(ec.url_contains("status=failed"))
    listed = organizer.find_element(By.ID, "submissions").text
    assert "Charlie's" in listed and "exited with code 3" in listed and "Alpha" not in listed
    shoot(organizer, "submissions")

    # The other team's failed run: the full reason and the log it wrote (which its team does not see).
    organizer.find_element(By.LINK_TEXT, str(world.charlie_run.pk)).click()
    wait.until(ec.presence_of_element_located((By.ID, "log")))
    assert "exited with code 3" in organizer.find_element(By.ID, "failure").text
    assert FAILED_LOG.splitlines()[1] in organizer.find_element(By.ID, "log").text

    # Run it again, after the confirmation says what will happen.
    organizer.find_element(By.ID, "rerun-link").click()
    wait.until(ec.presence_of_element_located((By.ID, "consequences")))
    assert "stays in its history" in organizer.find_element(By.ID, "consequences").text
    shoot(organizer, "confirm-rerun")
    confirm(organizer, wait, "the engine lost its disk during the run")
    assert organizer.find_element(By.ID, "status").text == "queued"
    run = Submission.objects.get(pk=world.charlie_run.pk)
    assert run.status == Status.QUEUED and run.attempts == 0

    # Meanwhile, the queue page shows it waiting; then a worker runs it (played by the services).
    organizer.get(f"{base}/c/demo/console/queue/")
    assert f"{run.pk}" in organizer.find_element(By.ID, "queue-systems").text
    held = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")
    assert submission_run_claim(held.pk, worker="systems@host-a:101") is not None  # shown running, with its lease
    # A compute worker that is idle shows by its token's name, with its last call to the platform.
    worker_token_create(name="gpu-host-1")
    WorkerToken.objects.filter(name="gpu-host-1").update(last_seen_at=timezone.now())
    organizer.refresh()
    workers = organizer.find_element(By.ID, "workers").text
    assert "systems@host-a:101" in workers and "gpu-host-1 (idle)" in workers
    assert "Systems (queue cpu, in the order workers start them)" in organizer.page_source
    shoot(organizer, "queue")
    Submission.objects.filter(pk=held.pk).update(status=Status.CANCELLED, lease_expires_at=None)

    organizer.get(f"{base}/c/demo/submissions/{run.pk}/")
    run_as_worker(run, worker="systems@host-b:7")
    # The page follows the status by itself: both results, the new scores and the failure in the history.
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "finished"))
    assert "100.00" in organizer.find_element(By.ID, "scores").text
    history = organizer.find_element(By.ID, "score-history").text
    assert "run again by oscar: the engine lost its disk during the run" in history
    assert "it had failed (crashed): exited with code 3" in history
    assert ScoreHistory.objects.filter(submission=run).count() == 1
    board = public_board(public, base)
    assert board["Charlie's"][0] == "1" and board["Alpha"][0] == "2"  # the board takes the newest result
    shoot(organizer, "submission-history")

    # A prediction file scored again: eager here, so its page shows the new scores and the old ones at once.
    organizer.get(f"{base}/c/demo/console/submissions/?kind=predictions&phase=dev")
    row = organizer.find_element(By.ID, f"submission-{world.alpha_dev.pk}")
    row.find_element(By.PARTIAL_LINK_TEXT, "Score again").click()
    wait.until(ec.presence_of_element_located((By.ID, "consequences")))
    assert "scored again from its stored upload" in organizer.find_element(By.ID, "consequences").text
    confirm(organizer, wait, "scorer 1.3 fixes a tokenisation bug")
    assert organizer.find_element(By.ID, "status").text == "finished"
    assert "scored again by oscar: scorer 1.3" in organizer.find_element(By.ID, "score-history").text
    assert ScoreHistory.objects.filter(submission=world.alpha_dev).count() == 1

    # Reveal CoQA: the confirmation shows what becomes public, row by row, before anything changes.
    organizer.get(f"{base}/c/demo/console/")
    organizer.find_element(By.ID, "reveal-coqa").click()
    wait.until(ec.presence_of_element_located((By.ID, "reveal-preview")))
    preview = organizer.find_element(By.ID, "reveal-preview").text
    assert "Hidden-07 → CoQA" in preview and "CoQA F1 67.89" in preview and "CoQA F1 100.00" in preview
    assert "Macro F1" in preview
    assert "CoQA" not in public_board(public, base)["__groups__"]  # nothing changed yet
    shoot(organizer, "confirm-reveal")
    confirm(organizer, wait, "the workshop has presented the results")
    board = public_board(public, base)
    assert "CoQA" in board["__groups__"] and "Hidden-07" not in board["__groups__"]
    assert "67.89" in board["Alpha"] and "100.00" in board["Charlie's"]

    # Seal it again: the alias and the withholding are back.
    organizer.find_element(By.ID, "unreveal-coqa").click()
    wait.until(ec.presence_of_element_located((By.ID, "consequences")))
    confirm(organizer, wait, "revealed a week early by mistake")
    board = public_board(public, base)
    assert "Hidden-07" in board["__groups__"] and "CoQA" not in public.page_source and "67.89" not in board["Alpha"]

    # Disqualify Charlie's: unranked on the board, with the reason, for everyone to read.
    organizer.get(f"{base}/c/demo/console/teams/")
    shoot(organizer, "teams")
    organizer.find_element(By.ID, f"disqualify-team-{cast.charlies.pk}").click()
    wait.until(ec.presence_of_element_located((By.ID, "consequences")))
    assert "for everyone to read" in organizer.find_element(By.ID, "consequences").text
    shoot(organizer, "confirm-disqualify")
    confirm(organizer, wait, "one person behind two teams")
    board = public_board(public, base)
    assert board["Alpha"][0] == "1" and board["Charlie's"][0] == "—"
    assert "disqualified: one person behind two teams" in board["Charlie's"][1]

    # The audit log has each step: who, what, when, why.
    organizer.get(f"{base}/c/demo/console/audit/")
    audit = organizer.find_element(By.ID, "audit").text
    # Under the names of the buttons that did them (the recorded key is the cell's title).
    for action, reason in (("Run again", "the engine lost its disk"), ("Reveal", "presented"),
                           ("Seal again", "a week early"), ("Disqualify the team", "two teams")):
        assert action in audit and reason in audit, action
    assert AuditEntry.objects.filter(actor=cast.oscar).count() == 5  # and the prediction file scored again
    shoot(organizer, "audit")

    # An announcement, and the page that posts it.
    organizer.get(f"{base}/c/demo/console/announce/")
    organizer.find_element(By.ID, "id_text").send_keys("The test phase is extended by one day.")
    shoot(organizer, "confirm-announce")
    confirm(organizer, wait, "the server was down on Sunday")
    public.get(f"{base}/c/demo/")
    assert "The test phase is extended by one day." in public.find_element(By.ID, "announcements").text
    shoot(public, "challenge-announcement")

    # The team reads why on its own pages.
    sign_in(public, base, cast.charlie)
    public.get(f"{base}/c/demo/submissions/{run.pk}/")
    assert "one person behind two teams" in public.find_element(By.ID, "team-standing").text
    assert FAILED_LOG.splitlines()[1] not in public.page_source
    shoot(public, "team-submission-disqualified")
