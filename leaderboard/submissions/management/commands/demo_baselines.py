"""Queue the demo's baseline systems, once each: the MRQA baseline image and the two conversational bundles.

One process for all thirteen rows: ``deploy/demo.sh`` ran ``system_submit`` thirteen times, and each start of
Django cost the fresh demo seconds (96 s in all under load) before the last baseline was queued.
"""

from __future__ import annotations

import zipfile
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from leaderboard.submissions.management.baselines import baseline_queue

BASELINE_DIR = Path(settings.BASE_DIR) / "deploy" / "images" / "baseline"
# run.py of a bundle: converse_baseline.py with its flags (the bundle's entry point is run.py).
_RUN = ('import runpy, sys\nsys.argv = ["converse_baseline.py"{flags}]\n'
        'runpy.run_path("converse_baseline.py", run_name="__main__")\n')
# (bundle, extra argv, team, description): one ignores the history, one filters out what it names.
CONVERSE_BASELINES = (
    ("converse-baseline", "", "Baseline: no history",
     "converse_baseline.py: best-overlap sentence, history ignored"),
    ("converse-filter", ', "--filter"', "Baseline: history filter",
     "converse_baseline.py --filter: excludes sentences overlapping earlier answers"),
)
CONVERSE_BOARDS = [(c, p) for c in ("quac-demo", "coqa-demo") for p in ("dev", "gold-history", "own-history")]


def converse_bundle_write(target: Path, flags: str) -> Path:
    """A code bundle of deploy/images/baseline/converse_baseline.py in the interactive protocol."""
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("converse_baseline.py", (BASELINE_DIR / "converse_baseline.py").read_text())
        archive.writestr("run.py", _RUN.format(flags=flags))
        archive.writestr("readerboard.json", '{"protocol": "interactive"}')
    return target


class Command(BaseCommand):
    help = "Queue the demo's baselines (once each): demo_baselines IMAGE_ARCHIVE"

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("image_archive", help="`docker save` of readerboard/baseline:latest")

    def handle(self, *args: Any, **options: Any) -> None:
        # The baseline system runs on the hidden test data like any team's and ranks as a marked row.
        self.stdout.write(baseline_queue(
            challenge="mrqa-demo", phase="test", path=options["image_archive"], team="Baseline: sentence overlap",
            description="deploy/images/baseline: word-overlap sentence, short span", once=True))
        folder = Path(settings.VAR_DIR)
        bundles = [(str(converse_bundle_write(folder / f"{bundle}.zip", flags)), team, description)
                   for bundle, flags, team, description in CONVERSE_BASELINES]
        for challenge, phase in CONVERSE_BOARDS:
            for path, team, description in bundles:
                self.stdout.write(baseline_queue(challenge=challenge, phase=phase, path=path, team=team,
                                                 description=description, once=True))
