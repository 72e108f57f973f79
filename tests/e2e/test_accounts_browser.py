"""The account and team pages in headless Chromium, with screenshots at 1366 and 400 px.

Screenshots go to $TMPDIR/readerboard-accounts-teams/; no page may be wider than the window.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core import mail
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from leaderboard.accounts.models import Membership, Role
from leaderboard.accounts.services import team_create, team_invite_create
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import SPEC, Cast, gold_predictions, upload
from tests.builders.chromium import chromium_driver, page_wait, screenshot_widths

SCREENSHOTS = Path(tempfile.gettempdir()) / "readerboard-accounts-teams"
NEW_PASSWORD = "Correct-horse-battery-staple-9"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chromium() -> Iterator[Any]:
    with chromium_driver(width=1366) as driver:
        yield driver


def screenshot(driver: Any, name: str) -> None:
    """The whole page at 1366 and 400 px; nothing may overflow sideways."""
    screenshot_widths(driver, SCREENSHOTS / name)


def log_in(driver: Any, base: str, username: str, password: str) -> None:
    driver.get(f"{base}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()


def main_text(driver: Any) -> str:
    return str(driver.find_element(By.TAG_NAME, "main").text)


def test_alice_resets_her_forgotten_password_by_e_mail(cast: Cast, live_server: Any, chromium: Any) -> None:
    cast.alice.email = "alice@example.org"
    cast.alice.save()
    driver, wait, base = chromium, page_wait(chromium), live_server.url
    driver.get(f"{base}/accounts/login/")
    screenshot(driver, "login")
    driver.find_element(By.ID, "forgot-password").click()
    wait.until(ec.presence_of_element_located((By.ID, "reset-submit")))
    screenshot(driver, "reset-form")
    driver.find_element(By.ID, "id_email").send_keys("alice@example.org")
    driver.find_element(By.ID, "reset-submit").click()
    wait.until(ec.presence_of_element_located((By.ID, "reset-sent")))
    screenshot(driver, "reset-sent")

    assert len(mail.outbox) == 1
    link = re.search(r"http://\S+/accounts/password-reset/\S+/\S+/", str(mail.outbox[0].body))
    assert link, mail.outbox[0].body
    driver.get(link.group(0).replace("http://testserver", base))
    wait.until(ec.presence_of_element_located((By.ID, "set-password")))
    screenshot(driver, "reset-confirm")
    driver.find_element(By.ID, "id_new_password1").send_keys(NEW_PASSWORD)
    driver.find_element(By.ID, "id_new_password2").send_keys(NEW_PASSWORD)
    driver.find_element(By.ID, "set-password").click()
    wait.until(ec.presence_of_element_located((By.ID, "reset-complete")))
    screenshot(driver, "reset-complete")

    log_in(driver, base, "alice", NEW_PASSWORD)
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(link.group(0).replace("http://testserver", base))
    wait.until(ec.presence_of_element_located((By.ID, "reset-invalid")))
    screenshot(driver, "reset-used-link")


def test_a_guesser_is_told_when_to_come_back(cast: Cast, live_server: Any, chromium: Any) -> None:
    driver = chromium
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        log_in(driver, live_server.url, "alice", "not-her-password")
        page_wait(driver).until(ec.text_to_be_present_in_element(
            ("tag name", "main"), "Please enter a correct username and password"))
    log_in(driver, live_server.url, "alice", "alice-pw")
    page_wait(driver).until(ec.text_to_be_present_in_element(("tag name", "main"), "try again in"))
    assert re.search(r"try again in \d+ seconds", main_text(driver))
    screenshot(driver, "login-throttled")


def test_a_team_is_run_from_its_page_and_the_profile(cast: Cast, live_server: Any, chromium: Any) -> None:
    cast.challenge.max_team_size = 4
    cast.challenge.save()
    cast.alice.email = "alice@example.org"
    cast.alice.save()
    driver, wait, base = chromium, page_wait(chromium), live_server.url
    log_in(driver, base, "alice", "alice-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/team/")
    for invitee in ("dave", "a.very.long.address.of.a.colleague@computational-linguistics.example.org"):
        driver.find_element(By.ID, "id_invitee").send_keys(invitee)
        driver.find_element(By.ID, "invite-submit").click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "it waits for their answer"))
    screenshot(driver, "team-owner")

    # dave answers on the challenge's team page (and sees it on his profile).
    driver.delete_all_cookies()
    log_in(driver, base, "dave", "dave-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link"))).click()
    wait.until(ec.presence_of_element_located((By.ID, "invites")))
    screenshot(driver, "profile-invited")
    driver.get(f"{base}/c/demo/team/")
    screenshot(driver, "team-invited")
    driver.find_element(By.CSS_SELECTOR, "#invites .accept-invite").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "You joined Alpha"))
    assert Membership.objects.get(user=cast.dave).team == cast.alpha
    screenshot(driver, "team-member")
    driver.find_element(By.ID, "profile-link").click()
    wait.until(ec.presence_of_element_located((By.ID, "my-teams")))
    screenshot(driver, "profile-member")

    # alice hands the team over to bob, who renames it.
    driver.delete_all_cookies()
    log_in(driver, base, "alice", "alice-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/team/")
    driver.find_element(By.CSS_SELECTOR, "#members li[data-user=bob] .handover").click()
    driver.switch_to.alert.accept()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "bob owns the team now"))
    assert Membership.objects.get(user=cast.bob).role == Role.OWNER
    screenshot(driver, "team-handed-over")


def test_organizers_see_who_was_on_the_team_and_teams_see_which_rule_counts(
    cast: Cast, live_server: Any, chromium: Any
) -> None:
    submission = submission_create_predictions(
        team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions(wrong_every=3)),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")
    driver, wait, base = chromium, page_wait(chromium), live_server.url

    log_in(driver, base, "bob", "bob-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/submissions/{submission.pk}/")
    assert "nothing to choose" in driver.find_element(By.ID, "ranking-rule").text
    assert not driver.find_elements(By.ID, "members-then")
    screenshot(driver, "submission-team-best-rule")
    driver.get(f"{base}/c/demo/submissions/")
    screenshot(driver, "submissions-list-best-rule")

    driver.delete_all_cookies()
    log_in(driver, base, "oscar", "oscar-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/submissions/{submission.pk}/")
    assert driver.find_element(By.ID, "members-then").text.startswith("alice (owner), bob")
    screenshot(driver, "submission-organizer-members-then")


def test_under_the_selected_rule_the_team_picks_its_board_submission(
    cast: Cast, live_server: Any, chromium: Any
) -> None:
    cast.challenge.ranking_rule = "selected"
    cast.challenge.save()
    first, second = (submission_create_predictions(
        team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions(wrong_every=n)),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    ) for n in (2, 5))
    driver, wait, base = chromium, page_wait(chromium), live_server.url
    log_in(driver, base, "bob", "bob-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/submissions/{first.pk}/")
    screenshot(driver, "submission-selected-rule-choice")
    driver.find_element(By.ID, "select-submission").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "ranking-rule"), "Your team selected this submission"))
    screenshot(driver, "submission-selected-rule-chosen")
    driver.get(f"{base}/c/demo/submissions/")
    assert "(selected)" in main_text(driver)
    screenshot(driver, "submissions-list-selected-rule")


def test_a_new_account_confirms_its_address_from_the_notice_and_the_mail(
    cast: Cast, live_server: Any, chromium: Any
) -> None:
    """Issue 22: a new account is told to confirm its address on every page, may ask for the link
    again, is refused a team until then, and takes part once the link is opened."""
    driver, base = chromium, live_server.url
    wait = page_wait(driver)
    driver.get(f"{base}/accounts/signup/")
    screenshot(driver, "signup")
    for field, value in (("id_username", "erin"), ("id_email", "erin@example.org"),
                         ("id_password1", NEW_PASSWORD), ("id_password2", NEW_PASSWORD)):
        driver.find_element(By.ID, field).send_keys(value)
    driver.find_element(By.ID, "signup-submit").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "We sent a link to erin@example.org"))
    screenshot(driver, "signed-up")
    assert not driver.find_elements(By.ID, "profile-link")  # not logged in by signing up

    log_in(driver, base, "erin", NEW_PASSWORD)
    wait.until(ec.presence_of_element_located((By.ID, "confirm-notice")))
    assert "cannot create or join a team or submit" in driver.find_element(By.ID, "confirm-notice").text
    screenshot(driver, "unconfirmed-notice")
    driver.find_element(By.ID, "confirm-resend").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "We sent a new link"))
    assert len(mail.outbox) == 2 and mail.outbox[-1].to == ["erin@example.org"]
    screenshot(driver, "unconfirmed-link-sent-again")

    driver.get(f"{base}/c/demo/team/")
    driver.find_element(By.ID, "id_name").send_keys("Birch Readers")
    driver.find_element(By.ID, "create-team").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "confirm your e-mail address first"))
    screenshot(driver, "unconfirmed-team-refused")

    driver.get(f"{base}/accounts/confirm/not-a-link-we-sent/")
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "This link does not work"))
    screenshot(driver, "confirm-link-bad")
    link = re.search(r"https?://\S+/accounts/confirm/\S+/", str(mail.outbox[-1].body))
    assert link, mail.outbox[-1].body
    driver.get(link.group(0))
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "is confirmed"))
    assert not driver.find_elements(By.ID, "confirm-notice")
    screenshot(driver, "confirmed")

    driver.get(f"{base}/c/demo/team/")
    driver.find_element(By.ID, "id_name").send_keys("Birch Readers")
    driver.find_element(By.ID, "create-team").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "You are in Birch Readers"))


def test_a_team_waits_for_approval_and_an_organizer_approves_it(
    cast: Cast, live_server: Any, chromium: Any, tmp_path: Path
) -> None:
    """Issue 22: ``teams: {approval: required}`` holds a new team until an organizer approves it."""
    spec = tmp_path / "demo-teams.yaml"
    spec.write_text(SPEC + "teams: {approval: required}\n")
    challenge_load(spec_path=spec)
    team = team_create(challenge=cast.challenge, owner=cast.dave, name="Dave's Readers")
    driver, base = chromium, live_server.url
    wait = page_wait(driver)
    log_in(driver, base, "dave", "dave-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/team/")
    assert "waits for the organizers' approval" in driver.find_element(By.ID, "team-approval").text
    screenshot(driver, "team-waiting-for-approval")

    driver.delete_all_cookies()
    log_in(driver, base, "oscar", "oscar-pw")
    wait.until(ec.presence_of_element_located((By.ID, "profile-link")))
    driver.get(f"{base}/c/demo/console/teams/")
    assert driver.find_element(By.ID, f"pending-team-{team.pk}").text == "waits for approval"
    screenshot(driver, "console-teams-approval")
    driver.find_element(By.ID, f"approve-team-{team.pk}").click()
    driver.find_element(By.ID, "id_reason").send_keys("known lab")
    screenshot(driver, "console-approve-confirm")
    driver.find_element(By.ID, "confirm").click()
    wait.until(ec.url_to_be(f"{base}/c/demo/console/teams/"))
    assert not driver.find_elements(By.ID, f"pending-team-{team.pk}")
    team.refresh_from_db()
    assert not team.approval_pending
