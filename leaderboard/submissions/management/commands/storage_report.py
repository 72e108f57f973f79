"""Organizers: where the bytes are (private storage by challenge, owner and kind; run images)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.models import Challenge
from leaderboard.core.display import size_text
from leaderboard.submissions.storage import StorageReport, engine_run_images, storage_report


class Command(BaseCommand):
    help = ("Bytes on private storage per challenge, team and kind (every file is counted once), teams "
            "against their storage budget, and the run images the engine holds: storage_report [CHALLENGE]")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge", nargs="?", help="only this challenge's files (default: everything)")
        parser.add_argument("--no-engine", action="store_true", help="do not ask the container engine")
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    def handle(self, *args: Any, **options: Any) -> None:
        challenge = None
        if options["challenge"]:
            challenge = Challenge.objects.filter(slug=options["challenge"]).first()
            if challenge is None:
                raise CommandError(f"no challenge {options['challenge']!r}")
        # The engine is listed before the database is read (see storage.run_images_in_use).
        images, engine_error = ([], "not asked (--no-engine)") if options["no_engine"] else engine_run_images()
        report = storage_report(challenge=challenge, images=images, engine_error=engine_error)
        if options["json"]:
            data = dataclasses.asdict(report)
            data["total_bytes"] = report.total_bytes
            self.stdout.write(json.dumps(data, indent=2, default=str))
            return
        self._write(report, scope=challenge.slug if challenge else "all challenges")

    def _write(self, report: StorageReport, *, scope: str) -> None:
        out = self.stdout.write
        out(f"Private storage {settings.PRIVATE_STORAGE_ROOT} ({scope})")
        out(f"{'challenge':<20} {'owner':<28} {'kind':<26} {'files':>6} {'bytes':>14}")
        for line in report.lines:
            out(f"{line.challenge or '-':<20} {line.owner[:28]:<28} {line.kind:<26} {line.files:>6} "
                f"{line.bytes:>14}  {size_text(line.bytes)}")
        out(f"{'total':<76} {sum(x.files for x in report.lines):>6} {report.total_bytes:>14}  "
            f"{size_text(report.total_bytes)}")
        out("")
        out("Teams' uploads against their storage budget")
        if not report.teams:
            out("  no team has a stored upload")
        for team in report.teams:
            share = 100 * team.used_bytes / team.budget_bytes
            out(f"  {team.challenge:<20} {team.team[:28]:<28} {size_text(team.used_bytes)} of "
                f"{size_text(team.budget_bytes)} ({share:.1f}%)")
        if report.missing:
            out("")
            out("Submissions whose file is missing from disk")
            for pk, name in report.missing:
                out(f"  submission {pk}: {name}")
        out("")
        out(f"Run images in the engine (repository {settings.RUN_IMAGE_REPOSITORY})")
        if report.engine_error:
            out(f"  {report.engine_error}")
        elif not report.images:
            out("  none: every run's image was removed after its run")
        for held in report.images:
            image = held.image
            state = "needed" if held.needed else "left over (the reaper removes it)"
            out(f"  {image.reference:<36} {image.image_id[:19]} {size_text(image.size_bytes):>10}  "
                f"submission {image.submission_id} ({held.team or '?'}, {held.status}): {state}")
