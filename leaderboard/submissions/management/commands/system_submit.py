"""Organizers: run a system (image archive or code bundle) as a baseline row of a phase."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from leaderboard.submissions.management.baselines import baseline_queue


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
        self.stdout.write(baseline_queue(challenge=options["challenge"], phase=options["phase"], path=options["file"],
                                         team=options["team"], kind=options["kind"],
                                         description=options["description"], once=options["once"]))
