"""Organizers: run a system (image archive or code bundle) as a baseline row of a phase."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from leaderboard.challenges.models import Phase
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.intake import baseline_system_submit
from leaderboard.submissions.models import ACTIVE_STATUSES, Status, Submission


class Command(BaseCommand):
    help = "Queue a system as a baseline entry: system_submit CHALLENGE PHASE FILE --team NAME"

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("challenge")
        parser.add_argument("phase")
        parser.add_argument("file", help="`docker save` archive (.tar/.tar.gz) or code bundle (.zip)")
        parser.add_argument("--team", required=True, help="name of the baseline row")
        parser.add_argument("--kind", choices=["docker_image", "code_bundle"], default=None,
                            help="default: code_bundle for .zip files, docker_image otherwise")
        parser.add_argument("--description", default="")
        parser.add_argument("--once", action="store_true",
                            help="do nothing if this team already has a queued, running or finished submission")

    def handle(self, *args: Any, **options: Any) -> None:
        phase = Phase.objects.filter(challenge__slug=options["challenge"], slug=options["phase"]).first()
        if phase is None:
            raise CommandError(f"no phase {options['phase']!r} in challenge {options['challenge']!r}")
        if options["once"] and Submission.objects.filter(
            phase=phase, team__name=options["team"], status__in=[*ACTIVE_STATUSES, Status.FINISHED]
        ).exists():
            self.stdout.write(f"{options['team']} already has a submission in {phase}; nothing to do")
            return
        kind = options["kind"] or ("code_bundle" if options["file"].endswith(".zip") else "docker_image")
        try:
            submission = baseline_system_submit(phase=phase, team_name=options["team"], path=options["file"],
                                                kind=kind, description=options["description"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"queued submission {submission.pk} for {options['team']} ({kind}, "
                          f"{submission.image_digest or 'bundle'})")
