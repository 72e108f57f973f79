"""Refuse oversized request bodies before anything reads them."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

# Room for the multipart envelope around the file: boundaries, CSRF token, phase, description.
ENVELOPE_BYTES = 64 * 1024


def _is_system_upload(path: str) -> bool:
    # Systems (image archives, bundles) have their own endpoints and their own, larger limit.
    return path.endswith(("/submit/system/", "/systems/"))


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
            return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
