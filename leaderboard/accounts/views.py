"""Sign-up, API token and team pages: parse the form, call one service, render."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_http_methods

from leaderboard.accounts.models import Membership, Role
from leaderboard.accounts.selectors import api_token_get, team_of_user
from leaderboard.accounts.services import (
    api_token_create,
    api_token_revoke,
    api_token_rotate,
    team_create,
    team_join,
    team_rotate_join_code,
    team_update,
)
from leaderboard.challenges.models import Challenge
from leaderboard.core.errors import ServiceError


def _next_url(request: HttpRequest) -> str | None:
    """``next`` if it is a path on this site, checked as Django's login checks it; else None.

    Only paths: an off-site address would make the sign-up page an open redirect, and a
    bare word is no page of ours (it was once taken for a URL name, and an unknown one
    raised a 500).
    """
    target = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return target if safe and target.startswith("/") else None


# The passwords never reach an error report: not as POST values, not as the locals of any frame.
@sensitive_variables()
@sensitive_post_parameters("password1", "password2")
@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}.")
        next_url = _next_url(request)
        return HttpResponseRedirect(next_url) if next_url else redirect("home")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


_TOKEN_ACTIONS: dict[str, Callable[..., str]] = {"create": api_token_create, "rotate": api_token_rotate}


# A new key is in this frame's locals and in every frame below (the template's context).
@sensitive_variables()
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens_page(request: HttpRequest) -> HttpResponse:
    """The user's API token: whether there is one, and create, rotate or revoke it.

    A new key is shown in the answer to the POST that made it and never again (no
    redirect that would have to carry it), in a page no cache may keep.
    """
    key: str | None = None
    action = request.POST.get("action", "")
    status = 200
    if request.method == "POST":
        try:
            if action in _TOKEN_ACTIONS:
                key = _TOKEN_ACTIONS[action](user=request.user)  # type: ignore[arg-type]
            elif action == "revoke":
                if api_token_revoke(user=request.user):  # type: ignore[arg-type]
                    messages.success(request, "Token revoked: it no longer works.")
                return redirect("api-tokens")
            else:
                messages.error(request, "Unknown action.")
                status = 400
        except ServiceError as exc:
            messages.error(request, exc.message)
            status = exc.status_code
    response = render(
        request,
        "accounts/tokens.html",
        {"token": api_token_get(user=request.user), "new_key": key, "rotated": bool(key) and action == "rotate"},  # type: ignore[arg-type]
        status=status,
    )
    add_never_cache_headers(response)
    return response


class TeamCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    affiliation = forms.CharField(max_length=200, required=False)
    is_anonymous = forms.BooleanField(required=False, label="Appear as 'Anonymous' on public boards")


class TeamJoinForm(forms.Form):
    join_code = forms.CharField(max_length=32)


@login_required
@require_http_methods(["GET", "POST"])
def team_page(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    team = team_of_user(user=request.user, challenge=challenge)
    create_form = TeamCreateForm(request.POST if request.POST.get("action") == "create" else None)
    join_form = TeamJoinForm(request.POST if request.POST.get("action") == "join" else None)
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create" and create_form.is_valid():
                team_create(challenge=challenge, owner=request.user, **create_form.cleaned_data)  # type: ignore[arg-type]
                messages.success(request, "Team created.")
                return redirect("team", slug=slug)
            if action == "join" and join_form.is_valid():
                team_join(user=request.user, join_code=join_form.cleaned_data["join_code"])  # type: ignore[arg-type]
                messages.success(request, "You joined the team.")
                return redirect("team", slug=slug)
            if action == "rotate" and team is not None:
                team_rotate_join_code(team=team, actor=request.user)  # type: ignore[arg-type]
                return redirect("team", slug=slug)
            if action == "anonymity" and team is not None:
                team_update(team=team, actor=request.user, is_anonymous=request.POST.get("is_anonymous") == "on")  # type: ignore[arg-type]
                return redirect("team", slug=slug)
            status = 400
        except ServiceError as exc:
            messages.error(request, exc.message)
            status = exc.status_code
    members = (
        Membership.objects.filter(team=team).select_related("user").order_by("joined_at") if team else []
    )
    is_owner = bool(team) and any(m.user_id == request.user.pk and m.role == Role.OWNER for m in members)
    return render(
        request,
        "accounts/team.html",
        {
            "challenge": challenge,
            "team": team,
            "members": members,
            "is_owner": is_owner,
            "create_form": create_form,
            "join_form": join_form,
        },
        status=status,
    )
