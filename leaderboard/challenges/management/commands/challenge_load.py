from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.services import challenge_load
from leaderboard.core.errors import ServiceError


class Command(BaseCommand):
    help = "Create or update a challenge (phases, datasets, gold files) from a YAML spec; safe to re-run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("spec", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            challenge = challenge_load(spec_path=options["spec"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"loaded {challenge.slug}: {challenge.phases.count()} phase(s), {challenge.datasets.count()} dataset(s)"
        )
