"""Middleware: what must act before anything reads a request's body (size limits, arrival time), and
cache headers for answers that depend on the caller."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework.request import Request

from leaderboard.core.caching import viewer_dependent

# Room for the multipart envelope around the file: boundaries, CSRF token, phase, description.
ENVELOPE_BYTES = 64 * 1024


def _is_system_upload(path: str) -> bool:
    # Systems (image archives, bundles) have their own endpoints and their own, larger limit.
    # So are a compute worker's outputs (internal API): several datasets, each up to the output limit.
    return path.endswith(("/submit/system/", "/systems/")) or path.startswith("/internal/")


class UploadSizeLimitMiddleware:
    """Answer 413 to a request whose declared Content-Length exceeds the upload limit.

    It runs before CSRF and session middleware, so the body is never read (let alone
    spooled to disk) for a request that is refused anyway.  Bodies sent without a
    Content-Length are still bounded by the services, which count bytes as they read.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Settings are read per request so that tests (and reloads) can change the limit.
        if request.path.startswith("/admin/"):
            limit = settings.MAX_GOLD_UPLOAD_BYTES
        elif _is_system_upload(request.path):
            limit = settings.MAX_SYSTEM_UPLOAD_BYTES
        else:
            limit = settings.MAX_PREDICTION_UPLOAD_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit + ENVELOPE_BYTES:
            message = f"the request body is {length} bytes; uploads are limited to {limit} bytes"
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=413)
            # A person sent this from a form: a page in the site's style that says what to do.
            return render(request, "413.html", {"message": message, "limit": limit,
                                                "system": _is_system_upload(request.path)}, status=413)
        return self.get_response(request)


class RequestReceivedAtMiddleware:
    """Stamp ``request.received_at``: when the request's headers were in, before its body is read.

    Deadlines are judged by when an upload started, not by when its body finished
    arriving.  Django's WSGI handler reads the body lazily (``request.POST``,
    ``request.FILES`` and DRF's ``request.data`` read it on first access, CSRF being
    the first to), so the first middleware runs once the server has parsed the
    headers, while the body may still be on the wire.  A proxy in front that buffers
    whole bodies (nginx's default) hands the request over only once it is complete,
    so there the stamp is the proxy's end of the upload, never earlier than the truth.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.received_at = timezone.now()  # type: ignore[attr-defined]
        return self.get_response(request)


def request_received_at(request: HttpRequest | Request) -> dt.datetime:
    """When the request arrived (DRF's Request reads it from the HttpRequest it wraps); now for a
    request that did not pass the middleware (a test's)."""
    received: dt.datetime | None = getattr(request, "received_at", None)
    return received or timezone.now()


class CallerDependentMiddleware:
    """Mark every answer that may depend on who asks as such: no shared cache keeps it for another.

    Any answer to a caller who sent credentials (a session cookie or an ``Authorization``
    header), and any API answer, gets ``Cache-Control: private`` and ``Vary: Authorization,
    Cookie``; views that add ``no-store`` (the organizer view) keep it.  One place instead of
    a call in each view: a view that forgets it (a team's submission list, its log, the Data
    page, a download) can no longer be cached by a proxy and handed to the next caller.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        credentials = bool(request.COOKIES.get(settings.SESSION_COOKIE_NAME) or request.META.get("HTTP_AUTHORIZATION"))
        if credentials or request.path.startswith("/api/"):
            viewer_dependent(response)
        return response
