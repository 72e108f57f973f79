"""Writes for accounts and teams."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import math
import secrets
import smtplib

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, connection, transaction
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from leaderboard.accounts.models import (
    ApiToken,
    ChallengeTeamRules,
    InviteStatus,
    LoginFailure,
    Membership,
    MembershipEvent,
    MembershipEventKind,
    PendingConfirmation,
    Role,
    Team,
    TeamInvite,
    TeamKind,
)
from leaderboard.accounts.selectors import (
    request_client_address,
    user_email_confirmed,
    user_email_in_use,
    user_take_part_check,
)
from leaderboard.challenges.models import CampaignConsent, Challenge
from leaderboard.challenges.versions import board_changed
from leaderboard.core.display import shown_text_problem
from leaderboard.core.errors import Conflict, NotFound, PermissionDenied, ServiceError, TooManyAttempts

logger = logging.getLogger(__name__)


def _new_join_code() -> str:
    return secrets.token_urlsafe(12)


# One answer for every name a team cannot have: empty, too long, or another team's.  A clash is
# not a 409 of its own, and does not say whose name it is: an anonymous team's name is known
# to its members and the organizers only, and a distinct answer would confirm a guess at it.
TEAM_NAME_RULE = "choose another name: a team's name has 1 to 100 characters and is one no other team of this challenge has"


def _team_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 100:
        raise ServiceError(TEAM_NAME_RULE, field="name")
    team_shown_text_check(name, field="name", what="the team's name")
    return name


def _team_affiliation(affiliation: str) -> str:
    affiliation = affiliation.strip()
    if len(affiliation) > 200:
        raise ServiceError("an affiliation has at most 200 characters", field="affiliation")
    team_shown_text_check(affiliation, field="affiliation", what="the affiliation")
    return affiliation


def team_shown_text_check(text: str, *, field: str, what: str) -> None:
    """Refuse a team's name or affiliation that :func:`shown_text_problem` finds unfit, saying ``what``
    it is: boards, pages and exports show it to everyone.  The results import calls it too."""
    problem = shown_text_problem(text)
    if problem is not None:
        raise ServiceError(f"{what} {problem}: use visible characters only", field=field)


def team_rules_set(*, challenge: Challenge, approval_required: bool) -> None:
    """Keep the challenge's team rules (at every load of its spec, as ``challenges.spec.team_rules_parse``
    reads them).  Switching approval on holds new teams only; switching it off releases the teams still
    waiting."""
    ChallengeTeamRules.objects.update_or_create(challenge=challenge, defaults={"approval_required": approval_required})
    if not approval_required:
        Team.objects.filter(challenge=challenge, approval_pending=True).update(approval_pending=False)


def team_create(
    *, challenge: Challenge, owner: User, name: str, is_anonymous: bool = False, affiliation: str = ""
) -> Team:
    user_take_part_check(user=owner)
    name = _team_name(name)
    affiliation = _team_affiliation(affiliation)
    try:
        with transaction.atomic():
            team = Team.objects.create(
                challenge=challenge,
                name=name,
                is_anonymous=is_anonymous,
                affiliation=affiliation,
                join_code=_new_join_code(),
                approval_pending=ChallengeTeamRules.objects.filter(
                    challenge=challenge, approval_required=True).exists(),
            )
            Membership.objects.create(team=team, user=owner, challenge=challenge, role=Role.OWNER)
            MembershipEvent.objects.create(team=team, user=owner, event=MembershipEventKind.CREATED, by=owner)
    except IntegrityError:
        if Membership.objects.filter(user=owner, challenge=challenge).exists():
            raise Conflict("you are already in a team for this challenge") from None
        raise ServiceError(TEAM_NAME_RULE, field="name") from None
    return team


def baseline_team_get_or_create(*, challenge: Challenge, name: str) -> Team:
    """The marked row for a baseline or published system; a participant team's name is refused."""
    team_shown_text_check(name, field="name", what=f"the baseline's name {name!r}")
    team, _ = Team.objects.get_or_create(
        challenge=challenge,
        name=name[:100],
        defaults={"kind": TeamKind.BASELINE,
                  "join_code": hashlib.sha256(f"{challenge.slug}:{name}".encode()).hexdigest()[:32]},
    )
    if team.kind != TeamKind.BASELINE:
        raise ServiceError(f"{name}: a participant team already has that name")
    return team


def team_join(*, user: User, join_code: str) -> Team:
    user_take_part_check(user=user)  # before the code is looked up: no unconfirmed account tries codes
    team = Team.objects.filter(join_code=join_code.strip(), kind=TeamKind.PARTICIPANT).first()
    if team is None:
        raise NotFound("no team has that join code; ask the team's owner for a fresh one", field="join_code")
    with transaction.atomic():
        _member_add(team=team, user=user, by=user)
    return team


def _lock_team(team: Team) -> None:
    # Membership changes of one team are serialised, so two joins cannot both pass the size check
    # (SQLite's IMMEDIATE transactions serialise them anyway; this is for row-locking databases).
    Team.objects.select_for_update().filter(pk=team.pk).first()


def _team_full_check(team: Team) -> None:
    """Refuse when ``team`` has as many members as its challenge allows.  Hold the team's lock."""
    limit = Challenge.objects.values_list("max_team_size", flat=True).get(pk=team.challenge_id)
    if limit is not None and Membership.objects.filter(team=team).count() >= limit:
        raise Conflict(f"{team.name} is full: this challenge allows at most {limit} members per team")


def _member_add(*, team: Team, user: User, by: User | None) -> Membership:
    """Add ``user`` to ``team`` as a member, within the challenge's team size; call inside a transaction."""
    user_take_part_check(user=user)
    _lock_team(team)
    _team_full_check(team)
    try:
        with transaction.atomic():
            membership = Membership.objects.create(team=team, user=user, challenge_id=team.challenge_id, role=Role.MEMBER)
    except IntegrityError:
        raise Conflict("you are already in a team for this challenge; leave it first to join another") from None
    MembershipEvent.objects.create(team=team, user=user, event=MembershipEventKind.JOINED, by=by)
    return membership


def team_member_add(*, team: Team, user: User) -> Membership:
    """Add ``user`` to ``team`` on an operator's word (``manage.py team_create --member``): the same
    checks as a join (a confirmed account, not in another team of the challenge, the size limit), with
    no join code; the membership event has no ``by`` (nobody on the site did it)."""
    with transaction.atomic():
        return _member_add(team=team, user=user, by=None)


def _require_owner(team: Team, user: User) -> None:
    if not Membership.objects.filter(team=team, user=user, role=Role.OWNER).exists():
        raise PermissionDenied("only the team's owner can do this")


def team_rotate_join_code(*, team: Team, actor: User) -> str:
    _require_owner(team, actor)
    team.join_code = _new_join_code()
    team.save(update_fields=["join_code"])
    return team.join_code


def team_update(*, team: Team, actor: User, is_anonymous: bool | None = None, affiliation: str | None = None) -> Team:
    _require_owner(team, actor)
    if is_anonymous is not None:
        team.is_anonymous = is_anonymous
    if affiliation is not None:
        team.affiliation = _team_affiliation(affiliation)
    with transaction.atomic():
        team.save(update_fields=["is_anonymous", "affiliation"])
        board_changed(challenge_id=team.challenge_id)  # the boards show both
    return team


CAMPAIGN_CHOICES = ("", "in", "out")


def team_campaign_choice_set(*, team: Team, actor: User, choice: str) -> Team:
    """The team's word on evaluation campaigns re-running its archived systems on new data: "in",
    "out" or "" (the challenge's terms decide).  Under terms that allow no opting out it is refused,
    not stored and ignored; a campaign started earlier keeps the runs it made."""
    _require_owner(team, actor)
    if choice not in CAMPAIGN_CHOICES:
        raise ServiceError("say in, out, or nothing", field="campaign_choice")
    if team.challenge.campaign_consent == CampaignConsent.REQUIRED and choice == "out":
        raise ServiceError("this challenge's terms let the organizers run every archived system again in "
                           "evaluation campaigns: a team cannot opt out", field="campaign_choice")
    Team.objects.filter(pk=team.pk).update(campaign_choice=choice)
    team.campaign_choice = choice
    return team


def team_rename(*, team: Team, actor: User, name: str) -> Team:
    _require_owner(team, actor)
    name = _team_name(name)
    try:
        with transaction.atomic():
            Team.objects.filter(pk=team.pk).update(name=name)
            board_changed(challenge_id=team.challenge_id)
    except IntegrityError:
        raise ServiceError(TEAM_NAME_RULE, field="name") from None
    team.name = name
    return team


def team_leave(*, team: Team, user: User) -> bool:
    """Take ``user`` off ``team``.  True if the team went with its last member.

    The owner hands over first while others remain.  A team left empty is deleted if it never
    submitted; otherwise it stays (its rows stay on the boards, its history with the organizers)
    with a new join code and its invitations cancelled, so nobody can take over its name.
    """
    with transaction.atomic():
        _lock_team(team)
        membership = Membership.objects.filter(team=team, user=user).first()
        if membership is None:
            raise NotFound("you are not in this team")
        others = Membership.objects.filter(team=team).exclude(pk=membership.pk)
        if membership.role == Role.OWNER and others.exists():
            raise Conflict("hand the team over to another member before you leave it")
        membership.delete()
        MembershipEvent.objects.create(team=team, user=user, event=MembershipEventKind.LEFT, by=user)
        if others.exists():
            return False
        if not team.submissions.exists():
            team.delete()
            return True
        Team.objects.filter(pk=team.pk).update(join_code=_new_join_code())
        team.invites.filter(status=InviteStatus.PENDING).update(
            status=InviteStatus.CANCELLED, responded_at=timezone.now()
        )
    return False


def team_member_remove(*, team: Team, actor: User, member: User) -> None:
    """The owner takes ``member`` off the team (the owner leaves with ``team_leave`` instead)."""
    with transaction.atomic():
        _lock_team(team)
        _require_owner(team, actor)
        if member.pk == actor.pk:
            raise ServiceError("you cannot remove yourself: hand the team over, then leave it")
        if not Membership.objects.filter(team=team, user=member).delete()[0]:
            raise NotFound(f"{member.username} is not in this team")
        MembershipEvent.objects.create(team=team, user=member, event=MembershipEventKind.REMOVED, by=actor)


def team_owner_handover(*, team: Team, actor: User, new_owner: User) -> None:
    """Make ``new_owner`` (a member) the owner; ``actor``, the owner until now, stays as a member."""
    with transaction.atomic():
        _lock_team(team)
        _require_owner(team, actor)
        if new_owner.pk == actor.pk:
            raise ServiceError("you already own this team")
        if not Membership.objects.filter(team=team, user=new_owner).update(role=Role.OWNER):
            raise NotFound(f"{new_owner.username} is not in this team")
        Membership.objects.filter(team=team, user=actor).update(role=Role.MEMBER)
        MembershipEvent.objects.create(team=team, user=new_owner, event=MembershipEventKind.OWNER, by=actor)


# Invitations.  Each one may send an e-mail to an address the owner typed, so a team holds a
# bounded number of them at a time.
MAX_PENDING_INVITES = 20


def _invitee(text: str) -> tuple[User | None, str]:
    """The account and address an invitation is for: by e-mail address (an account may not exist
    yet) or by username (it must)."""
    if "@" in text:
        try:
            validate_email(text)
        except ValidationError:
            raise ServiceError(f"{text!r} is not an e-mail address", field="invitee") from None
        return User.objects.filter(email__iexact=text, is_active=True).order_by("pk").first(), text
    user = User.objects.filter(username=text, is_active=True).first()
    if user is None:
        raise NotFound(f"nobody is called {text!r}; invite them by e-mail address instead", field="invitee")
    return user, ""


def team_invite_create(*, team: Team, actor: User, invitee: str, site_url: str = "") -> TeamInvite:
    """Invite someone to ``team`` by username or e-mail address; they accept or decline.

    An invitation by address answers the same whether an account has that address or not (the
    owner learns nothing about other people's accounts); it waits for the account that signs up
    with the address or sets it on its profile.  The invitee is mailed when an address is known,
    with links under ``site_url``.
    """
    _require_owner(team, actor)
    invitee = invitee.strip()
    if not invitee:
        raise ServiceError("give a username or an e-mail address", field="invitee")
    user, email = _invitee(invitee)
    with transaction.atomic():
        _lock_team(team)
        if user is not None and user.pk == actor.pk:
            raise ServiceError("you are in this team already", field="invitee")
        if user is not None and Membership.objects.filter(team=team, user=user).exists():
            raise Conflict(f"{invitee} is in this team already", field="invitee")
        if user is not None and not email and Membership.objects.filter(user=user, challenge_id=team.challenge_id).exists():
            raise Conflict(f"{user.username} is in another team of this challenge", field="invitee")
        _team_full_check(team)
        pending = team.invites.filter(status=InviteStatus.PENDING)
        if (email and pending.filter(email__iexact=email).exists()) or (
            user is not None and pending.filter(invited_user=user).exists()
        ):
            raise Conflict(f"{invitee} is invited already; the invitation is waiting for an answer", field="invitee")
        if pending.count() >= MAX_PENDING_INVITES:
            raise Conflict(f"a team may have {MAX_PENDING_INVITES} invitations waiting at a time; cancel some first")
        invite = TeamInvite.objects.create(team=team, invited_user=user, email=email, invited_by=actor)
        transaction.on_commit(lambda: _invite_mail(invite, site_url=site_url))
    return invite


def _invite_mail(invite: TeamInvite, *, site_url: str) -> None:
    address = invite.email or (invite.invited_user.email if invite.invited_user else "")
    if not address:
        return  # an account without an address sees the invitation on its pages only
    team = invite.team
    sender = invite.invited_by.username if invite.invited_by else "The owner of a team"
    base = site_url.rstrip("/")
    body = (
        f"{sender} invites you to join the team {team.name} in the challenge {team.challenge.title} on Readerboard.\n\n"
        f"Accept or decline it on your profile page: {base}{reverse('profile')}\n"
        f"No account yet? Sign up with this address ({address}) and the invitation will be there:\n"
        f"{base}{reverse('signup')}\n\n"
        "If you do not know the sender, ignore this message.\n"
    )
    try:
        send_mail(f"Invitation to the team {team.name}", body, settings.DEFAULT_FROM_EMAIL, [address])
    except (OSError, smtplib.SMTPException):
        # The invitation stands without the mail: the invitee finds it on the profile page.
        logger.warning("could not mail invitation %s to its invitee", invite.pk, exc_info=True)


def _invite_for(*, invite_id: int, user: User) -> TeamInvite:
    """A pending invitation addressed to ``user`` (by account, or by its e-mail address), locked."""
    invite = TeamInvite.objects.select_for_update().select_related("team").filter(
        pk=invite_id, status=InviteStatus.PENDING
    ).first()
    if invite is not None and (
        invite.invited_user_id == user.pk
        or (invite.invited_user_id is None and user.email and invite.email.casefold() == user.email.casefold()
            and user_email_confirmed(user=user))  # as team_invites_for_user: a confirmed address only
    ):
        return invite
    # The same answer for an invitation that does not exist and for one to someone else.
    raise NotFound("no such invitation is waiting for you")


def team_invite_accept(*, invite_id: int, user: User) -> Team:
    """Join the invitation's team (within the challenge's team size); refused while in another team."""
    with transaction.atomic():
        invite = _invite_for(invite_id=invite_id, user=user)
        _member_add(team=invite.team, user=user, by=invite.invited_by)
        TeamInvite.objects.filter(pk=invite.pk).update(
            status=InviteStatus.ACCEPTED, invited_user=user, responded_at=timezone.now()
        )
    return invite.team


def team_invite_decline(*, invite_id: int, user: User) -> None:
    with transaction.atomic():
        invite = _invite_for(invite_id=invite_id, user=user)
        TeamInvite.objects.filter(pk=invite.pk).update(
            status=InviteStatus.DECLINED, invited_user=user, responded_at=timezone.now()
        )


def team_invite_cancel(*, team: Team, actor: User, invite_id: int) -> None:
    _require_owner(team, actor)
    if not team.invites.filter(pk=invite_id, status=InviteStatus.PENDING).update(
        status=InviteStatus.CANCELLED, responded_at=timezone.now()
    ):
        raise NotFound("no such invitation is waiting")


def team_invites_match(*, user: User) -> int:
    """Address to ``user`` the waiting invitations sent to its e-mail address before it had an
    account with it (once the address is confirmed).  Returns how many."""
    if not user.email or not user_email_confirmed(user=user):
        return 0
    return TeamInvite.objects.filter(
        invited_user__isnull=True, email__iexact=user.email, status=InviteStatus.PENDING
    ).update(invited_user=user)


# The account itself: sign-up, the confirmation of its e-mail address, changes of the address.

_CONFIRM_SALT = "readerboard.accounts.confirm-email"


def _site(site_url: str) -> str:
    return site_url.rstrip("/")


def _account_mail(*, address: str, subject: str, body: str) -> bool:
    """Send one account mail to ``address``, at most EMAIL_CONFIRM_MAIL_LIMIT per window per address
    (sign-up, the address's "you have an account" notice and "send the link again" share the count,
    so nobody makes the platform mail someone over and over).  False if not sent."""
    try:
        throttle_reserve([(f"{_MAIL_KEY}{address.strip().casefold()}"[:200], settings.EMAIL_CONFIRM_MAIL_LIMIT)],
                         window_s=settings.EMAIL_CONFIRM_MAIL_WINDOW_S, refusal="{seconds}")
    except TooManyAttempts:
        return False
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [address])
    except (OSError, smtplib.SMTPException):
        # As with invitations: the account stands without the mail; "send the link again" retries.
        logger.warning("could not send an account mail (%s)", subject, exc_info=True)
        return False
    return True


def email_confirmation_token(*, user: User) -> str:
    """A signed, timestamped token for confirming ``user``'s current address (a link sent to an
    earlier address confirms nothing once the address changed)."""
    return signing.dumps({"u": user.pk, "e": user.email.strip().casefold()}, salt=_CONFIRM_SALT)


def user_confirmation_send(*, user: User, site_url: str) -> None:
    """Mail ``user`` a link that confirms its address; ``TooManyAttempts`` if that address had its
    share of mails in the window.  Nothing to do for a confirmed account."""
    if user_email_confirmed(user=user) or not user.email:
        return
    link = f"{_site(site_url)}{reverse('email-confirm', kwargs={'token': email_confirmation_token(user=user)})}"
    days = max(1, settings.EMAIL_CONFIRM_TIMEOUT // (24 * 60 * 60))
    body = (
        f"Someone (we hope you) made the Readerboard account \"{user.get_username()}\" with this address.\n\n"
        f"To confirm the address, open this link (it works for {days} day{'s' if days != 1 else ''}):\n\n{link}\n\n"
        "Until then the account can log in, but not create or join a team or submit.\n"
        "If it was not you, ignore this message: the account stays unconfirmed.\n"
    )
    if not _account_mail(address=user.email, subject="Confirm your e-mail address for Readerboard", body=body):
        window_min = max(1, settings.EMAIL_CONFIRM_MAIL_WINDOW_S // 60)
        raise TooManyAttempts(
            f"We have sent as many links to {user.email} as we send in {window_min} minutes (or the mail server "
            "did not take the message): look for the last one, or try again later.",
            retry_after=settings.EMAIL_CONFIRM_MAIL_WINDOW_S)


def _address_taken_mail(*, owner: User, site_url: str) -> None:
    base = _site(site_url)
    body = (
        "Someone (perhaps you) tried to sign up on Readerboard with this address, which already has an "
        f"account: \"{owner.get_username()}\".\n\n"
        f"Log in: {base}{reverse('login')}\n"
        f"Forgot the password? Set a new one: {base}{reverse('password_reset')}\n\n"
        "If it was not you, ignore this message: nothing has changed.\n"
    )
    _account_mail(address=owner.email, subject="Sign-up with your Readerboard address", body=body)


def user_sign_up(*, user: User, site_url: str) -> User | None:
    """Make the account ``user`` (unsaved, its password set) unconfirmed, and mail it the link.

    An address another account has makes no account: that account's owner is mailed instead,
    and the caller answers exactly as for a new account, so sign-up tells nobody which addresses
    have accounts.  Returns the new account, or None.
    """
    user.email = user.email.strip()
    with transaction.atomic():
        owner = User.objects.filter(email__iexact=user.email).order_by("pk").first() if user.email else None
        if owner is None:
            user.save()
            PendingConfirmation.objects.create(user=user)
    if owner is not None:
        _address_taken_mail(owner=owner, site_url=site_url)
        return None
    try:
        user_confirmation_send(user=user, site_url=site_url)
    except TooManyAttempts:
        pass  # the account waits; the owner asks for the link again once logged in
    return user


def user_email_confirm(*, token: str) -> User:
    """Confirm the address a link from ``user_confirmation_send`` was for; the account may then take
    part, and invitations waiting for the address are addressed to it.  Confirming again is
    harmless.  ``ServiceError`` saying what to do for a link that is expired, altered, or for an
    address the account no longer has."""
    try:
        data = signing.loads(token, salt=_CONFIRM_SALT, max_age=settings.EMAIL_CONFIRM_TIMEOUT)
    except signing.SignatureExpired:
        raise ServiceError("This link has expired: log in and ask for a new one with \"Send the link again\".") from None
    except signing.BadSignature:
        raise ServiceError("This link is not one we sent: copy the whole link from the mail, or log in and ask "
                           "for a new one.") from None
    user_id = data.get("u") if isinstance(data, dict) else None
    user = User.objects.filter(pk=user_id, is_active=True).first() if user_id is not None else None
    if user is None or user.email.strip().casefold() != data.get("e"):
        raise ServiceError("This link is for an address the account no longer has: log in and ask for a new one.")
    with transaction.atomic():
        PendingConfirmation.objects.filter(user=user).delete()
        team_invites_match(user=user)
    return user


def user_email_change(*, request: HttpRequest, user: User, email: str, password: str) -> User:
    """Set ``user``'s e-mail address, confirmed with the password (a borrowed session alone must not
    be able to redirect password resets); refused if another account has it, in any case.

    A new address is unconfirmed until its link is opened, whatever the account was before: else
    one mailbox would confirm account after account, each moving on to an address nobody reads.
    The link for the new address is mailed (one for an earlier address stops working).
    """
    email = email.strip()
    try:
        validate_email(email)
    except ValidationError:
        raise ServiceError("enter a valid e-mail address", field="email") from None
    # Through the login throttle: this form must not be a way round it to guess the password.
    if login_attempt(request=request, username=user.get_username(), password=password) != user:
        raise PermissionDenied("that is not your password", field="password")
    with transaction.atomic():
        if user_email_in_use(email=email, exclude=user):
            raise Conflict("another account uses this e-mail address", field="email")
        changed = email.casefold() != user.email.strip().casefold()
        User.objects.filter(pk=user.pk).update(email=email)
        user.email = email
        if changed:
            PendingConfirmation.objects.get_or_create(user=user)
    if not user_email_confirmed(user=user):
        try:
            user_confirmation_send(user=user, site_url=request.build_absolute_uri("/"))
        except TooManyAttempts:
            pass  # the page offers "send the link again", which says why it cannot
    return user


# Failed logins are counted per (client, username) pair and per client in a sliding window, never
# per username alone: a limit per username lets anyone keep its owner out of login and the token
# exchange.  A browser that logged in to an account before carries a signed device
# cookie; its attempts on that account count on the cookie alone, so nobody elsewhere (nor behind
# the same proxy address) can lock it out.  The counts are rows in the database, so that every web
# process (and the API) agrees.

DEVICE_COOKIE = "rb_device"
_DEVICE_SALT = "readerboard.accounts.login-device"
_MAIL_KEY = "mail:"  # the confirmation mails' counts; every other key counts logins


def _throttle_prune(now: dt.datetime) -> None:
    """Drop the rows no count needs (older than their throttle's window): a guessing run leaves no
    lasting table behind."""
    login_window = dt.timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_S)
    mail_window = dt.timedelta(seconds=settings.EMAIL_CONFIRM_MAIL_WINDOW_S)
    LoginFailure.objects.filter(at__lte=now - login_window).exclude(key__startswith=_MAIL_KEY).delete()
    LoginFailure.objects.filter(key__startswith=_MAIL_KEY, at__lte=now - mail_window).delete()


def _username_key(username: str) -> str:
    # Case-folded: "Alice" and "alice" share a count, so changing case buys no extra guesses.
    return username.strip().casefold()


def _device_nonce(request: HttpRequest | None, username: str) -> str | None:
    """The nonce of the request's device cookie if it was issued to this username, else None."""
    if request is None:
        return None
    value = request.get_signed_cookie(DEVICE_COOKIE, default=None, salt=_DEVICE_SALT,
                                      max_age=settings.LOGIN_DEVICE_COOKIE_AGE_S)
    if not value:
        return None
    owner, _, nonce = str(value).rpartition("|")
    return nonce if nonce and owner == _username_key(username) else None


def login_device_cookie_set(response: HttpResponse, *, user: AbstractBaseUser) -> None:
    """Mark the browser (or script) that just logged in as ``user`` as a known device of it."""
    response.set_signed_cookie(
        DEVICE_COOKIE, f"{_username_key(user.get_username())}|{secrets.token_urlsafe(12)}", salt=_DEVICE_SALT,
        max_age=settings.LOGIN_DEVICE_COOKIE_AGE_S, httponly=True, samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )


def login_throttle_rules(request: HttpRequest | None, username: str) -> list[tuple[str, int]]:
    """The counts an attempt to log in as ``username`` goes against, each with its limit.

    A known device: its own count only.  Anyone else: the (client, username) pair, and the client
    across usernames (with a higher limit: a shared machine or a campus address has several users).
    """
    device = _device_nonce(request, username)
    if device:
        return [(f"device:{device}", settings.LOGIN_FAILURE_LIMIT)]
    client = request_client_address(request)
    return [(f"pair:{client}|{_username_key(username)}"[:200], settings.LOGIN_FAILURE_LIMIT),
            (f"addr:{client}"[:200], settings.LOGIN_FAILURE_CLIENT_LIMIT)]


def _throttle_lock(keys: list[str]) -> None:
    """Serialise the count-then-record of attempts on these keys; call inside the transaction.

    SQLite's IMMEDIATE transactions serialise writers already.  Under PostgreSQL's READ COMMITTED two
    attempts could both count nine failures and both go on: a transaction-scoped advisory lock per
    key (taken in one order, so two attempts cannot deadlock) is held for the bookkeeping only,
    never while a password is hashed.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for key in sorted(keys):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"readerboard-login:{key}"])


def _retry_after(rules: list[tuple[str, int]], now: dt.datetime, window: dt.timedelta) -> int:
    """Seconds until every key is below its limit again; 0 if it is already."""
    wait = 0.0
    for key, limit in rules:
        recent = list(
            LoginFailure.objects.filter(key=key, at__gt=now - window).order_by("-at").values_list("at", flat=True)[:limit]
        )
        if len(recent) >= limit:
            # The limit-th newest failure is the one whose expiry brings the key below the limit.
            wait = max(wait, (recent[-1] + window - now).total_seconds(), 1.0)
    return math.ceil(wait)


def throttle_reserve(rules: list[tuple[str, int]], *, window_s: int, refusal: str) -> list[int]:
    """Count one attempt against every key of ``rules`` (key, limit within ``window_s``) and return
    the rows recorded; ``TooManyAttempts`` (``refusal`` with ``{seconds}`` filled in), recording
    nothing, if any key is at its limit.  The one throttle of the accounts app: logins on every path,
    and confirmation mails.  Recorded first, checked after: concurrent attempts, in any process,
    see each other, so no more than the limit ever pass in a window."""
    keys = [key for key, _ in rules]
    with transaction.atomic():
        _throttle_lock(keys)
        now = timezone.now()
        _throttle_prune(now)
        retry_after = _retry_after(rules, now, dt.timedelta(seconds=window_s))
        if retry_after:
            raise TooManyAttempts(refusal.format(seconds=retry_after), retry_after=retry_after)
        return [LoginFailure.objects.create(key=key).pk for key in keys]


def login_attempt(*, request: HttpRequest | None, username: str, password: str) -> User | None:
    """The user if the password is right, else None; ``TooManyAttempts`` without checking it once
    the attempt's counts (``login_throttle_rules``) are at their limits within the window.

    Every path that checks a password comes here (the login page, the admin's, the API's token
    exchange, the e-mail change).  Unknown usernames are counted and answered exactly as wrong
    passwords, so neither the answer nor the throttle tells whether an account exists.  Each
    attempt is recorded as a failure *before* the password is checked (and the record removed if
    it was right), so no more than the limit are ever checked in a window.
    """
    reserved = throttle_reserve(
        login_throttle_rules(request, username), window_s=settings.LOGIN_FAILURE_WINDOW_S,
        refusal="Too many failed attempts to log in with this username from this address, or from this "
                "address: try again in {seconds} seconds.",
    )
    user = authenticate(request, username=username, password=password)
    if user is not None:
        LoginFailure.objects.filter(pk__in=reserved).delete()
    return user


# API tokens: several per user, each named; only a digest of each key is stored.

API_TOKEN_LIMIT = 20  # per user: enough for every machine and script, and a bound on the page
API_TOKEN_DEFAULT_NAME = "api"  # what the password exchange names the token it makes
_KEY_PREFIX = "rb_"  # says what a key is when it turns up in a log or a leaked file
# Writing the last use on every request would make each API call a write.
_LAST_USE_RESOLUTION = dt.timedelta(minutes=1)


def api_token_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _new_key() -> str:
    return _KEY_PREFIX + secrets.token_urlsafe(30)


def _token_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ServiceError("give the token a name: what uses it (for example 'laptop' or 'submit script')",
                           field="name")
    if len(name) > ApiToken._meta.get_field("name").max_length:  # type: ignore[operator]
        raise ServiceError("a token's name has at most 64 characters", field="name")
    return name


def _lock_user(user: User) -> None:
    # Token changes of one user are serialised: the count and the names are checked, then written.
    User.objects.select_for_update().filter(pk=user.pk).first()


def _set_key(token: ApiToken) -> str:
    key = _new_key()
    token.digest = api_token_digest(key)
    token.prefix = key[:len(_KEY_PREFIX) + 6]
    return key


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new named token for ``user``, and its key, returned this once: pages never show it again."""
    name = _token_name(name)
    with transaction.atomic():
        _lock_user(user)
        if ApiToken.objects.filter(user=user, name=name).exists():
            raise Conflict(f"you already have a token called {name!r}; rotate it, or choose another name",
                           field="name")
        if ApiToken.objects.filter(user=user).count() >= API_TOKEN_LIMIT:
            raise Conflict(f"you have {API_TOKEN_LIMIT} tokens, the most an account may have; revoke one first")
        token = ApiToken(user=user, name=name)
        key = _set_key(token)
        token.save()
    return token, key


def api_token_obtain(*, user: User, name: str = API_TOKEN_DEFAULT_NAME) -> str:
    """The password exchange: a new key for the user's token called ``name``, made if there is none.

    Keys are stored as digests, so the same key cannot be handed out twice: a key of that name
    made before stops working, and the user's other tokens are untouched.
    """
    name = _token_name(name)
    with transaction.atomic():
        _lock_user(user)
        token = ApiToken.objects.filter(user=user, name=name).first()
        if token is None:
            return api_token_create(user=user, name=name)[1]
        key = _set_key(token)
        token.last_used_at = None
        token.save(update_fields=["digest", "prefix", "last_used_at"])
    return key


def api_token_rotate(*, user: User, token_id: int) -> tuple[ApiToken, str]:
    """A new key for one of the user's tokens, same name: the old key stops working at once."""
    with transaction.atomic():
        _lock_user(user)
        token = ApiToken.objects.filter(user=user, pk=token_id).first()
        if token is None:
            raise NotFound("no such token")
        key = _set_key(token)
        token.last_used_at = None
        token.save(update_fields=["digest", "prefix", "last_used_at"])
    return token, key


def api_token_revoke(*, user: User, token_id: int) -> bool:
    """Delete one of the user's tokens; False if it is not theirs (or gone).  Sessions are not affected."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return deleted > 0


@sensitive_variables("key")
def api_token_use(*, key: str) -> ApiToken | None:
    """The token a request presents, with its user; None if no token has this key.  Notes the use."""
    token = ApiToken.objects.select_related("user").filter(digest=api_token_digest(key)).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= _LAST_USE_RESOLUTION:
        # A conditional update: concurrent requests write it once, and no row lock is taken.
        ApiToken.objects.filter(pk=token.pk).exclude(last_used_at__gt=now - _LAST_USE_RESOLUTION).update(
            last_used_at=now)
        token.last_used_at = now
    return token
