from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.models import Phase
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.imports import PARSERS, load_results_file, results_import


class Command(BaseCommand):
    help = (
        "Import published results (baselines, historical systems) as rows of a phase's board; "
        "a mapping file says which rows are baselines, which are one team's, which are excluded and why."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge")
        parser.add_argument("phase")
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=sorted(PARSERS), default="simple")
        parser.add_argument("--mapping", type=Path, help="YAML mapping of the file's rows (see docs/organizers/boards.md)")
        parser.add_argument(
            "--replace", action="store_true",
            help="the import is the phase's whole set of imported rows: remove those it no longer has",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        phase = Phase.objects.filter(challenge__slug=options["challenge"], slug=options["phase"]).first()
        if phase is None:
            raise CommandError(f"no phase {options['phase']!r} in challenge {options['challenge']!r}")
        try:
            entries = load_results_file(options["file"], fmt=options["format"], mapping=options["mapping"])
            created = results_import(phase=phase, entries=entries, replace=options["replace"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"imported {len(created)} entries into {phase}")
