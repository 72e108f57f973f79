"""API plumbing: service errors become JSON 4xx answers, never 500s."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from leaderboard.core.errors import ServiceError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        body: dict[str, Any] = {"detail": exc.message}
        if exc.field:
            body["field"] = exc.field
        return Response(body, status=exc.status_code)
    return drf_exception_handler(exc, context)
