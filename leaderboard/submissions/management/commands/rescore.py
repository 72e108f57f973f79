from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenges.management.lookups import challenge_named, phase_named
from leaderboard.submissions.rescore import rescore_candidates, rescore_enqueue, retired_gold_prune


class Command(BaseCommand):
    help = ("Rescore a challenge's finished submissions whose scores are out of date (computed against a gold "
            "file since replaced, or by another scoring version), from their prediction files and the stored "
            "answers of system runs, in the background; the earlier scores go to each submission's history.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge", help="the challenge's slug")
        parser.add_argument("--phase", help="only this phase (slug)")
        parser.add_argument("--dataset", help="only submissions with scores on this dataset (slug)")
        parser.add_argument("--dry-run", action="store_true", help="list what is out of date, queue nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        challenge = challenge_named(options["challenge"])
        phase = phase_named(challenge, options["phase"]) if options["phase"] else None
        dataset = None
        if options["dataset"]:
            dataset = challenge.datasets.filter(slug=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"{challenge.slug} has no dataset {options['dataset']!r} "
                                   f"(it has {', '.join(challenge.datasets.values_list('slug', flat=True))})")
        find = rescore_candidates if options["dry_run"] else rescore_enqueue
        candidates = find(challenge=challenge, phase=phase, dataset=dataset)
        for c in candidates:
            what = f"cannot be rescored: {c.problem}" if c.problem else (
                "out of date" if options["dry_run"] else "queued")
            self.stdout.write(f"submission {c.submission.pk} ({c.submission.team.name}, {c.submission.phase.slug}): "
                              f"{'; '.join(c.reasons)}: {what}")
        stuck = sum(1 for c in candidates if c.problem)
        verb = "out of date" if options["dry_run"] else "queued for rescoring"
        self.stdout.write(f"{len(candidates) - stuck} submission(s) {verb}, {stuck} cannot be rescored")
        if not options["dry_run"]:
            # Rescores prune as they finish; this catches files left by rescores that ran earlier.
            for name in retired_gold_prune(challenge=challenge):
                self.stdout.write(f"deleted replaced gold {name}: no score refers to it")
