"""What the management commands' arguments name, found or refused in one way: a command names a
challenge by slug, a phase by slug, a user by username, and says what exists when one does not."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import CommandError

from leaderboard.challenges.models import Challenge, Phase


def challenge_named(slug: str) -> Challenge:
    challenge = Challenge.objects.filter(slug=slug).first()
    if challenge is None:
        known = ", ".join(Challenge.objects.order_by("slug").values_list("slug", flat=True))
        raise CommandError(f"no challenge {slug!r} (there are: {known or 'none; manage.py challenge_load SPEC'})")
    return challenge


def phase_named(challenge: Challenge, slug: str) -> Phase:
    phase = challenge.phases.select_related("challenge").filter(slug=slug).first()
    if phase is None:
        raise CommandError(f"{challenge.slug} has no phase {slug!r} "
                           f"(it has {', '.join(challenge.phases.values_list('slug', flat=True))})")
    return phase


def user_named(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user {username!r}")
    return user
