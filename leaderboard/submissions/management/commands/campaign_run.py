from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.management.lookups import challenge_named, user_named
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.campaigns import campaign_plan, campaign_start


class Command(BaseCommand):
    help = ("Start an evaluation campaign: run the archived systems of its source phase again on the campaign's "
            "own datasets (spec phases[].campaign). Safe to run again: a system already asked is not asked twice. "
            "With --dry-run, say what would run and what cannot, and why.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge", help="the challenge's slug")
        parser.add_argument("phase", help="the campaign phase's slug")
        parser.add_argument("--by", required=True, help="the organizer it is done as (a username; audit log)")
        parser.add_argument("--submission", type=int, action="append", dest="submissions",
                            help="only this source submission (repeatable); default: every one the campaign takes")
        parser.add_argument("--reason", default="", help="why, for the audit log")
        parser.add_argument("--dry-run", action="store_true", help="start nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        challenge = challenge_named(options["challenge"])
        phase = challenge.phases.filter(slug=options["phase"]).first()
        campaigns = [p.slug for p in challenge.phases.all() if p.is_campaign]
        if phase is None or not phase.is_campaign:
            raise CommandError(f"{challenge.slug} has no campaign {options['phase']!r} "
                               f"(its campaigns: {', '.join(campaigns) or 'none'})")
        by = user_named(options["by"])
        try:
            plan = campaign_plan(phase=phase)
            for c in plan.candidates:
                state = (f"asked already ({'run ' + str(c.run.run_id) if c.run.run_id else c.run.problem})" if c.run
                         else f"cannot run: {c.problem}" if c.problem else "would run" if options["dry_run"] else "")
                if state:
                    self.stdout.write(f"submission {c.source.pk} ({c.source.team.name}): {state}")
            if options["dry_run"]:
                if plan.problem:
                    self.stdout.write(f"cannot start: {plan.problem}")
                return
            made = campaign_start(phase=phase, by=by, source_ids=options["submissions"], reason=options["reason"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for record in made:
            what = f"queued as submission {record.run_id}" if record.run_id else f"not run again: {record.problem}"
            self.stdout.write(f"submission {record.source_id} ({record.source.team.name}): {what}")
        self.stdout.write(f"{sum(1 for r in made if r.run_id)} run(s) queued, "
                          f"{sum(1 for r in made if not r.run_id)} recorded as not run again")
