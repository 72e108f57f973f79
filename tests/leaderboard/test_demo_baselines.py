"""``manage.py demo_baselines``: the demo's thirteen baseline rows queued in one process, once each."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from leaderboard.submissions.management.commands.demo_setup import DEMO_DIR
from leaderboard.submissions.models import Submission
from leaderboard.submissions.reload import challenge_load
from tests.builders.system_uploads import image_archive

pytestmark = pytest.mark.django_db


def test_the_demo_baselines_are_queued_once_on_every_board(tmp_path: Path) -> None:
    User.objects.create_user("organizer")  # the specs' staff
    for spec in ("mrqa-demo.yaml", "quac-demo.yaml", "coqa-demo.yaml"):
        challenge_load(spec_path=DEMO_DIR / spec)
    archive = tmp_path / "baseline.tar"
    archive.write_bytes(image_archive()[0])

    call_command("demo_baselines", str(archive))
    queued = sorted((s.phase.challenge.slug, s.phase.slug, s.team.name, s.kind) for s in Submission.objects.all())
    boards = [(c, p) for c in ("coqa-demo", "quac-demo") for p in ("dev", "gold-history", "own-history")]
    assert queued == sorted([("mrqa-demo", "test", "Baseline: sentence overlap", "docker_image")]
                            + [(c, p, team, "code_bundle") for c, p in boards
                               for team in ("Baseline: history filter", "Baseline: no history")])
    assert all(s.team.kind == "baseline" for s in Submission.objects.all())
    # The bundles are in the interactive protocol, and the filter's run.py passes --filter.
    stored = Submission.objects.get(phase__challenge__slug="quac-demo", phase__slug="dev", team__name="Baseline: history filter")
    with zipfile.ZipFile(stored.file.path) as bundle:
        assert bundle.read("readerboard.json") == b'{"protocol": "interactive"}'
        assert b'"--filter"' in bundle.read("run.py") and b"def " in bundle.read("converse_baseline.py")

    call_command("demo_baselines", str(archive))  # the demo started again: nothing more queued
    assert Submission.objects.count() == 13
