"""What every page's template may ask about the account: whether its address awaits confirmation."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest

from leaderboard.accounts.selectors import user_email_confirmed


def account_notice(request: HttpRequest) -> dict[str, bool | Callable[[], bool]]:
    """``email_unconfirmed`` for the notice at the top of every page: a callable, so that only a
    page that shows it asks the database (templates call callables)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"email_unconfirmed": False}
    return {"email_unconfirmed": lambda: not user_email_confirmed(user=user)}
