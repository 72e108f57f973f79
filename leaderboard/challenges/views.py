"""Public challenge pages."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard.accounts.selectors import team_of_user, user_is_organizer
from leaderboard.challenges.models import SYSTEM_KINDS, Challenge
from leaderboard.challenges.selectors import dataset_label
from leaderboard.submissions.systems import SystemSettings


def home(request: HttpRequest) -> HttpResponse:
    challenges = Challenge.objects.filter(is_public=True)
    return render(request, "challenges/home.html", {"challenges": challenges})


def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    is_organizer = user_is_organizer(user=request.user, challenge=challenge)
    phases = list(challenge.phases.all())
    datasets = [
        {"label": dataset_label(ds, reveal_sealed=is_organizer), "split": ds.split, "sealed": ds.is_sealed,
         "description": "" if ds.is_sealed and not is_organizer else ds.description}
        for ds in challenge.datasets.all()
    ]
    takes_systems = any(k in SYSTEM_KINDS for p in phases for k in p.allowed_kinds)
    return render(
        request,
        "challenges/detail.html",
        {
            "challenge": challenge,
            "phases": phases,
            "datasets": datasets,
            "team": team_of_user(user=request.user, challenge=challenge),
            "is_organizer": is_organizer,
            "system": SystemSettings.from_json(challenge.system_settings) if takes_systems else None,
        },
    )
