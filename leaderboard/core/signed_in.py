"""The account behind a request that only signed-in users reach."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request


def authenticated_user(request: HttpRequest | Request) -> User:
    """``request.user`` as the ``User`` it is in a view behind ``login_required`` or DRF's
    ``IsAuthenticated`` (the type says ``User | AnonymousUser``).  Refused (403) if nobody is signed
    in, which those guards never let through."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("Log in first.")
    return user
