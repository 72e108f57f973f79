"""Every demo challenge's starting kit, followed literally (issue 25): a participant's journey, as a test.

For each spec of ``deploy/demo``, a team member downloads the kit and the Data page's files and runs
every line of every ```` ```bash ```` block of its README, parsed from the README itself, in a fresh
virtual environment (``tests/builders/kits.py``: its ``pip install -r requirements.txt`` from PyPI
included, hence ``slow``).  Then the kit's own submission is made as the README says:

* prediction files (``dev-predictions.zip``) go through the platform's intake and are scored there,
  and every dataset's score equals what the README's ``python -m scoring`` line printed locally;
* a system bundle (``baseline-bundle.zip``, ``converse-bundle.zip``) passes the upload check of the
  phases the README names for it, and the interactive one, played by the local harness
  (``python -m scoring converse``) on the practice and the dev dialogs, finishes every mode.

The platform's own runs of the bundles need the engine: ``tests/sandbox/test_starting_kit_bundle.py``
(batch) and ``tests/sandbox/test_kits_followed_interactive.py`` (the interactive kits, followed as
here, whose dev phase then scores the kit's bundle equal to the harness).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from tests.builders.kits import DEMOS, kit_checks, kit_follow

# Where each suite's local command prints the figure the platform stores under a metric.
LOCAL_METRICS: dict[str, dict[str, tuple[str, ...]]] = {
    "mrqa": {"f1": ("f1",), "em": ("exact_match",)},
    "mrc2018": {"rouge_l": ("ROUGE-L",), "bleu_4": ("BLEU-4",)},
    "quac": {"f1": ("f1",)}, "coqa": {"f1": ("overall", "f1")}}

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def dig(result: dict[str, object], path: tuple[str, ...]) -> object:
    value: object = result
    for key in path:
        assert isinstance(value, dict), (result, path)
        value = value[key]
    return value


@pytest.mark.parametrize("spec", DEMOS, ids=[p.stem for p in DEMOS])
def test_the_kit_followed_literally_works(spec: Path, kit_venv: Path, tmp_path: Path,
                                          django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks) -> None:
    followed = kit_follow(spec, kit_venv, tmp_path)
    if followed is None:
        # No data, no kit (DataCatalogue.has_data): the archive of published results.
        pytest.skip(f"{spec.stem} has no data, so no kit to follow")
    challenge, team, base, local = followed.challenge, followed.team, followed.base, followed.local
    alice = User.objects.get(username="alice")
    suite = challenge.metric_suite
    dev_zip = base / "dev-predictions.zip"
    if local:
        assert dev_zip.exists(), "the README scores dev predictions but never zips them for the dev phase"
    if dev_zip.exists():
        with django_capture_on_commit_callbacks(execute=True):
            submission = submission_create_predictions(
                team=team, phase=challenge.phases.get(slug=json.loads((base / "dev" / "manifest.json").read_text())["phase"]),
                user=alice, upload=SimpleUploadedFile("dev-predictions.zip", dev_zip.read_bytes()),
                limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
            )
        submission.refresh_from_db()
        assert submission.status == Status.FINISHED, submission.failure_reason
        manifest = json.loads((base / "dev" / "manifest.json").read_text())
        for entry in manifest["datasets"]:
            key = entry["output"].removesuffix(".json")
            scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__name=entry["name"])}
            for metric, path in LOCAL_METRICS[suite].items():
                assert scores[metric] == pytest.approx(dig(local[key], path), abs=1e-9), (key, metric)
    if (base / "test-predictions.zip").exists():
        # The test phase's upload is checked whole (every dataset, every id) before it is stored.
        with django_capture_on_commit_callbacks(execute=False):
            taken = submission_create_predictions(
                team=team, phase=challenge.phases.get(slug=json.loads((base / "test" / "manifest.json").read_text())["phase"]),
                user=alice, upload=SimpleUploadedFile("test-predictions.zip", (base / "test-predictions.zip").read_bytes()),
                limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
            )
        assert taken.pk

    kit_checks(followed)
