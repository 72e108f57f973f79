"""Queueing a baseline system from the command line, shared by ``system_submit`` and ``demo_baselines``."""

from __future__ import annotations

from django.core.management.base import CommandError

from leaderboard.challenges.models import Phase
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.intake import baseline_system_submit
from leaderboard.submissions.models import ACTIVE_STATUSES, Status, Submission


def baseline_queue(*, challenge: str, phase: str, path: str, team: str, description: str = "",
                   kind: str | None = None, once: bool = False) -> str:
    """Queue ``path`` as the baseline row ``team`` of a phase; the line a command prints about it.

    ``once``: nothing is queued when that row already has a queued, running or finished submission
    (a re-run of the demo must not queue its baselines again)."""
    found = Phase.objects.filter(challenge__slug=challenge, slug=phase).first()
    if found is None:
        raise CommandError(f"no phase {phase!r} in challenge {challenge!r}")
    if once and Submission.objects.filter(
        phase=found, team__name=team, status__in=[*ACTIVE_STATUSES, Status.FINISHED]
    ).exists():
        return f"{team} already has a submission in {found}; nothing to do"
    kind = kind or ("code_bundle" if path.endswith(".zip") else "docker_image")
    try:
        submission = baseline_system_submit(phase=found, team_name=team, path=path, kind=kind, description=description)
    except ServiceError as exc:
        raise CommandError(exc.message) from None
    return f"queued submission {submission.pk} for {team} ({kind}, {submission.image_digest or 'bundle'})"
