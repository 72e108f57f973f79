"""The API's token authentication: ``Authorization: Token <key>`` against the stored digests."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_variables
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_use


class ApiTokenAuthentication(BaseAuthentication):
    """``request.auth`` is the ApiToken used, so that an API call can revoke or rotate that one."""

    keyword = "Token"

    @method_decorator(sensitive_variables("words", "key"))
    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != self.keyword.lower().encode():
            return None  # another scheme, or none: the session may still authenticate
        if len(words) != 2:
            raise AuthenticationFailed("Invalid token header: send 'Authorization: Token <key>'.")
        try:
            key = words[1].decode("ascii")
        except UnicodeError:
            raise AuthenticationFailed("Invalid token header: a key is ASCII.") from None
        token = api_token_use(key=key)
        # One answer for an unknown key and a disabled account: neither says which it was.
        if token is None or not token.user.is_active:
            raise AuthenticationFailed("Invalid token.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword  # makes failures 401 (with WWW-Authenticate), not 403


class ApiTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """How the OpenAPI schema describes it (the name DRF's own token scheme had)."""

    target_class = "leaderboard.accounts.auth.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "Token-based authentication with required prefix \"Token\""}
