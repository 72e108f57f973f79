"""API tokens for scripts: a key for a password; list, create, rotate and revoke named tokens."""

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

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.selectors import api_token_list
from leaderboard.accounts.services import (
    API_TOKEN_DEFAULT_NAME,
    API_TOKEN_LIMIT,
    api_token_create,
    api_token_obtain,
    api_token_revoke,
    api_token_rotate,
    login_attempt,
    login_device_cookie_set,
)
from leaderboard.core.errors import NotFound, PermissionDenied, ServiceError
from leaderboard.core.signed_in import authenticated_user


class TokenObtainInput(serializers.Serializer[Any]):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)
    name = serializers.CharField(required=False, default=API_TOKEN_DEFAULT_NAME, max_length=64,
                                 help_text="which of the user's tokens gets the new key (made if there is none)")


class TokenOutput(serializers.Serializer[Any]):
    token = serializers.CharField(help_text="send it as `Authorization: Token <token>`; shown this once")
    name = serializers.CharField()


class TokenInfo(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the key's first characters")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="to the minute")


class TokenCreateInput(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=64)


class TokenCreated(TokenInfo):
    token = serializers.CharField(help_text="the key, shown this once")


def _token_response(key: str, token: ApiToken | None = None, *, name: str = "",
                    code: int = status.HTTP_200_OK) -> Response:
    body: dict[str, Any] = {"token": key, "name": token.name if token else name}
    if token is not None:
        body = {**TokenInfo(token).data, **body}
    response = Response(body, status=code)
    add_never_cache_headers(response)  # a key must not outlive this answer in any cache
    return response


def _calling_token(request: Request) -> ApiToken:
    """The token the request was made with: revoke and rotate act on it, not on a guess."""
    if not isinstance(request.auth, ApiToken):
        raise ServiceError("this acts on the token the request is made with; send 'Authorization: Token <key>' "
                           "(to act on a token by name, use /api/v1/auth/tokens/)")
    return request.auth


def _not_by_token(request: Request) -> None:
    """Making or revoking other tokens takes a logged-in session (or, to make one, the password):
    a leaked key must not mint a key that outlives its own revocation."""
    if isinstance(request.auth, ApiToken):
        raise PermissionDenied("a token cannot make or revoke other tokens: use the API tokens page while "
                               "logged in, or POST /api/v1/auth/token/ with the password")


# The password and the key must never reach an error report: not as POST values, and not as
# locals (a serializer's repr shows the data it was given; Response's shows the key).
@method_decorator(sensitive_post_parameters("password"), name="dispatch")
class TokenApi(APIView):
    """A key for a password (POST); DELETE, with a key, revokes that key's token."""

    throttle_classes = ()
    parser_classes = [FormParser, MultiPartParser, JSONParser]

    def get_permissions(self) -> list[BasePermission]:
        # Obtaining takes the password as its credential; revoking takes the token.
        return [IsAuthenticated()] if self.request.method == "DELETE" else []

    def perform_authentication(self, request: Request) -> None:
        # The password exchange ignores any Authorization header: a script still sending a
        # revoked key with its password must get a new key, not a 401.
        if request.method != "POST":
            super().perform_authentication(request)

    @extend_schema(
        request=TokenObtainInput, auth=[],
        responses={200: TokenOutput, 400: OpenApiResponse(description="wrong username or password (one answer for both)"),
                   429: OpenApiResponse(description="too many failed attempts; Retry-After says when to try again")},
        description="A new key for the user's token called `name` (default `api`), made if there is none; a key "
                    "of that name made before stops working, the user's other tokens do not. Keys are stored "
                    "as digests, so a key is returned only once. Failed attempts are limited per username and "
                    "client address and per client address, as on the login page; the answer sets a device "
                    "cookie, and a client that sends it back counts on its own.",
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
        key = api_token_obtain(user=user, name=data.validated_data["name"])
        response = _token_response(key, name=" ".join(data.validated_data["name"].split()))
        # A script that keeps cookies is a known device from now on, as a browser is (login_attempt).
        login_device_cookie_set(response, user=user)
        return response

    @extend_schema(
        request=None, responses={204: OpenApiResponse(description="the token no longer works")},
        description="Revoke the token this request is made with. Rotate instead to get a new key in the same call.",
    )
    def delete(self, request: Request) -> Response:
        token = _calling_token(request)
        api_token_revoke(user=authenticated_user(request), token_id=token.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenRotateApi(APIView):
    """Replace the calling token's key: the answer carries the new key, and the old one stops working."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: TokenCreated},
                   description="A new key for the token this request is made with (same name); the key used "
                               "to call this no longer works.")
    @sensitive_variables()
    def post(self, request: Request) -> Response:
        token, key = api_token_rotate(user=authenticated_user(request), token_id=_calling_token(request).pk)
        return _token_response(key, token)


class TokenListApi(APIView):
    """The caller's tokens (never their keys); POST makes a named one."""

    permission_classes = [IsAuthenticated]
    parser_classes = [FormParser, MultiPartParser, JSONParser]

    @extend_schema(responses={200: TokenInfo(many=True)}, description="The caller's tokens, oldest first.")
    def get(self, request: Request) -> Response:
        response = Response(TokenInfo(api_token_list(user=authenticated_user(request)), many=True).data)
        add_never_cache_headers(response)
        return response

    @extend_schema(request=TokenCreateInput, responses={201: TokenCreated,
                   409: OpenApiResponse(description="a token of that name exists, or the account has the most tokens")},
                   description=f"A new named token; its key is in this answer only. At most {API_TOKEN_LIMIT} per account.")
    @sensitive_variables()
    def post(self, request: Request) -> Response:
        _not_by_token(request)
        data = TokenCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        token, key = api_token_create(user=authenticated_user(request), name=data.validated_data["name"])
        return _token_response(key, token, code=status.HTTP_201_CREATED)


class TokenDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: OpenApiResponse(description="the token no longer works"),
                                            404: OpenApiResponse(description="no such token of the caller's")},
                   description="Revoke one of the caller's tokens by its id (the one calling may be it).")
    def delete(self, request: Request, pk: int) -> Response:
        if not (isinstance(request.auth, ApiToken) and request.auth.pk == pk):
            _not_by_token(request)  # a key may revoke itself, not the account's other keys
        if not api_token_revoke(user=authenticated_user(request), token_id=pk):
            raise NotFound("no such token")
        return Response(status=status.HTTP_204_NO_CONTENT)
