"""Account forms: sign-up with an e-mail address, and logins that go through the failure throttle."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.models import User

from leaderboard.accounts.services import login_attempt
from leaderboard.core.errors import TooManyAttempts


class SignupForm(UserCreationForm):
    email = forms.EmailField(
        max_length=254, help_text="For password resets and team invitations; not shown to other participants."
    )

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    # Whether an address has an account is not said here: ``services.user_sign_up`` makes no second
    # account on an address (compared case-insensitively, as password resets match them) and mails
    # its owner instead, and the page answers as for a new account.  A taken username is said: it
    # is no secret (team pages and invitations by username show usernames), and who signs up must
    # choose another.


class _ThrottledLoginMixin:
    """``clean`` through ``login_attempt``: wrong passwords and unknown usernames get Django's one
    message; past the limit every attempt is refused, with when to try again (``retry_after``)."""

    request: Any
    cleaned_data: dict[str, Any]
    user_cache: Any
    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is not None and password:
            try:
                self.user_cache = login_attempt(request=self.request, username=username, password=password)
            except TooManyAttempts as exc:
                self.retry_after = exc.retry_after
                raise forms.ValidationError(exc.message, code="throttled") from None
            if self.user_cache is None:
                raise self.get_invalid_login_error()  # type: ignore[attr-defined]
            self.confirm_login_allowed(self.user_cache)  # type: ignore[attr-defined]
        return self.cleaned_data


class ThrottledAuthenticationForm(_ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(_ThrottledLoginMixin, AdminAuthenticationForm):
    """The admin's login, so that /admin/login/ is no way round the throttle."""


class EmailChangeForm(forms.Form):
    email = forms.EmailField(max_length=254, label="New e-mail address")
    password = forms.CharField(widget=forms.PasswordInput, label="Your password", strip=False)


class InviteForm(forms.Form):
    invitee = forms.CharField(max_length=254, label="Username or e-mail address")


class RenameForm(forms.Form):
    # Checked by the service alone (see TeamCreateForm): one answer for every name refused.
    name = forms.CharField(required=False, label="New name", widget=forms.TextInput(attrs={"maxlength": 100, "required": True}))
