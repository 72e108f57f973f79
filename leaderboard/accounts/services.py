"""Writes for accounts and teams."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from leaderboard.accounts.models import Membership, Role, Team, TeamKind
from leaderboard.challenges.models import Challenge
from leaderboard.core.errors import Conflict, NotFound, PermissionDenied, ServiceError


def _new_join_code() -> str:
    return secrets.token_urlsafe(12)


def team_create(
    *, challenge: Challenge, owner: User, name: str, is_anonymous: bool = False, affiliation: str = ""
) -> Team:
    name = name.strip()
    if not name:
        raise ServiceError("a team needs a name", field="name")
    try:
        with transaction.atomic():
            team = Team.objects.create(
                challenge=challenge,
                name=name,
                is_anonymous=is_anonymous,
                affiliation=affiliation,
                join_code=_new_join_code(),
            )
            Membership.objects.create(team=team, user=owner, challenge=challenge, role=Role.OWNER)
    except IntegrityError:
        if Membership.objects.filter(user=owner, challenge=challenge).exists():
            raise Conflict("you are already in a team for this challenge") from None
        raise Conflict(f"a team called {name!r} already exists in this challenge", field="name") from None
    return team


def team_join(*, user: User, join_code: str) -> Team:
    team = Team.objects.filter(join_code=join_code.strip(), kind=TeamKind.PARTICIPANT).first()
    if team is None:
        raise NotFound("no team has that join code; ask the team's owner for a fresh one", field="join_code")
    try:
        with transaction.atomic():
            Membership.objects.create(team=team, user=user, challenge_id=team.challenge_id, role=Role.MEMBER)
    except IntegrityError:
        raise Conflict("you are already in a team for this challenge") from None
    return team


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
        team.affiliation = affiliation
    team.save(update_fields=["is_anonymous", "affiliation"])
    return team
