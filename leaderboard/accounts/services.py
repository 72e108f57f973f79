"""Writes for accounts and teams."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

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


# API tokens: DRF keeps one per user, keyed by the token itself, so a new key is a new row.


def _lock_user(user: User) -> None:
    # Token changes of one user are serialised: delete-then-create must not interleave.
    User.objects.select_for_update().filter(pk=user.pk).first()


def api_token_obtain(*, user: User) -> str:
    """The user's token, made if there is none (the API's password exchange)."""
    with transaction.atomic():
        _lock_user(user)
        token, _ = Token.objects.get_or_create(user=user)
    return token.key


def api_token_create(*, user: User) -> str:
    """A first token for ``user``.  Its key is returned this once: pages never show it again."""
    with transaction.atomic():
        _lock_user(user)
        if Token.objects.filter(user=user).exists():
            raise Conflict("you already have an API token; rotate it to get a new one")
        return Token.objects.create(user=user).key


def api_token_rotate(*, user: User) -> str:
    """Replace the user's token with a new one (or make a first): the old key stops working at once."""
    with transaction.atomic():
        _lock_user(user)
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user).key


def api_token_revoke(*, user: User) -> bool:
    """Delete the user's token; False if there was none.  Sessions are not affected."""
    with transaction.atomic():
        _lock_user(user)
        deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0
