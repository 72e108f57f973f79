"""A human evaluation round in real browsers: the organizer creates an MRC2018 round over three
submissions from the console, invites two judges and opens it; jane and jim judge every answer in
Chromium with the keyboard only; the organizer closes and publishes it, reads the results, and the
public board shows the Human column.  Pages are photographed at 1366 and 400 px
(``readerboard-judging/*.png`` in the temporary folder) and must not overflow sideways."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.judging.models import Judgment, Round, RoundState
from leaderboard.judging.results import round_human_scores
from tests.builders.browser import JUDGING_SHOTS as SHOTS
from tests.builders.browser import confirm, sign_in
from tests.builders.chromium import WAIT_SECONDS, chromium_driver, page_replaced, page_wait, screenshot_widths
from tests.builders.judging import MrcWorld, mrc_world_build, mrc_world_check

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _files() -> set[Path]:
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


@pytest.fixture
def world() -> Iterator[MrcWorld]:
    before = _files()
    try:
        built = mrc_world_build()  # transactional: the uploads are scored as they commit
        mrc_world_check(built)
        yield built
    finally:
        for path in _files() - before:
            path.unlink(missing_ok=True)


def judge_with_keys(driver: Any, base: str, world: MrcWorld, round: Round, keys: Iterator[str], shots: str) -> int:
    """Judge every answer given to the signed-in judge by pressing the scores' keys; returns how many."""
    # The key press replaces the page: a check that reads it meanwhile finds its node gone ("not yet").
    wait = page_wait(driver)
    driver.get(f"{base}/c/{world.challenge.slug}/judge/{round.pk}/")
    done = 0
    while driver.find_elements(By.ID, "judgment-form"):
        if done == 0:
            screenshot_widths(driver, SHOTS / shots)
        before = driver.find_element(By.ID, "progress").text
        driver.find_element(By.TAG_NAME, "body").send_keys(next(keys))
        wait.until(lambda d, was=before: d.find_element(By.ID, "progress").text != was)
        done += 1
    assert driver.find_elements(By.ID, "all-done")
    return done


def test_an_mrc2018_round_is_judged_in_chromium_and_published_on_the_board(world: MrcWorld,
                                                                             live_server: LiveServer) -> None:
    base, slug = live_server.url, world.challenge.slug
    with chromium_driver(width=1366, height=1000) as organizer:
        wait = WebDriverWait(organizer, WAIT_SECONDS)
        sign_in(organizer, base, world.organizer)
        organizer.get(f"{base}/c/{slug}/console/")
        organizer.find_element(By.LINK_TEXT, "Human evaluation").click()
        wait.until(ec.presence_of_element_located((By.ID, "invite-form")))
        for who in ("jane@example.org", "jim"):
            organizer.find_element(By.ID, "id_user").send_keys(who)
            invite = organizer.find_element(By.ID, "invite")
            invite.click()
            page_replaced(organizer, invite)  # the page before it shows the last invitation's message too
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messages li.success")))
        organizer.find_element(By.ID, "new-round").click()
        wait.until(ec.presence_of_element_located((By.ID, "round-form")))
        assert "perfectly answers the question" in organizer.find_element(By.ID, "id_guideline").get_attribute("value")
        Select(organizer.find_element(By.ID, "id_phase")).select_by_value("dev")
        organizer.find_element(By.CSS_SELECTOR, "input[name=systems_from][value=chosen]").click()
        for pk in world.system_ids:
            organizer.find_element(By.CSS_SELECTOR, f"input[name=submissions][value='{pk}']").click()
        questions = organizer.find_element(By.ID, "id_questions")
        questions.clear()
        questions.send_keys("8")
        organizer.find_element(By.ID, "id_seed").send_keys("2018")
        Select(organizer.find_element(By.ID, "id_stratify_by")).select_by_value("question_type")
        screenshot_widths(organizer, SHOTS / "round-new")
        organizer.find_element(By.ID, "create").click()
        wait.until(ec.presence_of_element_located((By.ID, "open-round")))
        round = Round.objects.get()
        assert round.items.count() == 8
        organizer.find_element(By.ID, "open-round").click()
        confirm(organizer, wait, "pilot round")
        assert Round.objects.get().state == RoundState.OPEN

        # Two judges, each in a browser of their own, with the keyboard only.  jane gives 4s and
        # 5s, jim mostly agrees and now and then scores one point lower, or three.
        with chromium_driver(width=1366, height=1000) as jane_browser:
            sign_in(jane_browser, base, world.jane)
            jane_keys = iter("45" * 40)
            n_jane = judge_with_keys(jane_browser, base, world, round, jane_keys, "judge")
        with chromium_driver(width=1366, height=1000) as jim_browser:
            sign_in(jim_browser, base, world.jim)
            jim_keys = iter("4515" * 20)
            n_jim = judge_with_keys(jim_browser, base, world, round, jim_keys, "judge-jim")
        assert n_jane == n_jim == 16 and Judgment.objects.count() == 32  # 8 questions x 2 distinct answers

        organizer.get(f"{base}/c/{slug}/console/judging/{round.pk}/")
        assert "32 of 32 judgments" in organizer.find_element(By.ID, "progress").text
        screenshot_widths(organizer, SHOTS / "round")
        organizer.find_element(By.ID, "close-round").click()
        confirm(organizer, wait, "all judged")
        organizer.find_element(By.ID, "results-link").click()
        wait.until(ec.presence_of_element_located((By.ID, "table-agreement")))
        assert organizer.find_element(By.ID, "systems-ranking").text.count("S") >= 3
        screenshot_widths(organizer, SHOTS / "results")
        organizer.get(f"{base}/c/{slug}/console/judging/{round.pk}/")
        organizer.find_element(By.ID, "publish-round").click()
        confirm(organizer, wait, "results checked")
        assert Round.objects.get().state == RoundState.PUBLISHED

    with chromium_driver(width=1366, height=1000) as public:
        public.get(f"{base}/c/{slug}/board/{world.dev.slug}/")
        groups = [th.text for th in public.find_elements(By.CSS_SELECTOR, "#board thead th.group")]
        assert "Human evaluation" in groups
        cells = [td.text for td in public.find_elements(By.CSS_SELECTOR, "#board td.human")]
        scores = round_human_scores(round=round)
        assert sorted(c.split("\n")[0] for c in cells) == sorted(f"{s.mean:.2f}" for s in scores.values())
        assert all("n 8" in c for c in cells)
        screenshot_widths(public, SHOTS / "board")
