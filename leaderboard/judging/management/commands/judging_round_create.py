from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.management.lookups import challenge_named, phase_named, user_named
from leaderboard.core.errors import ServiceError
from leaderboard.judging.spec_rounds import round_create_from_spec


class Command(BaseCommand):
    help = ("Create a draft human evaluation round on a phase from its spec settings (phases[].human_eval): "
            "the board's top systems, the questions sampled (seeded), the judges it names invited. Open it in the "
            "console when you have read it.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge", help="the challenge's slug")
        parser.add_argument("phase", help="the phase's slug")
        parser.add_argument("--by", required=True, help="the organizer it is done as (a username; audit log)")

    def handle(self, *args: Any, **options: Any) -> None:
        phase = phase_named(challenge_named(options["challenge"]), options["phase"])
        by = user_named(options["by"])
        try:
            made = round_create_from_spec(phase=phase, by=by)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        r = made.round
        self.stdout.write(f"round {r.pk} ({r.name or phase.name}): draft, {r.items.count()} questions, "
                          f"{r.systems.count()} systems, {r.judges_per_item} judges per answer, seed {r.seed}")
        if made.invited:
            self.stdout.write(f"invited as judges: {', '.join(made.invited)}")
        if made.judging_already:
            self.stdout.write(f"judging this challenge already: {', '.join(made.judging_already)}")
