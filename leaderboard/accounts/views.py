"""Sign-up and team pages: parse the form, call one service, render."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from leaderboard.accounts.models import Membership, Role
from leaderboard.accounts.selectors import team_of_user
from leaderboard.accounts.services import team_create, team_join, team_rotate_join_code, team_update
from leaderboard.challenges.models import Challenge
from leaderboard.core.errors import ServiceError


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}.")
        return redirect(request.GET.get("next") or "home")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


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
