"""Accounts: the password the security tests sign up with, a token's id by its name."""

from __future__ import annotations

from django.contrib.auth.models import User

from leaderboard.accounts.models import ApiToken

PASSWORD = "Tr0ub4dor&3-horse-battery"


def token_id(user: User, name: str) -> int:
    return ApiToken.objects.get(user=user, name=name).pk
