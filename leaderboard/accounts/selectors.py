"""Reads for accounts and teams."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from rest_framework.authtoken.models import Token

from leaderboard.accounts.models import Membership, Team
from leaderboard.challenges.models import Challenge


def team_of_user(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> Team | None:
    if not user.is_authenticated:
        return None
    membership = (
        Membership.objects.select_related("team").filter(user_id=user.pk, challenge=challenge).first()
    )
    return membership.team if membership else None


def user_is_organizer(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> bool:
    if not user.is_authenticated:
        return False
    if getattr(user, "is_superuser", False):
        return True
    return challenge.staff.filter(pk=user.pk).exists()


def api_token_get(*, user: AbstractBaseUser) -> Token | None:
    """The user's API token row (its key is for the moment it is made; see api_token_create)."""
    return Token.objects.filter(user_id=user.pk).first()
