"""API tokens for scripts: obtain one with a password, rotate or revoke it with itself."""

from __future__ import annotations

from typing import Any

from django.utils.cache import add_never_cache_headers
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.services import api_token_obtain, api_token_revoke, api_token_rotate, login_attempt
from leaderboard.core.errors import ServiceError


class TokenObtainInput(serializers.Serializer[Any]):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)


class TokenOutput(serializers.Serializer[Any]):
    token = serializers.CharField(help_text="send it as `Authorization: Token <token>`")


def _token_response(key: str) -> Response:
    response = Response({"token": key})
    add_never_cache_headers(response)  # a key must not outlive this answer in any cache
    return response


# The password and the key must never reach an error report: not as POST values, and not as
# locals (a serializer's repr shows the data it was given; Response's shows the key).
@method_decorator(sensitive_post_parameters("password"), name="dispatch")
class TokenApi(APIView):
    """The caller's token: POST username and password to get it; DELETE (with it) to revoke it."""

    throttle_classes = ()
    parser_classes = [FormParser, MultiPartParser, JSONParser]

    def get_permissions(self) -> list[BasePermission]:
        # Obtaining takes the password as its credential; revoking takes the token (or a session).
        return [IsAuthenticated()] if self.request.method == "DELETE" else []

    @extend_schema(
        request=TokenObtainInput, auth=[],
        responses={200: TokenOutput, 400: OpenApiResponse(description="wrong username or password (one answer for both)"),
                   429: OpenApiResponse(description="too many failed attempts; Retry-After says when to try again")},
        description="The user's token, made if there is none (the same one again until it is rotated or revoked). "
                    "Failed attempts are limited per username and per client address, as on the login page.",
    )
    @sensitive_variables()
    def post(self, request: Request) -> Response:
        data = TokenObtainInput(data=request.data)
        data.is_valid(raise_exception=True)
        # A TooManyAttempts from here is a 429 with Retry-After (leaderboard.core.api).
        user = login_attempt(request=request._request, username=data.validated_data["username"],
                             password=data.validated_data["password"])
        if user is None or not user.is_active:
            raise ServiceError("Unable to log in with provided credentials.")
        key = api_token_obtain(user=user)
        return _token_response(key)

    @extend_schema(
        request=None, responses={204: OpenApiResponse(description="the token no longer works")},
        description="Revoke the caller's token. Rotate instead to get a new one in the same call.",
    )
    def delete(self, request: Request) -> Response:
        api_token_revoke(user=request.user)  # type: ignore[arg-type]
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenRotateApi(APIView):
    """Replace the caller's token: the answer carries the new key, and the old one stops working."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: TokenOutput},
                   description="A new token for the caller; the one used to call this no longer works.")
    @sensitive_variables()
    def post(self, request: Request) -> Response:
        key = api_token_rotate(user=request.user)  # type: ignore[arg-type]
        return _token_response(key)
