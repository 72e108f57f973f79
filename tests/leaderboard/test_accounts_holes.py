"""Issue 22, section 4: the account holes.

- Nobody locks anyone out: guesses count per (client, username) pair and per client, never per
  username alone; a browser (or script) that logged in before counts on its own device cookie.
- Accounts made on the sign-up page confirm their e-mail address by a signed link before they
  create or join a team or submit; they may log in meanwhile and see a notice with "send the link
  again" (throttled per address).  Accounts made any other way are confirmed.
- Sign-up answers the same for a taken address as for a fresh one (and mails the owner); a team
  name that clashes with an anonymous team's is answered as any name a team cannot have.

The cast is conftest's: alice owns Alpha with bob; charlie owns Charlie's; dave has no team; oscar organizes.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail, signing
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from leaderboard.accounts.models import LoginFailure, Membership, PendingConfirmation, Team, TeamInvite
from leaderboard.accounts.selectors import request_client_address, user_may_take_part
from leaderboard.accounts.services import (
    DEVICE_COOKIE,
    TEAM_NAME_RULE,
    email_confirmation_token,
    team_invite_create,
    team_update,
)
from leaderboard.challenges.models import AuditEntry
from leaderboard.challenges.spec import SpecError
from leaderboard.submissions.models import Submission
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import SPEC, Cast, gold_predictions
from tests.builders.responses import ClientResponse

PASSWORD = "Correct-horse-battery-staple-9"
INVALID_LOGIN = "Please enter a correct username and password"


def guess(n: int, *, username: str, address: str, path: str = "/accounts/login/") -> None:
    for _ in range(n):
        Client(REMOTE_ADDR=address).post(path, {"username": username, "password": "wrong"})


def log_in(client: Client, username: str, password: str) -> int:
    return client.post("/accounts/login/", {"username": username, "password": password}).status_code


# --------------------------------------------------------------------------- nobody locks anyone out


def test_a_guesser_elsewhere_never_locks_the_owner_out_of_the_page_or_the_token_exchange(cast: Cast) -> None:
    guess(settings.LOGIN_FAILURE_LIMIT, username="oscar", address="10.6.6.6")
    guess(settings.LOGIN_FAILURE_LIMIT, username="oscar", address="10.6.6.6", path="/api/v1/auth/token/")
    # The guesser is held back, even with the right password ...
    assert log_in(Client(REMOTE_ADDR="10.6.6.6"), "oscar", "oscar-pw") == 429
    # ... and oscar, from his own address, is not.
    assert log_in(Client(REMOTE_ADDR="10.0.0.1"), "oscar", "oscar-pw") == 302
    token = Client(REMOTE_ADDR="10.0.0.2").post("/api/v1/auth/token/", {"username": "oscar", "password": "oscar-pw"})
    assert token.status_code == 200 and token.json()["token"].startswith("rb_")


def test_behind_a_proxy_without_the_header_a_known_browser_still_logs_in(cast: Cast) -> None:
    """All clients share the proxy's address: a guesser there holds back new clients, never a
    browser that logged in to the account before."""
    proxy = "127.0.0.1"
    oscars_browser = Client(REMOTE_ADDR=proxy)
    assert log_in(oscars_browser, "oscar", "oscar-pw") == 302
    assert DEVICE_COOKIE in oscars_browser.cookies
    oscars_browser.post("/accounts/logout/")
    for name in ("oscar", "alice", "nobody"):
        guess(settings.LOGIN_FAILURE_CLIENT_LIMIT // 3, username=name, address=proxy)
    assert log_in(Client(REMOTE_ADDR=proxy), "oscar", "oscar-pw") == 429
    assert log_in(oscars_browser, "oscar", "oscar-pw") == 302
    # The cookie speaks for oscar only: with it, another account is throttled as from anywhere.
    assert log_in(oscars_browser, "alice", "alice-pw") == 429


def test_a_device_cookie_is_limited_itself_and_cannot_be_forged(cast: Cast) -> None:
    browser = Client(REMOTE_ADDR="10.0.0.1")
    assert log_in(browser, "alice", "alice-pw") == 302
    browser.post("/accounts/logout/")
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        assert log_in(browser, "alice", "wrong") == 200
    assert log_in(browser, "alice", "alice-pw") == 429  # a stolen cookie buys no unlimited guesses
    assert log_in(Client(REMOTE_ADDR="10.0.0.1"), "alice", "alice-pw") == 302  # its count is its own
    forged = Client(REMOTE_ADDR="10.7.7.7")
    guess(settings.LOGIN_FAILURE_LIMIT, username="alice", address="10.7.7.7")
    forged.cookies[DEVICE_COOKIE] = "alice|made-up-nonce"
    assert log_in(forged, "alice", "alice-pw") == 429


def test_the_client_address_is_the_last_entry_of_the_proxy_header(cast: Cast, settings: Any) -> None:
    settings.CLIENT_ADDRESS_HEADER = "HTTP_X_FORWARDED_FOR"
    # WSGI environ for every request of a Client (its **defaults, which take any value).
    proxy: dict[str, Any] = {"REMOTE_ADDR": "127.0.0.1"}
    guesser: dict[str, Any] = {**proxy, "HTTP_X_FORWARDED_FOR": "10.6.6.6"}
    for _ in range(settings.LOGIN_FAILURE_CLIENT_LIMIT):
        Client(**guesser).post("/accounts/login/", {"username": "oscar", "password": "wrong"})
    assert log_in(Client(**guesser), "oscar", "oscar-pw") == 429
    # An entry the client wrote itself before the proxy's is not taken for its address.
    forging: dict[str, Any] = {**proxy, "HTTP_X_FORWARDED_FOR": "10.0.0.1, 10.6.6.6"}
    assert log_in(Client(**forging), "oscar", "oscar-pw") == 429
    assert log_in(Client(**proxy, HTTP_X_FORWARDED_FOR="10.0.0.1"), "oscar", "oscar-pw") == 302
    request = Client(**forging).get("/").wsgi_request
    assert request_client_address(request) == "10.6.6.6"


def test_the_throttle_keeps_each_row_for_its_own_window_only(cast: Cast) -> None:
    guess(3, username="alice", address="10.0.0.1")
    sign_up(Client())
    an_old_minute = timezone.now() - dt.timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_S + 1)
    LoginFailure.objects.update(at=an_old_minute)
    guess(1, username="bob", address="10.0.0.2")
    # The old login rows are gone; the mail's row counts on for its hour.
    assert sorted(LoginFailure.objects.values_list("key", flat=True)) == [
        "addr:10.0.0.2", "mail:erin@example.org", "pair:10.0.0.2|bob"]


# --------------------------------------------------------------------------- confirmed addresses


def sign_up(client: Client, username: str = "erin", email: str = "erin@example.org") -> ClientResponse:
    return client.post("/accounts/signup/", {"username": username, "email": email, "password1": PASSWORD,
                                             "password2": PASSWORD}, follow=True)


def link_in(message: mail.EmailMessage) -> str:
    found = re.search(r"http://testserver(/accounts/confirm/\S+/)", str(message.body))
    assert found, message.body
    return found.group(1)


def test_a_new_account_confirms_its_address_before_it_takes_part(cast: Cast) -> None:
    erin = Client()
    page = sign_up(erin).content.decode()
    assert "We sent a link to erin@example.org" in page
    user = User.objects.get(username="erin")
    assert PendingConfirmation.objects.filter(user=user).exists() and not user_may_take_part(user=user)
    assert "_auth_user_id" not in erin.session
    assert [m.to for m in mail.outbox] == [["erin@example.org"]]
    link = link_in(mail.outbox[0])

    # It may log in, and every page says what is missing and offers the link again.
    assert log_in(erin, "erin", PASSWORD) == 302
    home = erin.get("/").content.decode()
    assert 'id="confirm-notice"' in home and 'id="confirm-resend"' in home and "erin@example.org" in home
    # It may not create a team, join one by code, or accept an invitation.
    created = erin.post("/c/demo/team/", {"action": "create", "name": "Erin's"})
    assert created.status_code == 403 and "confirm your e-mail address first" in created.content.decode()
    joined = erin.post("/c/demo/team/", {"action": "join", "join_code": cast.alpha.join_code})
    assert joined.status_code == 403
    invite = team_invite_create(team=cast.alpha, actor=cast.alice, invitee="erin")
    erin.post(f"/accounts/invites/{invite.pk}/", {"action": "accept"})
    assert not Membership.objects.filter(user=user).exists() and not Team.objects.filter(name="Erin's").exists()

    # The link confirms it (the link itself logs nobody in), and then it takes part.
    confirmed = Client().get(link)
    assert confirmed.status_code == 200 and "is confirmed" in confirmed.content.decode()
    assert "_auth_user_id" not in confirmed.wsgi_request.session
    assert user_may_take_part(user=user) and 'id="confirm-notice"' not in erin.get("/").content.decode()
    assert Client().get(link).status_code == 200  # again: harmless
    assert erin.post("/c/demo/team/", {"action": "create", "name": "Erin's"}).status_code == 302


@pytest.mark.parametrize("channel", ["web", "api"])
def test_an_unconfirmed_member_cannot_submit_on_either_channel(cast: Cast, channel: str) -> None:
    """Unconfirmed accounts have no team; should one be in a team, the submit path asks the same rule."""
    PendingConfirmation.objects.create(user=cast.bob)
    file = io.BytesIO(json.dumps(gold_predictions("dev")).encode())
    file.name = "preds.json"
    if channel == "web":
        response = cast.client("bob").post("/c/demo/submit/", {"phase": cast.dev.pk, "file": file})
        body = response.content.decode()
    else:
        response = cast.client("bob").post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": file})
        body = response.json()["detail"]
    assert response.status_code == 403, body
    assert "confirm your e-mail address first" in body
    assert not Submission.objects.exists()


def test_a_link_that_expired_was_altered_or_is_for_an_old_address_confirms_nothing(
    cast: Cast, settings: Any
) -> None:
    sign_up(Client())
    user = User.objects.get(username="erin")
    link = link_in(mail.outbox[0])
    token = link.split("/")[-2]
    altered = Client().get(link.replace(token, token[:-2] + ("AA" if not token.endswith("AA") else "BB")))
    assert altered.status_code == 400 and "not one we sent" in altered.content.decode()
    forged = signing.dumps({"u": user.pk, "e": "erin@example.org"}, salt="some-other-purpose")
    assert Client().get(f"/accounts/confirm/{forged}/").status_code == 400
    settings.EMAIL_CONFIRM_TIMEOUT = -1
    expired = Client().get(link)
    assert expired.status_code == 400 and "expired" in expired.content.decode()
    settings.EMAIL_CONFIRM_TIMEOUT = 3600
    User.objects.filter(pk=user.pk).update(email="erin.new@example.org")
    old_address = Client().get(link)
    assert old_address.status_code == 400 and "no longer has" in old_address.content.decode()
    assert PendingConfirmation.objects.filter(user=user).exists()
    user.refresh_from_db()
    assert Client().get(f"/accounts/confirm/{email_confirmation_token(user=user)}/").status_code == 200
    assert not PendingConfirmation.objects.filter(user=user).exists()


def test_send_the_link_again_is_limited_per_address(cast: Cast) -> None:
    erin = Client()
    sign_up(erin)
    log_in(erin, "erin", PASSWORD)
    for _ in range(settings.EMAIL_CONFIRM_MAIL_LIMIT - 1):
        again = erin.post("/accounts/confirm/send/", {"next": "/"}, follow=True)
        assert "We sent a new link to erin@example.org" in again.content.decode()
    refused = erin.post("/accounts/confirm/send/", {"next": "/"}, follow=True).content.decode()
    assert "as many links to erin@example.org as we send" in refused
    assert len(mail.outbox) == settings.EMAIL_CONFIRM_MAIL_LIMIT
    # Every link sent works (the last one, here).
    assert Client().get(link_in(mail.outbox[-1])).status_code == 200
    assert "is confirmed already" in erin.post("/accounts/confirm/send/", follow=True).content.decode()


def test_an_unconfirmed_account_that_changes_its_address_gets_a_link_for_the_new_one(cast: Cast) -> None:
    erin = Client()
    sign_up(erin)
    log_in(erin, "erin", PASSWORD)
    assert erin.post("/accounts/profile/", {"email": "erin@work.example", "password": PASSWORD}).status_code == 302
    assert mail.outbox[-1].to == ["erin@work.example"]
    assert Client().get(link_in(mail.outbox[0])).status_code == 400
    assert Client().get(link_in(mail.outbox[-1])).status_code == 200


def test_accounts_made_by_the_operators_are_confirmed(cast: Cast, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command("createsuperuser", "--noinput", "--username", "ops", "--email", "ops@example.org")
    made = User.objects.create_user("fred", password="x")
    for user in (User.objects.get(username="ops"), made, cast.alice, cast.oscar):
        assert user_may_take_part(user=user), user
    assert 'id="confirm-notice"' not in cast.client("alice").get("/").content.decode()
    assert not PendingConfirmation.objects.exists()


# --------------------------------------------------------------------------- enumeration


def test_sign_up_with_a_taken_address_answers_as_a_new_one_and_mails_its_owner(cast: Cast) -> None:
    cast.bob.email = "bob@example.org"
    cast.bob.save()
    answers = []
    for username, email in (("erin", "erin@example.org"), ("frank", "BOB@example.org")):
        response = Client().post("/accounts/signup/?next=/c/demo/", {
            "username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD}, follow=True)
        main = re.search(r"<main>.*</main>", response.content.decode(), re.S)
        assert main
        answers.append((response.status_code, response.redirect_chain,
                        main.group(0).replace(email, "ADDRESS").replace("csrfmiddlewaretoken", "")))
        assert "_auth_user_id" not in response.wsgi_request.session
    assert re.sub(r'value="[^"]+"', "", answers[0][2]) == re.sub(r'value="[^"]+"', "", answers[1][2])
    assert answers[0][:2] == answers[1][:2]
    # No second account on bob's address: its owner hears of it, with his username and the reset page.
    assert not User.objects.filter(username="frank").exists()
    assert [m.to for m in mail.outbox] == [["erin@example.org"], ["bob@example.org"]]
    assert '"bob"' in mail.outbox[1].body and "/accounts/password-reset/" in mail.outbox[1].body
    assert "/accounts/confirm/" not in mail.outbox[1].body


def test_a_taken_username_is_said_since_usernames_are_no_secret(cast: Cast) -> None:
    response = Client().post("/accounts/signup/", {"username": "alice", "email": "new@example.org",
                                                   "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 400 and "already exists" in response.content.decode()
    assert mail.outbox == []


def test_a_name_an_anonymous_team_has_is_refused_as_any_other_name_a_team_cannot_have(cast: Cast) -> None:
    team_update(team=cast.charlies, actor=cast.charlie, is_anonymous=True)
    dave = cast.client("dave")
    answers = {}
    for case, name in (("anonymous team's", "Charlie's"), ("public team's", "Alpha"), ("empty", "  "),
                       ("too long", "x" * 101)):
        response = dave.post("/c/demo/team/", {"action": "create", "name": name})
        messages = [str(m) for m in response.context["messages"]]
        answers[case] = (response.status_code, messages)
    assert set(map(repr, answers.values())) == {repr((400, [TEAM_NAME_RULE]))}, answers
    # Renaming answers alike.
    alice = cast.client("alice")
    renamed = [alice.post("/c/demo/team/", {"action": "rename", "name": name}, follow=True) for name in ("Charlie's", "")]
    texts = [[str(m) for m in r.context["messages"]] for r in renamed]
    assert texts[0] == texts[1] == [TEAM_NAME_RULE]
    assert not TeamInvite.objects.exists() and Team.objects.get(pk=cast.alpha.pk).name == "Alpha"


def test_a_new_address_is_unconfirmed_until_its_link_is_opened(cast: Cast) -> None:
    """Else one mailbox would confirm account after account, each moving on to an unread address."""
    alice = cast.client("alice")
    assert alice.post("/accounts/profile/", {"email": "nobody-reads@example.org", "password": "alice-pw"}
                      ).status_code == 302
    assert not user_may_take_part(user=cast.alice)
    assert 'id="confirm-notice"' in alice.get("/").content.decode()
    assert alice.post("/c/demo/team/", {"action": "rename", "name": "Alpha"}).status_code == 302  # still its team
    refused = alice.post("/c/demo/submit/", {"phase": cast.dev.pk, "file": io.BytesIO(b"{}")})
    assert refused.status_code == 403
    assert mail.outbox[-1].to == ["nobody-reads@example.org"]
    assert Client().get(link_in(mail.outbox[-1])).status_code == 200
    assert user_may_take_part(user=cast.alice)


def test_an_unconfirmed_account_cannot_read_or_answer_invitations_sent_to_its_address(cast: Cast) -> None:
    invite = team_invite_create(team=cast.alpha, actor=cast.alice, invitee="victim@example.org")
    squatter = Client()
    sign_up(squatter, username="squatter", email="victim@example.org")
    log_in(squatter, "squatter", PASSWORD)
    assert "Alpha" not in squatter.get("/accounts/profile/").content.decode()
    squatter.post(f"/accounts/invites/{invite.pk}/", {"action": "decline"})
    invite.refresh_from_db()
    assert invite.status == "pending" and invite.invited_user is None


# --------------------------------------------------------------------------- teams approved per challenge


def approval_on(cast: Cast, tmp_path: Path, setting: str = "{approval: required}") -> None:
    """Load the cast's challenge again with ``teams:`` in its spec, as an organizer would."""
    spec = tmp_path / "demo-teams.yaml"
    spec.write_text(SPEC + f"teams: {setting}\n")
    challenge_load(spec_path=spec)


def test_a_challenge_that_approves_teams_holds_a_new_one_until_an_organizer_does(cast: Cast, tmp_path: Path) -> None:
    approval_on(cast, tmp_path)
    dave = cast.client("dave")
    assert dave.post("/c/demo/team/", {"action": "create", "name": "Dave's"}).status_code == 302
    team = Team.objects.get(name="Dave's")
    assert team.approval_pending
    assert 'id="team-approval"' in dave.get("/c/demo/team/").content.decode()
    for channel in ("web", "api"):
        file = io.BytesIO(json.dumps(gold_predictions("dev")).encode())
        file.name = "preds.json"
        if channel == "web":
            refused = dave.post("/c/demo/submit/", {"phase": cast.dev.pk, "file": file})
            body = refused.content.decode()
        else:
            refused = dave.post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": file})
            body = refused.json()["detail"]
        assert refused.status_code == 403 and "waits for the organizers&#x27; approval" in body.replace("'", "&#x27;")
    assert not Submission.objects.exists()
    # Teams made before approval was switched on are not held.
    assert not Team.objects.get(pk=cast.alpha.pk).approval_pending

    # Only an organizer approves, in the console, with a reason kept in the audit log.
    action = f"/c/demo/console/teams/{team.pk}/approve/"
    assert cast.client("alice").post(action, {"reason": "me"}).status_code == 404
    oscar = cast.client("oscar")
    console = oscar.get("/c/demo/console/teams/").content.decode()
    assert f'id="pending-team-{team.pk}"' in console and f'id="approve-team-{team.pk}"' in console
    assert oscar.post(action, {"reason": "known lab"}).status_code == 302
    team.refresh_from_db()
    assert not team.approval_pending
    assert AuditEntry.objects.filter(action="team.approve", reason="known lab").exists()
    assert 'id="team-approval"' not in dave.get("/c/demo/team/").content.decode()
    file = io.BytesIO(json.dumps(gold_predictions("dev")).encode())
    file.name = "preds.json"
    assert dave.post("/c/demo/submit/", {"phase": cast.dev.pk, "file": file}).status_code == 302
    assert Submission.objects.filter(team=team).exists()


def test_switching_approval_off_releases_the_teams_waiting(cast: Cast, tmp_path: Path) -> None:
    approval_on(cast, tmp_path)
    cast.client("dave").post("/c/demo/team/", {"action": "create", "name": "Dave's"})
    assert Team.objects.get(name="Dave's").approval_pending
    approval_on(cast, tmp_path, "{approval: off}")
    assert not Team.objects.get(name="Dave's").approval_pending


@pytest.mark.parametrize("setting", ["{approval: maybe}", "required", "{approval: [required]}"])
def test_a_teams_setting_that_is_neither_required_nor_off_fails_the_load(
    cast: Cast, tmp_path: Path, setting: str
) -> None:
    with pytest.raises(SpecError, match=r"demo\.teams: expected \{approval: required\}"):
        approval_on(cast, tmp_path, setting)
