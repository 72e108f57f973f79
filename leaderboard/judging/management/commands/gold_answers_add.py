from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.management.lookups import challenge_named, user_named
from leaderboard.core.errors import ServiceError
from leaderboard.judging.gold import round_gold_additions_apply, round_gold_additions_plan
from leaderboard.judging.models import Round


class Command(BaseCommand):
    help = ("Add the answers an extractive judging round accepted as extra gold answers of their questions: "
            "prints the plan (answers per question, submissions whose scores change and by how much); "
            "--apply replaces the gold files, rescoring with history as any gold change does.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge", help="the challenge's slug")
        parser.add_argument("round", type=int, help="the judging round's id")
        parser.add_argument("--by", required=True, help="the organizer's username (audited)")
        parser.add_argument("--apply", action="store_true", help="add the answers (default: print the plan only)")
        parser.add_argument("--reason", default="", help="why, for the audit log (required with --apply)")

    def handle(self, *args: Any, **options: Any) -> None:
        challenge = challenge_named(options["challenge"])
        round = Round.objects.filter(pk=options["round"], phase__challenge=challenge).select_related(
            "phase__challenge").first()
        if round is None:
            raise CommandError(f"{challenge.slug} has no judging round {options['round']}")
        by = user_named(options["by"])
        try:
            plan = round_gold_additions_plan(round=round, by=by)
            for line in plan.lines():
                self.stdout.write(line)
            if not options["apply"]:
                return
            if not plan.has_additions:
                self.stdout.write("nothing applied: no answer to add")
                return
            done = round_gold_additions_apply(round=round, by=by, reason=options["reason"] or "")
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        for d in done.datasets:
            if d.applicable:
                self.stdout.write(f"applied: {d.dataset.slug} ({d.portion}): "
                                  f"{sum(len(a) for a in d.answers.values())} answer(s) added; "
                                  "its submissions are rescored in the background")
