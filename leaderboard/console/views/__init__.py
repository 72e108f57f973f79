"""The organizer console's pages: read, confirm, act.  404 for anyone but the challenge's organizers.

Every page starts at ``challenge_get_organized`` (the role, once); service errors become pages:
NotFound a 404 like any unknown address, the others the form again with the message and the
error's status.  No page may be kept by a cache: they show hidden data.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_safe

from leaderboard.challenges.models import Challenge, Split, SubmissionKind
from leaderboard.challenges.selectors import announcements_shown, challenge_get_organized, dataset_label
from leaderboard.console.actions import action_get, action_perform, target_name
from leaderboard.console.integrity import MEMBERSHIP_DAYS, integrity_report
from leaderboard.console.selectors import (
    AUDIT_PER_PAGE,
    SUBMISSIONS_PER_PAGE,
    audit_entries,
    console_campaigns,
    console_submissions,
    console_teams,
    dataset_reveal_preview,
    queue_report,
    submission_counts,
    submission_filters_parse,
)
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.core.signed_in import authenticated_user
from leaderboard.submissions.models import Status
from leaderboard.submissions.selectors import submission_run_report

View = Callable[..., HttpResponse]


def organizers_only(view: View) -> View:
    """The challenge for its organizers, NotFound as a 404 page, and no cache keeps the answer."""

    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, **kwargs: Any) -> HttpResponse:
        try:
            challenge = challenge_get_organized(user=request.user, slug=slug)
            response = view(request, challenge, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from None
        return viewer_dependent(response, confidential=True)

    return wrapper


def _page(request: HttpRequest, challenge: Challenge, template: str, section: str, **context: Any) -> HttpResponse:
    return render(request, template, {"challenge": challenge, "section": section, **context})


@require_safe
@organizers_only
def console_home(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    datasets = [
        {"dataset": ds, "alias": dataset_label(ds, reveal_sealed=False)}
        for ds in challenge.datasets.filter(split=Split.III)
    ]
    return _page(request, challenge, "console/home.html", "home", datasets=datasets,
                 counts=submission_counts(challenge=challenge),
                 announcements=announcements_shown(challenge=challenge),
                 audit=audit_entries(challenge=challenge)[:15])


@require_safe
@organizers_only
def console_submissions_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    status = 200
    try:
        filters = submission_filters_parse(challenge=challenge, params=request.GET)
    except ServiceError as exc:
        messages.error(request, exc.message)
        filters = submission_filters_parse(challenge=challenge, params={})
        status = exc.status_code
    paginator = Paginator(console_submissions(challenge=challenge, filters=filters), SUBMISSIONS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    rows = [(s, submission_run_report(submission=s, is_organizer=True)) for s in page.object_list]
    return render(request, "console/submissions.html", {
        "challenge": challenge, "section": "submissions", "page": page, "rows": rows, "filters": filters,
        "query": urlencode(filters.as_params()), "phases": challenge.phases.all(),
        "teams": challenge.teams.order_by("name"), "statuses": Status.choices,
        "kinds": SubmissionKind.choices,
    }, status=status)


@require_safe
@organizers_only
def console_queue_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    return _page(request, challenge, "console/queue.html", "queue", report=queue_report(challenge=challenge),
                 scoring_lease_s=settings.SCORING_LEASE_S)


@require_safe
@organizers_only
def console_teams_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    return _page(request, challenge, "console/teams.html", "teams", rows=console_teams(challenge=challenge))


@require_safe
@organizers_only
def console_campaigns_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    return _page(request, challenge, "console/campaigns.html", "campaigns", campaigns=console_campaigns(challenge=challenge))


@require_safe
@organizers_only
def console_audit_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    page = Paginator(audit_entries(challenge=challenge), AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    return _page(request, challenge, "console/audit.html", "audit", page=page)


@require_safe
@organizers_only
def console_integrity_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    """Signals for a person to look into (copies, nondeterminism, team changes); none acts on its own."""
    try:
        days = min(max(int(request.GET.get("days", MEMBERSHIP_DAYS)), 1), 60)
    except ValueError:
        days = MEMBERSHIP_DAYS
    return _page(request, challenge, "console/integrity.html", "integrity",
                 **integrity_report(challenge=challenge, days=days))


def _done_url(challenge: Challenge, target: Any, kind: str, action: str = "") -> str:
    """Where the organizer sees the result: the submission's page, or the console page of the target."""
    if action == "determinism":
        return reverse("console-integrity", args=[challenge.slug]) + "#determinism"
    if kind == "submissions":
        return reverse("submission-detail", args=[challenge.slug, target.pk])
    if kind == "rounds":
        return reverse("console-round", args=[challenge.slug, target.pk])
    return reverse({"teams": "console-teams", "phases": "console-campaigns", "campaign-systems": "console-campaigns"}.get(kind, "console"), args=[challenge.slug])


@require_http_methods(["GET", "POST"])
@organizers_only
def console_action_page(request: HttpRequest, challenge: Challenge, target: str, key: str, action: str) -> HttpResponse:
    """GET: what the action will do, and a form for the reason; POST: do it, then show where it shows."""
    found, obj = action_get(challenge=challenge, target=target, key=key, action=action)
    form = found.form(request.POST if request.method == "POST" else None, challenge=challenge,
                      reason_help=found.reason_help)
    problem = found.problem(obj)
    status = 200
    if request.method == "POST":
        if problem:
            messages.error(request, f"Not done: {problem}.")
            status = 409
        elif form.is_valid():
            try:
                action_perform(action=found, target=obj, actor=authenticated_user(request), data=form.service_kwargs())
            except NotFound:
                raise
            except ServiceError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
                status = exc.status_code
            else:
                messages.success(request, f"Done: {found.title.lower()}, {target_name(obj)}. Recorded in the audit log.")
                return redirect(_done_url(challenge, obj, target, found.key))
        else:
            status = 400
    preview = dataset_reveal_preview(dataset=obj) if found.key == "reveal" and not problem else None
    return render(request, "console/action.html", {
        "challenge": challenge, "section": "", "action": found, "target": obj, "target_name": target_name(obj),
        "consequences": found.consequences(obj), "problem": problem, "form": form, "preview": preview,
    }, status=status)
