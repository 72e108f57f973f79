from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404


def _plain(status: int, message: str) -> HttpResponse | None:
    """The internal process's answer: it mounts none of the site, so the site's pages (whose links
    reverse the site's URLs) cannot be rendered there."""
    if settings.SERVE != "internal":
        return None
    return HttpResponse(f"{message}\n", status=status, content_type="text/plain")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    plain = _plain(404, "Not found.")
    return plain if plain is not None else render(request, "404.html", {"message": _said(exception, "Not found.")},
                                                  status=404)


def _said(exception: Exception, default: str) -> str:
    """What the code that refused said, in words (``Http404("No such challenge")``); never the URL
    resolver's own argument, a mapping of every pattern it tried (internal API routes among them)."""
    if isinstance(exception, Resolver404) or not exception.args or not isinstance(exception.args[0], str):
        return default
    return exception.args[0] or default


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    plain = _plain(403, "Forbidden.")
    message = _said(exception, "You may not see this page.")
    return plain if plain is not None else render(request, "403.html", {"message": message}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    plain = _plain(500, "Server error.")
    return plain if plain is not None else render(request, "500.html", status=500)


def health(request: HttpRequest) -> HttpResponse:
    """The probes' address: the process answers requests, without touching the database, so that a
    database outage does not make every web pod restart (it would not help) nor leave the Service."""
    return HttpResponse("ok\n", content_type="text/plain")
