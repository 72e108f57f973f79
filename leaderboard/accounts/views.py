"""Sign-up, login, profile, API token and team pages: parse the form, call one service, render."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_http_methods

from leaderboard.accounts.forms import (
    EmailChangeForm,
    InviteForm,
    RenameForm,
    SignupForm,
    ThrottledAuthenticationForm,
)
from leaderboard.accounts.models import ApiToken, Role, Team
from leaderboard.accounts.selectors import (
    api_token_list,
    campaign_choice_text,
    team_invites_for_user,
    team_invites_pending,
    team_members,
    team_of_user,
    user_email_confirmed,
    user_memberships,
)
from leaderboard.accounts.services import (
    API_TOKEN_LIMIT,
    TEAM_NAME_RULE,
    api_token_create,
    api_token_revoke,
    api_token_rotate,
    login_device_cookie_set,
    team_campaign_choice_set,
    team_create,
    team_invite_accept,
    team_invite_cancel,
    team_invite_create,
    team_invite_decline,
    team_join,
    team_leave,
    team_member_remove,
    team_owner_handover,
    team_rename,
    team_rotate_join_code,
    team_update,
    user_confirmation_send,
    user_email_change,
    user_email_confirm,
    user_sign_up,
)
from leaderboard.challenges.models import SYSTEM_KINDS, Challenge, SubmissionKind
from leaderboard.challenges.selectors import phase_takes
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.core.signed_in import authenticated_user


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
    """Make an unconfirmed account and mail it the link; not logged in, so that an address that has
    an account already (its owner is mailed instead, and no account is made) answers the same."""
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user_sign_up(user=form.save(commit=False), site_url=request.build_absolute_uri("/"))
        messages.success(request, f"We sent a link to {form.cleaned_data['email']}: open it to confirm the address, "
                                  "then log in. Until it is confirmed, the account can log in but not join a team or submit.")
        next_url = _next_url(request)
        return HttpResponseRedirect(next_url) if next_url else redirect("home")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


@require_http_methods(["GET"])
def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The link mailed at sign-up.  GET confirms (a link opened from a mail is a GET); confirming
    twice is harmless, and the link does not log in: only the password does."""
    try:
        user = user_email_confirm(token=token)
    except ServiceError as exc:
        return render(request, "accounts/email_confirm.html", {"error": exc.message}, status=exc.status_code)
    invites = team_invites_for_user(user=user).exists()
    return render(request, "accounts/email_confirm.html", {"confirmed": user, "invites": invites,
                                                           "is_them": request.user.pk == user.pk})


@login_required
@require_http_methods(["POST"])
def email_confirm_resend(request: HttpRequest) -> HttpResponse:
    """"Send the link again", from the notice an unconfirmed account sees at the top of every page."""
    user = authenticated_user(request)
    try:
        user_confirmation_send(user=user, site_url=request.build_absolute_uri("/"))
        if user_email_confirmed(user=user):
            messages.info(request, "Your e-mail address is confirmed already.")
        else:
            messages.success(request, f"We sent a new link to {user.email}: the one before it works too, until it expires.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return HttpResponseRedirect(_next_url(request) or reverse("profile"))


class LoginView(auth_views.LoginView):
    """Django's login page through the failure throttle: past the limit, 429 and Retry-After."""

    form_class = ThrottledAuthenticationForm

    def form_valid(self, form: ThrottledAuthenticationForm) -> HttpResponse:  # type: ignore[override]
        response = super().form_valid(form)
        login_device_cookie_set(response, user=form.get_user())
        return response

    def form_invalid(self, form: ThrottledAuthenticationForm) -> HttpResponse:  # type: ignore[override]
        response = super().form_invalid(form)
        if form.retry_after:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response


@sensitive_variables()
@sensitive_post_parameters("password")
@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    """The account: username, e-mail address (changed with the password), teams, invitations."""
    user = authenticated_user(request)
    form = EmailChangeForm(request.POST or None, initial={"email": user.email})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                user_email_change(request=request, user=user, email=form.cleaned_data["email"],
                                  password=form.cleaned_data["password"])
                if user_email_confirmed(user=user):
                    messages.success(request, "Your e-mail address is changed.")
                else:
                    messages.success(request, f"Your e-mail address is changed. We sent a link to {user.email}: open "
                                              "it to confirm the address; until then you cannot join a team or submit.")
                return redirect("profile")
            except ServiceError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
                status = exc.status_code
        else:
            status = 400
    return render(
        request,
        "accounts/profile.html",
        {
            "email_form": form,
            "memberships": user_memberships(user=user),
            "invites": team_invites_for_user(user=user),
            "tokens": api_token_list(user=user),
        },
        status=status,
    )


@login_required
@require_http_methods(["POST"])
def invite_respond(request: HttpRequest, pk: int) -> HttpResponse:
    """Accept (then the team's page) or decline an invitation; from the profile or a team page."""
    action = request.POST.get("action")
    try:
        if action == "accept":
            team = team_invite_accept(invite_id=pk, user=authenticated_user(request))
            messages.success(request, f"You joined {team.name}.")
            return redirect("team", slug=team.challenge.slug)
        if action == "decline":
            team_invite_decline(invite_id=pk, user=authenticated_user(request))
            messages.success(request, "Invitation declined.")
        else:
            messages.error(request, "Unknown action.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return HttpResponseRedirect(_next_url(request) or reverse("profile"))


def _token_id(request: HttpRequest) -> int:
    try:
        return int(request.POST.get("token", ""))
    except ValueError:
        raise NotFound("no such token") from None


# A new key is in this frame's locals and in every frame below (the template's context).
@sensitive_variables()
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens_page(request: HttpRequest) -> HttpResponse:
    """The user's API tokens: listed, and created (named), rotated or revoked one by one.

    A new key is shown in the answer to the POST that made it and never again (no
    redirect that would have to carry it), in a page no cache may keep.
    """
    user = authenticated_user(request)
    key: str | None = None
    made: ApiToken | None = None
    action = request.POST.get("action", "")
    status = 200
    if request.method == "POST":
        try:
            if action == "create":
                made, key = api_token_create(user=user, name=request.POST.get("name", ""))
            elif action == "rotate":
                made, key = api_token_rotate(user=user, token_id=_token_id(request))
            elif action == "revoke":
                if api_token_revoke(user=user, token_id=_token_id(request)):
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
        {"tokens": api_token_list(user=user), "new_key": key, "made": made, "rotated": action == "rotate",
         "limit": API_TOKEN_LIMIT, "name": request.POST.get("name", "") if status != 200 else ""},
        status=status,
    )
    add_never_cache_headers(response)
    return response


class TeamCreateForm(forms.Form):
    # Checked by the service alone, so that every name a team cannot have gets its one answer.
    name = forms.CharField(required=False, widget=forms.TextInput(attrs={"maxlength": 100, "required": True}))
    affiliation = forms.CharField(max_length=200, required=False)
    is_anonymous = forms.BooleanField(required=False, label="Appear as 'Anonymous' on public boards")


class TeamJoinForm(forms.Form):
    join_code = forms.CharField(max_length=32)


@login_required
@require_http_methods(["GET", "POST"])
def team_page(request: HttpRequest, slug: str) -> HttpResponse:
    user = authenticated_user(request)
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    team = team_of_user(user=user, challenge=challenge)
    create_form = TeamCreateForm(request.POST if request.POST.get("action") == "create" else None)
    join_form = TeamJoinForm(request.POST if request.POST.get("action") == "join" else None)
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create" and create_form.is_valid():
                team_create(challenge=challenge, owner=user, **create_form.cleaned_data)
                messages.success(request, "Team created.")
                return redirect("team", slug=slug)
            if action == "join" and join_form.is_valid():
                team_join(user=user, join_code=join_form.cleaned_data["join_code"])
                messages.success(request, "You joined the team.")
                return redirect("team", slug=slug)
            if action == "rotate" and team is not None:
                team_rotate_join_code(team=team, actor=user)
                return redirect("team", slug=slug)
            if action == "anonymity" and team is not None:
                team_update(team=team, actor=user, is_anonymous=request.POST.get("is_anonymous") == "on")
                return redirect("team", slug=slug)
            if team is not None and action in _TEAM_ACTIONS:
                _TEAM_ACTIONS[action](request, team)
                return redirect("team", slug=slug)
            status = 400
        except ServiceError as exc:
            messages.error(request, exc.message)
            status = exc.status_code
    members = list(team_members(team=team)) if team else []
    is_owner = bool(team) and any(m.user_id == user.pk and m.role == Role.OWNER for m in members)
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
            "invite_form": InviteForm(),
            "rename_form": RenameForm(initial={"name": team.name if team else ""}),
            "pending_invites": team_invites_pending(team=team) if is_owner and team else [],
            "my_invites": team_invites_for_user(user=user, challenge=challenge),
            "max_team_size": challenge.max_team_size,
            "campaign_text": campaign_choice_text(team) if team else "",
            # The upload links, each only where some phase takes that kind (the challenge page's rule).
            "submit_predictions": any(phase_takes(p, [SubmissionKind.PREDICTIONS]) for p in challenge.phases.all()),
            "submit_system": any(phase_takes(p, SYSTEM_KINDS) for p in challenge.phases.all()),
        },
        status=status,
    )


# Team page actions beyond create/join: each reads its form and calls one service (which checks
# who may do it), then the page is shown again.


def _posted_user(request: HttpRequest) -> User:
    member = request.POST.get("member", "")
    user = User.objects.filter(pk=int(member)).first() if member.isdigit() else None
    if user is None:
        raise ServiceError("no such member")
    return user


def _team_invite(request: HttpRequest, team: Team) -> None:
    form = InviteForm(request.POST)
    if not form.is_valid():
        raise ServiceError("give a username or an e-mail address")
    invite = team_invite_create(team=team, actor=authenticated_user(request), invitee=form.cleaned_data["invitee"],
                                site_url=request.build_absolute_uri("/"))
    messages.success(request, f"Invitation sent to {invite.email or invite.invited_user}: it waits for their answer.")


def _team_cancel_invite(request: HttpRequest, team: Team) -> None:
    invite_id = request.POST.get("invite", "")
    team_invite_cancel(team=team, actor=authenticated_user(request), invite_id=int(invite_id) if invite_id.isdigit() else 0)
    messages.success(request, "Invitation cancelled.")


def _team_leave(request: HttpRequest, team: Team) -> None:
    deleted = team_leave(team=team, user=authenticated_user(request))
    messages.success(request, f"You left {team.name}." + (" It had no other members and no submissions, so it is gone." if deleted else ""))


def _team_remove(request: HttpRequest, team: Team) -> None:
    member = _posted_user(request)
    team_member_remove(team=team, actor=authenticated_user(request), member=member)
    messages.success(request, f"{member.username} is no longer in the team.")


def _team_rename(request: HttpRequest, team: Team) -> None:
    form = RenameForm(request.POST)
    if not form.is_valid():
        raise ServiceError(TEAM_NAME_RULE, field="name")
    team_rename(team=team, actor=authenticated_user(request), name=form.cleaned_data["name"])
    messages.success(request, f"The team is now called {team.name}.")


def _team_campaigns(request: HttpRequest, team: Team) -> None:
    team_campaign_choice_set(team=team, actor=authenticated_user(request), choice=request.POST.get("campaign_choice", ""))
    messages.success(request, "Saved: " + campaign_choice_text(team) + ".")


def _team_handover(request: HttpRequest, team: Team) -> None:
    member = _posted_user(request)
    team_owner_handover(team=team, actor=authenticated_user(request), new_owner=member)
    messages.success(request, f"{member.username} owns the team now; you are a member.")


_TEAM_ACTIONS: dict[str, Callable[[HttpRequest, Team], None]] = {
    "invite": _team_invite,
    "cancel_invite": _team_cancel_invite,
    "leave": _team_leave,
    "remove": _team_remove,
    "rename": _team_rename,
    "handover": _team_handover,
    "campaigns": _team_campaigns,
}
