from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ServiceError
from leaderboard.submissions.reload import challenge_load, challenge_plan


class Command(BaseCommand):
    help = ("Create or update a challenge (phases, datasets, gold files) from a YAML spec; safe to re-run. "
            "Prints what will change first (datasets added and removed, gold files replaced with the questions "
            "they add, remove and change, phases changed); a replaced gold rescores the submissions scored "
            "against it in the background.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("spec", type=Path)
        parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
        parser.add_argument("--allow-remove", action="store_true",
                            help="remove datasets no longer in the spec even if submissions have scores on them "
                                 "(each submission keeps them in its score history)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            plan = challenge_plan(spec_path=options["spec"])
            for line in plan.lines():
                self.stdout.write(line)
            if options["dry_run"]:
                refusal = plan.refusal(allow_remove=options["allow_remove"])
                if refusal:
                    self.stdout.write(f"the load would be refused: {refusal}")
                self.stdout.write("dry run: nothing changed")
                return
            challenge = challenge_load(
                spec_path=options["spec"], warn=lambda message: self.stdout.write(f"warning: {message}"),
                allow_remove=options["allow_remove"],
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"loaded {challenge.slug}: {challenge.phases.count()} phase(s), {challenge.datasets.count()} dataset(s)"
        )
        if plan.gold_changed:
            self.stdout.write(f"submissions scored against replaced gold are rescored in the background; "
                              f"`manage.py rescore {challenge.slug} --dry-run` lists any still out of date")
