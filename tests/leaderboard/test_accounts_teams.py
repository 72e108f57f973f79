"""Accounts and teams as people expect them: sign-up with an e-mail address, password reset by e-mail,
a profile, failed logins limited (page, admin and API), team invitations, leave, remove, rename,
hand-over, a maximum team size, the membership history organizers read, and which submission counts.

The cast is conftest's: alice owns Alpha with bob; charlie owns Charlie's; dave has no team; oscar organizes.
"""

from __future__ import annotations

import datetime as dt
import html
import re
import threading
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth import authenticate as django_authenticate
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.accounts.models import (
    InviteStatus,
    LoginFailure,
    Membership,
    MembershipEvent,
    MembershipEventKind,
    Role,
    Team,
    TeamInvite,
)
from leaderboard.accounts.selectors import MemberAt, team_members_at
from leaderboard.accounts.services import (
    login_attempt,
    team_create,
    team_invite_accept,
    team_invite_create,
    team_invite_decline,
    team_join,
    team_leave,
    team_member_remove,
    team_owner_handover,
    team_rename,
)
from leaderboard.challenges.spec import SpecError
from leaderboard.core.errors import Conflict, NotFound, PermissionDenied, ServiceError, TooManyAttempts
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import SPEC, Cast, gold_predictions, upload

NEW_PASSWORD = "Correct-horse-battery-staple-9"
INVALID_LOGIN = "Please enter a correct username and password"


def set_limit(cast: Cast, size: int | None) -> None:
    cast.challenge.max_team_size = size
    cast.challenge.save(update_fields=["max_team_size"])


# --------------------------------------------------------------------------- sign-up and profile


def test_sign_up_needs_an_e_mail_address(db: None) -> None:
    response = Client().post("/accounts/signup/", {"username": "erin", "password1": NEW_PASSWORD,
                                                   "password2": NEW_PASSWORD})
    assert response.status_code == 400
    assert not User.objects.filter(username="erin").exists()


def test_sign_up_makes_no_second_account_on_an_address_in_any_case(cast: Cast) -> None:
    cast.bob.email = "Bob@Example.org"
    cast.bob.save()
    response = Client().post("/accounts/signup/", {"username": "erin", "email": "bob@EXAMPLE.org",
                                                   "password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 302  # answered as a new account is (test_accounts_holes)
    assert not User.objects.filter(username="erin").exists()
    response = Client().post("/accounts/signup/", {"username": "erin", "email": "erin@example.org",
                                                   "password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 302
    assert User.objects.get(username="erin").email == "erin@example.org"


def test_the_profile_shows_the_account_its_teams_and_a_link_to_tokens(cast: Cast) -> None:
    cast.alice.email = "alice@example.org"
    cast.alice.save()
    page = cast.client("alice").get("/accounts/profile/").content.decode()
    assert "alice@example.org" in page and "Alpha" in page and "Demo MRQA" in page
    assert 'href="/accounts/tokens/"' in page and 'href="/c/demo/team/"' in page
    assert Client().get("/accounts/profile/")["Location"].startswith("/accounts/login/")


def test_changing_the_e_mail_address_needs_the_password_and_a_free_address(cast: Cast) -> None:
    cast.bob.email = "bob@example.org"
    cast.bob.save()
    client = cast.client("alice")
    wrong = client.post("/accounts/profile/", {"email": "alice@example.org", "password": "nope"})
    assert wrong.status_code == 403 and "not your password" in wrong.content.decode()
    taken = client.post("/accounts/profile/", {"email": "BOB@example.org", "password": "alice-pw"})
    assert taken.status_code == 409 and "another account uses" in taken.content.decode()
    done = client.post("/accounts/profile/", {"email": "alice@example.org", "password": "alice-pw"})
    assert done.status_code == 302
    cast.alice.refresh_from_db()
    assert cast.alice.email == "alice@example.org"


# --------------------------------------------------------------------------- password reset


def test_a_password_reset_works_end_to_end_by_e_mail(cast: Cast) -> None:
    cast.alice.email = "alice@example.org"
    cast.alice.save()
    client = Client()
    page = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/password-reset/"' in page

    response = client.post("/accounts/password-reset/", {"email": "ALICE@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password-reset/sent/"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"] and "Reset your Readerboard password" in message.subject
    link = re.search(r"http://testserver(/accounts/password-reset/\S+/\S+/)", str(message.body))
    assert link, message.body

    # The link leads to a form (Django swaps the token for a session marker, then redirects).
    form_page = client.get(link.group(1), follow=True)
    assert form_page.status_code == 200 and "Set a new password" in form_page.content.decode()
    done = client.post(form_page.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302 and done["Location"] == "/accounts/password-reset/done/"
    assert "Password set" in client.get(done["Location"]).content.decode()

    assert Client().post("/accounts/login/", {"username": "alice", "password": "alice-pw"}).status_code == 200
    assert Client().post("/accounts/login/", {"username": "alice", "password": NEW_PASSWORD}).status_code == 302
    # The link works once.
    again = Client().get(link.group(1), follow=True).content.decode()
    assert "This link no longer works" in again


def test_a_reset_for_an_unknown_address_looks_the_same_and_sends_nothing(cast: Cast) -> None:
    response = Client().post("/accounts/password-reset/", {"email": "nobody@example.org"}, follow=True)
    assert response.status_code == 200
    assert "If an account has that address" in response.content.decode()
    assert mail.outbox == []


# --------------------------------------------------------------------------- login throttling


def fail_logins(n: int, *, username: str = "alice", address: str = "10.0.0.1") -> None:
    for _ in range(n):
        response = Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": "wrong"})
        assert response.status_code == 200 and INVALID_LOGIN in response.content.decode()


def retry_after_of(text: str) -> int:
    found = re.search(r"try again in (\d+) seconds", text)
    assert found, text
    return int(found.group(1))


def test_the_eleventh_wrong_login_in_a_minute_is_refused_even_with_the_right_password(cast: Cast) -> None:
    fail_logins(10)
    response = Client(REMOTE_ADDR="10.0.0.1").post("/accounts/login/", {"username": "alice", "password": "alice-pw"})
    assert response.status_code == 429
    seconds = retry_after_of(response.content.decode())
    assert 1 <= seconds <= settings.LOGIN_FAILURE_WINDOW_S
    assert response["Retry-After"] == str(seconds)
    assert "_auth_user_id" not in response.wsgi_request.session
    # Once the failures are a minute old, the right password works again.
    LoginFailure.objects.update(at=timezone.now() - dt.timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_S + 1))
    ok = Client(REMOTE_ADDR="10.0.0.1").post("/accounts/login/", {"username": "alice", "password": "alice-pw"})
    assert ok.status_code == 302


def test_the_retry_time_counts_down_from_the_oldest_failure_that_keeps_the_limit(cast: Cast) -> None:
    fail_logins(10)
    LoginFailure.objects.filter(key="pair:10.0.0.1|alice").update(at=timezone.now() - dt.timedelta(seconds=45))
    response = Client(REMOTE_ADDR="10.0.0.1").post("/accounts/login/", {"username": "alice", "password": "alice-pw"})
    assert response.status_code == 429
    assert 14 <= int(response["Retry-After"]) <= 16


def test_one_address_is_limited_across_usernames(cast: Cast) -> None:
    for name in ("alice", "bob", "nobody-at-all", "charlie", "dave"):
        fail_logins(settings.LOGIN_FAILURE_CLIENT_LIMIT // 5, username=name, address="10.9.9.9")
    refused = Client(REMOTE_ADDR="10.9.9.9").post("/accounts/login/", {"username": "oscar", "password": "oscar-pw"})
    assert refused.status_code == 429
    # The same user from elsewhere is not held back by that address.
    assert Client(REMOTE_ADDR="10.1.1.1").post("/accounts/login/", {"username": "oscar", "password": "oscar-pw"}
                                               ).status_code == 302


def test_a_right_password_before_the_limit_logs_in_and_does_not_count(cast: Cast) -> None:
    fail_logins(9)
    assert Client(REMOTE_ADDR="10.0.0.1").post("/accounts/login/", {"username": "alice", "password": "alice-pw"}
                                               ).status_code == 302
    assert LoginFailure.objects.filter(key="pair:10.0.0.1|alice").count() == 9


def test_unknown_users_and_wrong_passwords_get_one_answer_and_one_limit(cast: Cast) -> None:
    wrong = Client(REMOTE_ADDR="10.0.0.3").post("/accounts/login/", {"username": "alice", "password": "nope"})
    unknown = Client(REMOTE_ADDR="10.0.0.4").post("/accounts/login/", {"username": "zelda", "password": "nope"})
    assert wrong.status_code == unknown.status_code == 200
    assert INVALID_LOGIN in wrong.content.decode() and INVALID_LOGIN in unknown.content.decode()
    fail_logins(9, username="zelda", address="10.0.0.4")
    fail_logins(9, username="alice", address="10.0.0.3")
    refusals = []
    for name, address in (("zelda", "10.0.0.4"), ("alice", "10.0.0.3")):
        response = Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": name, "password": "x"})
        assert response.status_code == 429
        errors = response.context["form"].non_field_errors()
        refusals.append(re.sub(r"\d+ seconds", "N seconds", " ".join(errors)))
    assert refusals[0] == refusals[1] and "try again in N seconds" in refusals[0]


def test_letter_case_buys_no_extra_guesses(cast: Cast) -> None:
    fail_logins(5, username="alice")
    fail_logins(5, username="ALICE")
    assert Client(REMOTE_ADDR="10.0.0.1").post("/accounts/login/", {"username": "Alice", "password": "alice-pw"}
                                               ).status_code == 429


def test_the_token_api_refuses_the_eleventh_attempt_with_429_and_retry_after(cast: Cast) -> None:
    api = Client(REMOTE_ADDR="10.2.0.1")
    wrong = api.post("/api/v1/auth/token/", {"username": "alice", "password": "nope"})
    unknown = Client(REMOTE_ADDR="10.2.0.3").post("/api/v1/auth/token/", {"username": "zelda", "password": "nope"})
    assert wrong.status_code == unknown.status_code == 400
    assert wrong.json() == unknown.json() == {"detail": "Unable to log in with provided credentials."}
    for _ in range(9):
        assert api.post("/api/v1/auth/token/", {"username": "alice", "password": "nope"}).status_code == 400
    refused = Client(REMOTE_ADDR="10.2.0.1").post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"})
    assert refused.status_code == 429
    seconds = retry_after_of(refused.json()["detail"])
    assert refused["Retry-After"] == str(seconds) and 1 <= seconds <= settings.LOGIN_FAILURE_WINDOW_S
    assert "token" not in refused.json()


def test_the_page_and_the_api_share_one_count(cast: Cast) -> None:
    fail_logins(6)
    for _ in range(4):
        Client(REMOTE_ADDR="10.0.0.1").post("/api/v1/auth/token/", {"username": "alice", "password": "nope"})
    assert Client(REMOTE_ADDR="10.0.0.1").post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"}
                                               ).status_code == 429


def test_the_admin_login_is_no_way_round_the_limit(cast: Cast) -> None:
    fail_logins(10, username="root")
    response = Client(REMOTE_ADDR="10.0.0.1").post("/admin/login/?next=/admin/", {"username": "root",
                                                                                "password": "root-pw"})
    assert "try again in" in response.content.decode()
    assert "_auth_user_id" not in response.wsgi_request.session


@pytest.mark.django_db(transaction=True)
def test_concurrent_attempts_never_check_more_passwords_than_the_limit(cast: Cast) -> None:
    """Each attempt is recorded before its password is checked, so parallel requests see each other."""
    checked: list[str] = []
    lock = threading.Lock()

    def counting_authenticate(request: object, **credentials: str) -> object:
        with lock:
            checked.append(credentials["username"])
        return django_authenticate(request, **credentials)  # type: ignore[arg-type]

    outcomes: list[str] = []

    def attempt() -> None:
        try:
            login_attempt(request=None, username="alice", password="wrong")
            outcomes.append("checked")
        except TooManyAttempts:
            outcomes.append("refused")
        finally:
            connection.close()

    with mock.patch("leaderboard.accounts.services.authenticate", counting_authenticate):
        threads = [threading.Thread(target=attempt) for _ in range(25)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(checked) == settings.LOGIN_FAILURE_LIMIT
    assert outcomes.count("refused") == 25 - settings.LOGIN_FAILURE_LIMIT


# --------------------------------------------------------------------------- invitations


def test_an_owner_invites_by_username_and_the_invitee_accepts(cast: Cast) -> None:
    dave = cast.client("dave")
    response = cast.client("alice").post("/c/demo/team/", {"action": "invite", "invitee": "dave"})
    assert response.status_code == 302
    invite = TeamInvite.objects.get(team=cast.alpha)
    assert invite.invited_user == cast.dave and invite.status == InviteStatus.PENDING
    # dave sees it on his profile and on the challenge's team page.
    assert "Alpha" in dave.get("/accounts/profile/").content.decode()
    team_page = dave.get("/c/demo/team/").content.decode()
    assert "Your invitations" in team_page and f"/accounts/invites/{invite.pk}/" in team_page
    # Nobody else can answer it.
    assert cast.client("charlie").post(f"/accounts/invites/{invite.pk}/", {"action": "accept"}).status_code == 302
    assert not Membership.objects.filter(user=cast.charlie, team=cast.alpha).exists()
    accepted = dave.post(f"/accounts/invites/{invite.pk}/", {"action": "accept"})
    assert accepted["Location"] == "/c/demo/team/"
    assert Membership.objects.get(user=cast.dave).team == cast.alpha
    invite.refresh_from_db()
    assert invite.status == InviteStatus.ACCEPTED and invite.responded_at is not None
    assert MembershipEvent.objects.filter(team=cast.alpha, user=cast.dave, event=MembershipEventKind.JOINED,
                                          by=cast.alice).exists()


def test_only_the_owner_invites(cast: Cast) -> None:
    with pytest.raises(PermissionDenied):
        team_invite_create(team=cast.alpha, actor=cast.bob, invitee="dave")
    response = cast.client("bob").post("/c/demo/team/", {"action": "invite", "invitee": "dave"})
    assert response.status_code == 403 and not TeamInvite.objects.exists()


def test_an_invitation_can_be_declined_or_cancelled(cast: Cast) -> None:
    invite = team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")
    team_invite_decline(invite_id=invite.pk, user=cast.dave)
    invite.refresh_from_db()
    assert invite.status == InviteStatus.DECLINED
    with pytest.raises(NotFound):
        team_invite_accept(invite_id=invite.pk, user=cast.dave)
    again = team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")
    cast.client("alice").post("/c/demo/team/", {"action": "cancel_invite", "invite": again.pk})
    again.refresh_from_db()
    assert again.status == InviteStatus.CANCELLED
    assert not cast.client("dave").get("/accounts/profile/").context["invites"]


def test_an_invitation_by_e_mail_waits_for_the_account_that_signs_up_with_it(
    cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # the mail goes after the commit
        response = cast.client("alice").post("/c/demo/team/", {"action": "invite", "invitee": "Erin@Example.org"},
                                             follow=True)
    assert "Invitation sent to Erin@Example.org" in response.content.decode()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["Erin@Example.org"]
    assert "http://testserver/accounts/signup/" in mail.outbox[0].body
    invite = TeamInvite.objects.get()
    assert invite.invited_user is None

    erin = Client()
    erin.post("/accounts/signup/", {"username": "erin", "email": "erin@example.org",
                                    "password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    # The invitation finds the account once its address is confirmed, not before.
    invite.refresh_from_db()
    assert invite.invited_user is None
    link = re.search(r"http://testserver(/accounts/confirm/\S+/)", str(mail.outbox[-1].body))
    assert link, mail.outbox[-1].body
    confirmed = erin.get(link.group(1))
    assert "Teams have invited you" in confirmed.content.decode()
    invite.refresh_from_db()
    assert invite.invited_user == User.objects.get(username="erin")
    erin.login(username="erin", password=NEW_PASSWORD)
    erin.post(f"/accounts/invites/{invite.pk}/", {"action": "accept"})
    assert Membership.objects.get(user__username="erin").team == cast.alpha


def test_an_address_set_on_the_profile_finds_an_earlier_invitation(cast: Cast) -> None:
    team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave.d@example.org")
    dave = cast.client("dave")
    assert not dave.get("/accounts/profile/").context["invites"]
    dave.post("/accounts/profile/", {"email": "DAVE.D@example.org", "password": "dave-pw"})
    # Once the new address is confirmed (test_accounts_holes).
    link = re.search(r"http://testserver(/accounts/confirm/\S+/)", str(mail.outbox[-1].body))
    assert link and mail.outbox[-1].to == ["DAVE.D@example.org"]
    dave.get(link.group(1))
    invites = dave.get("/accounts/profile/").context["invites"]
    assert [i.team.name for i in invites] == ["Alpha"]


def test_an_invitation_by_e_mail_says_nothing_about_whether_an_account_has_it(cast: Cast) -> None:
    cast.dave.email = "dave@example.org"
    cast.dave.save()
    alice = cast.client("alice")
    known = alice.post("/c/demo/team/", {"action": "invite", "invitee": "dave@example.org"}, follow=True)
    unknown = alice.post("/c/demo/team/", {"action": "invite", "invitee": "nobody@example.org"}, follow=True)
    assert known.status_code == unknown.status_code == 200
    assert "Invitation sent to dave@example.org" in known.content.decode()
    assert "Invitation sent to nobody@example.org" in unknown.content.decode()
    # The owner's list names the address as typed, not the account behind it.
    assert ">dave<" not in known.content.decode().split('id="pending-invites"')[1]


def test_invitations_that_cannot_work_are_refused(cast: Cast) -> None:
    with pytest.raises(NotFound, match="nobody is called"):
        team_invite_create(team=cast.alpha, actor=cast.alice, invitee="zelda")
    with pytest.raises(Conflict, match="in this team already"):
        team_invite_create(team=cast.alpha, actor=cast.alice, invitee="bob")
    with pytest.raises(Conflict, match="another team"):
        team_invite_create(team=cast.alpha, actor=cast.alice, invitee="charlie")
    with pytest.raises(ServiceError, match="not an e-mail address"):
        team_invite_create(team=cast.alpha, actor=cast.alice, invitee="a@b@c")
    team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")
    with pytest.raises(Conflict, match="invited already"):
        team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")


def test_accepting_while_in_another_team_is_refused_and_the_invitation_stays(cast: Cast) -> None:
    invite = team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")
    team_create(challenge=cast.challenge, owner=cast.dave, name="Dave's")
    with pytest.raises(Conflict, match="leave it first"):
        team_invite_accept(invite_id=invite.pk, user=cast.dave)
    invite.refresh_from_db()
    assert invite.status == InviteStatus.PENDING


# --------------------------------------------------------------------------- leave, remove, rename, hand over


def test_a_member_leaves_and_the_history_keeps_it(cast: Cast) -> None:
    response = cast.client("bob").post("/c/demo/team/", {"action": "leave"})
    assert response.status_code == 302
    assert not Membership.objects.filter(user=cast.bob).exists()
    assert list(MembershipEvent.objects.filter(team=cast.alpha, user=cast.bob).values_list("event", flat=True)) == [
        "joined", "left"]


def test_the_owner_hands_over_before_leaving(cast: Cast) -> None:
    with pytest.raises(Conflict, match="hand the team over"):
        team_leave(team=cast.alpha, user=cast.alice)
    cast.client("alice").post("/c/demo/team/", {"action": "handover", "member": cast.bob.pk})
    roles = dict(Membership.objects.filter(team=cast.alpha).values_list("user__username", "role"))
    assert roles == {"alice": Role.MEMBER, "bob": Role.OWNER}
    assert MembershipEvent.objects.filter(team=cast.alpha, user=cast.bob, event="owner", by=cast.alice).exists()
    assert team_leave(team=cast.alpha, user=cast.alice) is False
    with pytest.raises(PermissionDenied):
        team_owner_handover(team=cast.alpha, actor=cast.alice, new_owner=cast.alice)


def test_only_the_owner_removes_members_and_renames(cast: Cast) -> None:
    with pytest.raises(PermissionDenied):
        team_member_remove(team=cast.alpha, actor=cast.bob, member=cast.alice)
    with pytest.raises(PermissionDenied):
        team_rename(team=cast.alpha, actor=cast.bob, name="Bob's now")
    response = cast.client("bob").post("/c/demo/team/", {"action": "remove", "member": cast.alice.pk})
    assert response.status_code == 403
    assert Membership.objects.filter(team=cast.alpha).count() == 2

    cast.client("alice").post("/c/demo/team/", {"action": "remove", "member": cast.bob.pk})
    assert not Membership.objects.filter(user=cast.bob).exists()
    assert MembershipEvent.objects.filter(team=cast.alpha, user=cast.bob, event="removed", by=cast.alice).exists()
    # bob may join another team of the challenge now.
    team_join(user=cast.bob, join_code=cast.charlies.join_code)


def test_rename_keeps_names_unique_in_the_challenge(cast: Cast) -> None:
    with pytest.raises(ServiceError, match="choose another name") as refused:
        team_rename(team=cast.alpha, actor=cast.alice, name="Charlie's")
    assert refused.value.status_code == 400  # as for any name a team cannot have (test_accounts_holes)
    response = cast.client("alice").post("/c/demo/team/", {"action": "rename", "name": "  Alpha Readers "})
    assert response.status_code == 302
    assert Team.objects.get(pk=cast.alpha.pk).name == "Alpha Readers"


def test_the_last_member_leaving_a_team_that_never_submitted_takes_it_away(cast: Cast) -> None:
    assert team_leave(team=cast.charlies, user=cast.charlie) is True
    assert not Team.objects.filter(pk=cast.charlies.pk).exists()


def test_a_team_with_submissions_outlives_its_last_member_and_cannot_be_joined(cast: Cast) -> None:
    submission_create_predictions(team=cast.charlies, phase=cast.dev, user=cast.charlie,
                                  upload=upload(gold_predictions()), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    invite = team_invite_create(team=cast.charlies, actor=cast.charlie, invitee="dave")
    old_code = cast.charlies.join_code
    assert team_leave(team=cast.charlies, user=cast.charlie) is False
    team = Team.objects.get(pk=cast.charlies.pk)
    assert team.join_code != old_code and not team.memberships.exists()
    assert TeamInvite.objects.get(pk=invite.pk).status == InviteStatus.CANCELLED
    with pytest.raises(NotFound):
        team_join(user=cast.dave, join_code=old_code)


# --------------------------------------------------------------------------- maximum team size


def test_the_spec_sets_the_maximum_team_size(cast: Cast, tmp_path: Path) -> None:
    spec = tmp_path / "demo.yaml"
    spec.write_text(SPEC + "max_team_size: 3\n")
    assert challenge_load(spec_path=spec).max_team_size == 3
    spec.write_text(SPEC)
    assert challenge_load(spec_path=spec).max_team_size is None
    for bad in ("0", "two", "2.5", "true"):
        spec.write_text(SPEC + f"max_team_size: {bad}\n")
        with pytest.raises(SpecError, match="max_team_size"):
            challenge_load(spec_path=spec)


def test_a_full_team_takes_nobody_by_join_code_or_invitation(cast: Cast) -> None:
    invite = team_invite_create(team=cast.alpha, actor=cast.alice, invitee="dave")
    set_limit(cast, 2)
    response = cast.client("dave").post("/c/demo/team/", {"action": "join", "join_code": cast.alpha.join_code})
    assert response.status_code == 409 and "at most 2 members" in response.content.decode()
    with pytest.raises(Conflict, match="at most 2 members"):
        team_invite_accept(invite_id=invite.pk, user=cast.dave)
    with pytest.raises(Conflict, match="at most 2 members"):
        team_invite_create(team=cast.alpha, actor=cast.alice, invitee="someone@example.org")
    assert not Membership.objects.filter(user=cast.dave).exists()
    # Room again once a member leaves.
    team_leave(team=cast.alpha, user=cast.bob)
    team_invite_accept(invite_id=invite.pk, user=cast.dave)
    assert Membership.objects.filter(team=cast.alpha).count() == 2
    assert "at most 2 per team" in cast.client("alice").get("/c/demo/team/").content.decode()


# --------------------------------------------------------------------------- who was on the team when


def make_submission(cast: Cast, team: Team, user: User) -> Submission:
    return Submission.objects.create(team=team, phase=cast.dev, submitted_by=user, kind="predictions",
                                     status=Status.FINISHED)


def names(members: list[MemberAt]) -> list[tuple[str, str]]:
    return [(m.user.username, m.role) for m in members]


def test_the_organizers_see_who_was_on_the_team_at_each_submission(cast: Cast) -> None:
    first = make_submission(cast, cast.alpha, cast.alice)  # alice (owner) and bob
    team_leave(team=cast.alpha, user=cast.bob)
    team_join(user=cast.dave, join_code=cast.alpha.join_code)
    second = make_submission(cast, cast.alpha, cast.dave)  # alice and dave
    team_owner_handover(team=cast.alpha, actor=cast.alice, new_owner=cast.dave)
    team_member_remove(team=cast.alpha, actor=cast.dave, member=cast.alice)
    third = make_submission(cast, cast.alpha, cast.dave)  # dave alone, owner

    assert names(team_members_at(team=cast.alpha, when=first.created_at)) == [("alice", "owner"), ("bob", "member")]
    assert names(team_members_at(team=cast.alpha, when=second.created_at)) == [("alice", "owner"), ("dave", "member")]
    assert names(team_members_at(team=cast.alpha, when=third.created_at)) == [("dave", "owner")]

    page = cast.client("oscar").get(f"/c/demo/submissions/{first.pk}/").content.decode()
    assert re.search(r'id="members-then">alice \(owner\), bob ', page)
    # The team itself does not get the organizers' record.
    assert 'id="members-then"' not in cast.client("dave").get(f"/c/demo/submissions/{third.pk}/").content.decode()


def test_members_from_before_the_history_count_from_when_they_joined(cast: Cast) -> None:
    MembershipEvent.objects.all().delete()  # as in a database from before the events
    later = make_submission(cast, cast.alpha, cast.alice)
    assert names(team_members_at(team=cast.alpha, when=later.created_at)) == [("alice", "owner"), ("bob", "member")]
    before = Membership.objects.get(user=cast.alice).joined_at - dt.timedelta(seconds=1)
    assert team_members_at(team=cast.alpha, when=before) == []


# --------------------------------------------------------------------------- which submission counts


def finished(cast: Cast, capture) -> Submission:  # type: ignore[no-untyped-def]
    with capture(execute=True):  # scoring starts after the commit (eager in tests)
        submission = submission_create_predictions(
            team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions()),
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, allow_duplicate=True,  # the same file each time
        )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def test_under_best_the_page_names_the_rule_instead_of_offering_a_choice(
    cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    submission = finished(cast, django_capture_on_commit_callbacks)
    client = cast.client("alice")
    page = html.unescape(client.get(f"/c/demo/submissions/{submission.pk}/").content.decode())
    assert "Select for the leaderboard" not in page
    assert "The board shows each team's best submission (this challenge's rule)" in page
    assert "this one is on the board now" in page
    listing = client.get("/c/demo/submissions/").content.decode()
    assert "nothing to choose" in listing and "on the board</span>" in listing
    # A select posted anyway is refused, not silently recorded.
    client.post(f"/c/demo/submissions/{submission.pk}/", {"action": "select"})
    assert not Submission.objects.get(pk=submission.pk).is_selected


def test_under_selected_the_team_chooses(cast: Cast, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    cast.challenge.ranking_rule = "selected"
    cast.challenge.save()
    first = finished(cast, django_capture_on_commit_callbacks)
    second = finished(cast, django_capture_on_commit_callbacks)
    client = cast.client("bob")
    page = client.get(f"/c/demo/submissions/{first.pk}/").content.decode()
    assert "Select for the leaderboard" in page
    client.post(f"/c/demo/submissions/{first.pk}/", {"action": "select"})
    assert Submission.objects.get(pk=first.pk).is_selected
    assert "Your team selected this submission" in client.get(f"/c/demo/submissions/{first.pk}/").content.decode()
    listing = client.get("/c/demo/submissions/").content.decode()
    assert "(selected)" in listing and "the submission your team selects" in listing
    assert first.board_entries.exists() and not second.board_entries.exists()
