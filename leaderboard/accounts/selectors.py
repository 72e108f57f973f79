"""Reads for accounts and teams."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from leaderboard.accounts.models import (
    ApiToken,
    InviteStatus,
    Membership,
    MembershipEvent,
    MembershipEventKind,
    PendingConfirmation,
    Role,
    Team,
    TeamInvite,
)
from leaderboard.challenges.models import CampaignConsent, Challenge
from leaderboard.challenges.selectors import Viewer, user_is_organizer
from leaderboard.core.errors import PermissionDenied


def request_client_address(request: HttpRequest | None) -> str:
    """The address a request came from: the one place that decides it (the login throttle counts by it).

    Behind a reverse proxy every request comes from the proxy's address, so CLIENT_ADDRESS_HEADER
    names the header the proxy sets; its last entry is the one the proxy itself appended (entries
    before it are whatever the client sent, and a client could forge them).
    """
    if request is None:
        return "unknown"
    header = settings.CLIENT_ADDRESS_HEADER
    if header:
        forwarded = str(request.META.get(header, "")).split(",")[-1].strip()
        if forwarded:
            return forwarded
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def user_email_confirmed(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether the account's e-mail address is confirmed (see ``PendingConfirmation``)."""
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        return False
    return not PendingConfirmation.objects.filter(user_id=user.pk).exists()


TAKE_PART_REFUSAL = ("confirm your e-mail address first: follow the link we mailed you, or ask for a new one "
                     "with \"Send the link again\" at the top of the page")


def user_may_take_part(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    """The one rule for who may create or join a team, accept an invitation, or submit (a file, a
    system, through the API): an active account whose e-mail address is confirmed.  An unconfirmed
    address costs nothing to make, and every team has its own quotas and storage."""
    return bool(user.is_active) and user_email_confirmed(user=user)


TEAM_APPROVAL_REFUSAL = ("your team waits for the organizers' approval: this challenge approves each team before "
                         "it submits; you will be able to submit once they have")


def user_take_part_check(*, user: AbstractBaseUser | AnonymousUser, team: Team | None = None) -> None:
    """``PermissionDenied`` saying what to do unless ``user_may_take_part`` (and, given the team it
    acts for, unless that team is approved where its challenge asks for approval)."""
    if not user_may_take_part(user=user):
        raise PermissionDenied(TAKE_PART_REFUSAL)
    if team is not None and team.approval_pending:
        raise PermissionDenied(TEAM_APPROVAL_REFUSAL)


def team_of_user(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> Team | None:
    if not user.is_authenticated:
        return None
    return user_team_query(user_id=user.pk, challenge_id=challenge.pk).first()


def user_team_query(*, user_id: int, challenge_id: int) -> QuerySet[Team]:
    """The team of a user in a challenge as a query (none or one: a user is in one team per challenge),
    for a caller that asks more of it in the same statement; ``team_of_user`` is its row."""
    return Team.objects.filter(memberships__user_id=user_id, memberships__challenge_id=challenge_id)


def viewer_of(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> tuple[Viewer, Team | None]:
    """Who looks at a challenge's pages: an organizer, a member of a team in it (with the team), a
    logged-in outsider, or anonymous.  The pages ask; the reads of ``challenges`` take the answer."""
    team = team_of_user(user=user, challenge=challenge)
    if user_is_organizer(user=user, challenge=challenge):
        return Viewer.ORGANIZER, team
    if team is not None:
        return Viewer.MEMBER, team
    return (Viewer.OUTSIDER if user.is_authenticated else Viewer.ANONYMOUS), None


def api_token_list(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's API tokens, oldest first (their keys are for the moment they are made)."""
    return ApiToken.objects.filter(user_id=user.pk).order_by("created_at", "id")


def user_email_in_use(*, email: str, exclude: AbstractBaseUser | None = None) -> bool:
    """Whether an account (other than ``exclude``) has this address, compared case-insensitively."""
    others = User.objects.filter(email__iexact=email.strip())
    if exclude is not None:
        others = others.exclude(pk=exclude.pk)
    return others.exists()


def user_memberships(*, user: AbstractBaseUser) -> QuerySet[Membership]:
    """The user's teams, one per challenge, with the challenge."""
    return (
        Membership.objects.filter(user_id=user.pk)
        .select_related("team", "team__challenge")
        .order_by("team__challenge__title")
    )


def team_members(*, team: Team) -> QuerySet[Membership]:
    return Membership.objects.filter(team=team).select_related("user").order_by("joined_at", "pk")


def team_invites_for_user(*, user: AbstractBaseUser, challenge: Challenge | None = None) -> QuerySet[TeamInvite]:
    """Invitations waiting for the user's answer: to the account, or to its e-mail address before
    the account had it (matched here, so an address set today finds last week's invitation)."""
    addressed = Q(invited_user_id=user.pk)
    email = getattr(user, "email", "")
    # By address only once the account has shown it reads that address: else anyone could sign
    # up with someone's address and read (or decline) the invitations sent to it.
    if email and user_email_confirmed(user=user):
        addressed |= Q(invited_user__isnull=True, email__iexact=email)
    invites = TeamInvite.objects.filter(addressed, status=InviteStatus.PENDING)
    if challenge is not None:
        invites = invites.filter(team__challenge=challenge)
    return invites.select_related("team", "team__challenge", "invited_by").order_by("-created_at")


def team_invites_pending(*, team: Team) -> QuerySet[TeamInvite]:
    """The team's invitations still waiting for an answer, for its owner."""
    return team.invites.filter(status=InviteStatus.PENDING).select_related("invited_user").order_by("created_at")


@dataclass(frozen=True)
class MemberAt:
    user: User
    role: str
    since: dt.datetime  # when they joined (the membership that was current at the time asked about)


def team_members_at(*, team: Team, when: dt.datetime) -> list[MemberAt]:
    """Who was on ``team`` at ``when``, and who owned it, from its membership events (owner first).

    For the organizers: who was on the team when a submission was made.  Memberships older than
    the events (none on this team's record) count from their ``joined_at``, with their current role.
    """
    members: dict[int, MemberAt] = {}
    owner_id: int | None = None
    for event in MembershipEvent.objects.filter(team=team, at__lte=when).select_related("user"):
        if event.event in (MembershipEventKind.CREATED, MembershipEventKind.JOINED):
            members[event.user_id] = MemberAt(user=event.user, role=Role.MEMBER, since=event.at)
        elif event.event in (MembershipEventKind.LEFT, MembershipEventKind.REMOVED):
            members.pop(event.user_id, None)
        if event.event in (MembershipEventKind.CREATED, MembershipEventKind.OWNER):
            owner_id = event.user_id
    recorded = MembershipEvent.objects.filter(team=team).values("user_id")
    for membership in (
        Membership.objects.filter(team=team, joined_at__lte=when).exclude(user_id__in=recorded).select_related("user")
    ):
        members[membership.user_id] = MemberAt(user=membership.user, role=Role.MEMBER, since=membership.joined_at)
        if membership.role == Role.OWNER and owner_id is None:
            owner_id = membership.user_id
    return sorted(
        (replace(m, role=Role.OWNER) if uid == owner_id else m for uid, m in members.items()),
        key=lambda m: (m.role != Role.OWNER, m.since),
    )


def team_in_campaigns(team: Team) -> bool:
    """Whether an evaluation campaign may run the team's archived systems again: the challenge's
    terms (``Challenge.campaign_consent``) with the team's word (``Team.campaign_choice``).  The one
    rule the campaign's plan and the team page both read."""
    consent = team.challenge.campaign_consent
    if consent == CampaignConsent.REQUIRED:
        return True
    if consent == CampaignConsent.OPT_IN:
        return team.campaign_choice == "in"
    return team.campaign_choice != "out"


def campaign_choice_text(team: Team) -> str:
    """What the team page says of campaigns, in the team's words."""
    consent = team.challenge.campaign_consent
    if consent == CampaignConsent.REQUIRED:
        return "this challenge's terms let the organizers run your archived systems again on new data"
    said = {"in": "you opted in", "out": "you opted out", "": "you have not said"}[team.campaign_choice]
    runs = "may run" if team_in_campaigns(team) else "will not run"
    return f"{said}: evaluation campaigns {runs} your archived systems again on new data"
