"""Headers for answers that depend on who asks."""

from __future__ import annotations

from typing import TypeVar

from django.http import HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers

R = TypeVar("R", bound=HttpResponse)


def viewer_dependent(response: R, *, confidential: bool = False) -> R:
    """Mark an answer that depends on the caller (a team's own rows, an organizer's view): no
    shared cache may keep it, or hand it to another caller; a ``confidential`` one (the
    organizer view) is not stored at all."""
    patch_cache_control(response, private=True, **({"no_store": True} if confidential else {}))
    patch_vary_headers(response, ("Authorization", "Cookie"))
    return response
