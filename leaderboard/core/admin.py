"""The Django admin is for site administrators (superusers) only.

Organizers are a role per challenge (``Challenge.staff``) and work from the organizer console; a
site administrator makes them here (a challenge's "staff").  Django's ``is_staff`` alone would
open an admin with nothing in it, so it is not enough to enter.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

admin.site.site_header = "Readerboard site administration"
admin.site.site_title = "Readerboard site administration"
admin.site.index_title = "Challenges, organizers, teams and submissions"


def _site_administrators_only(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff and user.is_superuser)


admin.site.has_permission = _site_administrators_only  # type: ignore[method-assign]
