"""Organizers: free the uploads of old submissions nobody needs (dry run first)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.models import Challenge
from leaderboard.core.display import size_text
from leaderboard.submissions.storage import (
    ORPHAN_GRACE,
    RetentionPlan,
    storage_retain,
    storage_retention_plan,
)


class Command(BaseCommand):
    help = ("Delete the uploaded files of old submissions that nothing needs, keeping every queued or "
            "running submission's, each team's board (or selected) submission and its newest per phase: "
            "storage_retain [--older-than DAYS] [--keep-newest N] [--dry-run]")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=int, default=30, metavar="DAYS",
                            help="free only files of submissions older than this (default 30)")
        parser.add_argument("--keep-newest", type=int, default=3, metavar="N",
                            help="keep each team's N newest submissions per phase (default 3)")
        parser.add_argument("--challenge", help="only this challenge's submissions (default: all, and "
                            "files no submission names)")
        parser.add_argument("--dry-run", action="store_true", help="say what would be freed; free nothing")
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["older_than"] < 0 or options["keep_newest"] < 0:
            raise CommandError("--older-than and --keep-newest take a number of 0 or more")
        challenge = None
        if options["challenge"]:
            challenge = Challenge.objects.filter(slug=options["challenge"]).first()
            if challenge is None:
                raise CommandError(f"no challenge {options['challenge']!r}")
        plan = storage_retention_plan(older_than_days=options["older_than"], keep_newest=options["keep_newest"],
                                      challenge=challenge)
        if options["dry_run"]:
            self._write(plan, freed=None, json_output=options["json"])
            return
        result = storage_retain(plan=plan)
        self._write(plan, freed=result, json_output=options["json"])

    def _write(self, plan: RetentionPlan, *, freed: Any, json_output: bool) -> None:
        if json_output:
            data: dict[str, Any] = {
                "dry_run": freed is None,
                "older_than_days": plan.older_than_days,
                "keep_newest": plan.keep_newest,
                "kept": plan.kept,
                "free": [dataclasses.asdict(item) for item in plan.free],
                "free_bytes": plan.free_bytes,
            }
            if freed is not None:
                data["freed"] = [dataclasses.asdict(item) for item in freed.freed]
                data["freed_bytes"] = freed.freed_bytes
                data["skipped"] = [dataclasses.asdict(item) for item in freed.skipped]
            self.stdout.write(json.dumps(data, indent=2))
            return
        out = self.stdout.write
        cutoff = plan.now - dt.timedelta(days=plan.older_than_days)
        out(f"Kept: the file of every queued or running submission, each team's board (or selected) submission, "
            f"its {plan.keep_newest} newest per phase, and every submission newer than {plan.older_than_days} days "
            f"(submitted after {cutoff:%Y-%m-%d %H:%M} UTC); a file no submission names is freed once older than "
            f"that and {ORPHAN_GRACE.days} day.")
        for reason, count in plan.kept.items():
            out(f"  kept {count:>5}: {reason}")
        verb = "Would free" if freed is None else "Freeing"
        out(f"{verb} {len(plan.free)} files, {plan.free_bytes} bytes ({size_text(plan.free_bytes)}):")
        for item in plan.free:
            out(f"  {item.name}  {item.size_bytes} bytes  {item.why}")
        if freed is None:
            out("Dry run: nothing was deleted.")
            return
        out(f"Freed {len(freed.freed)} files, {freed.freed_bytes} bytes ({size_text(freed.freed_bytes)}).")
        for item in freed.skipped:
            out(f"  skipped (changed since the plan): {item.name}  {item.why}")
