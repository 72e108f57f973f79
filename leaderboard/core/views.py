from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return render(request, "404.html", {"message": str(exception) or "Not found."}, status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return render(request, "403.html", {"message": str(exception) or "You may not see this page."}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    return render(request, "500.html", status=500)
