"""Public challenge pages."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_safe

from leaderboard.accounts.selectors import viewer_of
from leaderboard.challenges.data_page import data_file_get, data_listing_get, starting_kit_get
from leaderboard.challenges.downloads import NO_FILE_MESSAGE, data_catalogue
from leaderboard.challenges.http import download_response
from leaderboard.challenges.models import SYSTEM_KINDS, Challenge, SubmissionKind
from leaderboard.challenges.selectors import (
    PhaseState,
    Viewer,
    announcements_shown,
    challenge_status,
    dataset_label,
    datasets_public_order,
    phase_status,
    phase_takes,
    phase_takes_text,
    storage_budget_bytes,
    system_contract_of,
    team_extension_open,
)
from leaderboard.core.display import size_text


def home(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    challenges = [(c, challenge_status(c.phases.all(), now=now))
                  for c in Challenge.objects.filter(is_public=True).prefetch_related("phases")]
    return render(request, "challenges/home.html", {"challenges": challenges})


def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    viewer, team = viewer_of(user=request.user, challenge=challenge)
    is_organizer = viewer is Viewer.ORGANIZER
    phases = list(challenge.phases.all())
    # A public address shows the public view to everyone, organizers included (what they share
    # or screenshot must hide what the public may not see): a sealed dataset by its alias only.
    # Its real name is in the console and on the organizer board.
    datasets = [
        {"label": dataset_label(ds, reveal_sealed=False), "split": ds.split, "sealed": ds.is_sealed,
         "description": "" if ds.is_sealed else ds.description}
        for ds in datasets_public_order(challenge.datasets.all())
    ]
    takes_systems = any(k in SYSTEM_KINDS for p in phases for k in p.allowed_kinds)
    now = timezone.now()
    statuses = [phase_status(p, now=now) for p in phases]
    # A team the organizers gave a later deadline may still submit after a phase closed.
    extended = team is not None and team_extension_open(team_id=team.pk, now=now)
    # The upload links: each only where a phase one may submit to now takes that kind.
    taking = [p for p, s in zip(phases, statuses, strict=True) if s.state == PhaseState.OPEN or extended]
    return render(
        request,
        "challenges/detail.html",
        {
            "challenge": challenge,
            "phases": phases,
            "phase_rows": [(p, s, phase_takes_text(p, phases)) for p, s in zip(phases, statuses, strict=True)],
            "submit_predictions": any(phase_takes(p, [SubmissionKind.PREDICTIONS]) for p in taking),
            "submit_system": any(phase_takes(p, SYSTEM_KINDS) for p in taking),
            # Nothing left to take part in: the page says so instead of inviting people in.
            "is_closed": bool(statuses) and all(s.state == PhaseState.CLOSED for s in statuses) and not extended,
            "closed_at": max((p.closes_at for p in phases), default=None),
            "datasets": datasets,
            "has_data": data_catalogue(challenge).has_data,
            "team": team,
            "is_organizer": is_organizer,
            # The organizers' words, for everyone: the only text of theirs this page shows as written.
            "announcements": announcements_shown(challenge=challenge),
            **system_contract_of(challenge=challenge, phases=phases),
            # No contract where no phase runs a system.
            **({} if takes_systems else {"system": None}),
            "storage_budget": size_text(storage_budget_bytes(challenge=challenge)),
        },
    )


@require_safe
def data_page(request: HttpRequest, slug: str) -> HttpResponse:
    """What teams may download, per phase and dataset; who may, and when (challenges/downloads.py, data_page.py)."""
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    viewer, team = viewer_of(user=request.user, challenge=challenge)
    listing = data_listing_get(challenge=challenge, viewer=viewer)
    return render(request, "challenges/data.html", {"challenge": challenge, "listing": listing, "team": team})


def _challenge_or_no_file(slug: str) -> Challenge:
    # The same 404 as for a file the caller may not have: a file URL tells nothing.
    challenge = Challenge.objects.filter(slug=slug, is_public=True).first()
    if challenge is None:
        raise Http404(NO_FILE_MESSAGE)
    return challenge


@require_safe
def data_file(request: HttpRequest, slug: str, kind: str, dataset_slug: str) -> FileResponse:
    challenge = _challenge_or_no_file(slug)
    viewer, _ = viewer_of(user=request.user, challenge=challenge)
    served = data_file_get(challenge=challenge, viewer=viewer, kind=kind, dataset_slug=dataset_slug)
    if served is None:
        raise Http404(NO_FILE_MESSAGE)
    return download_response(method=request.method or "GET", challenge=challenge, served=served)


@require_safe
def starting_kit(request: HttpRequest, slug: str) -> FileResponse:
    challenge = _challenge_or_no_file(slug)
    viewer, _ = viewer_of(user=request.user, challenge=challenge)
    served = starting_kit_get(challenge=challenge, viewer=viewer)
    if served is None:
        raise Http404(NO_FILE_MESSAGE)
    return download_response(method=request.method or "GET", challenge=challenge, served=served)
