"""API plumbing: service errors become JSON 4xx answers, never 500s."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from leaderboard.core.errors import DuplicateUpload, ServiceError


def _summary(errors: Any, prefix: str = "") -> list[str]:
    """Field errors flattened to "field: message" lines."""
    if isinstance(errors, dict):
        return [
            line
            for key, value in errors.items()
            for line in _summary(value, prefix if key == api_settings.NON_FIELD_ERRORS_KEY else f"{prefix}{key}: ")
        ]
    if isinstance(errors, list):
        return [line for value in errors for line in _summary(value, prefix)]
    return [f"{prefix}{errors}"]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        body: dict[str, Any] = {"detail": exc.message}
        if exc.field:
            body["field"] = exc.field
        if isinstance(exc, DuplicateUpload):
            body["duplicate_of"] = exc.duplicate_of
        refusal = Response(body, status=exc.status_code)
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            # Scripts back off by the header; people read the same number in "detail".
            refusal["Retry-After"] = str(retry_after)
        return refusal
    response = drf_exception_handler(exc, context)
    if response is not None and not (isinstance(response.data, dict) and "detail" in response.data):
        # Validation errors come keyed by field; clients read "detail" for every error, so
        # say it there in one line and keep the per-field errors beside it.
        response.data = {"detail": "; ".join(_summary(response.data)), "errors": response.data}
    return response
