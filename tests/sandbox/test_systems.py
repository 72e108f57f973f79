"""Submitted systems run for real: Docker engine, Redis, Celery workers; scored outside the container."""

from __future__ import annotations

from pathlib import Path

import docker
import docker.errors
import pytest
from django.core.management import call_command
from django.test import Client

from leaderboard.submissions.models import Score, Status, Submission
from tests.builders.systems import BASELINE_IMAGE, SYSTEMS, Platform, saved_image, script_bundle

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_code_bundle_runs_on_the_hidden_test_inputs_and_is_scored(platform: Platform) -> None:
    pk = platform.submit(script_bundle(SYSTEMS / "trivial" / "run.py"))
    submission = platform.wait_final(pk)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"
    per_dataset = set(Score.objects.filter(submission=submission, dataset__isnull=False)
                      .values_list("dataset__slug", "metric"))
    # The test portion: XQuAD-en (Split II) and CoQA (Split III, sealed as Hidden-07).
    assert {("xquad-en", "f1"), ("coqa", "f1")} <= per_dataset
    assert "Hidden-07" in submission.log and "CoQA" not in submission.log
    assert submission.exit_code == 0 and submission.run_seconds is not None
    assert submission.attempts == 1


def test_the_baseline_image_submitted_through_the_api_runs_and_its_scores_reach_the_board(
    platform: Platform, engine: docker.DockerClient, tmp_path: Path
) -> None:
    archive = saved_image(engine, BASELINE_IMAGE, tmp_path / "baseline.tar")
    pk = platform.submit(archive.read_bytes(), kind="docker_image", name="baseline.tar")
    submission = platform.wait_final(pk, timeout=180)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"
    assert submission.image_digest == engine.images.get(BASELINE_IMAGE).id  # pinned by id
    f1 = {s.dataset.slug: s.value for s in Score.objects.filter(submission=submission, metric="f1")
          if s.dataset is not None}
    # A real extractive baseline: well above zero, well below gold.
    xquad_f1, coqa_f1 = f1["xquad-en"], f1["coqa"]
    assert xquad_f1 is not None and 5 < xquad_f1 < 90, f1
    assert coqa_f1 is not None
    board = Client().get("/c/demo/board/test/export.json").json()
    row = next(r for r in board["rows"] if r["team"] == "Alpha")
    assert row["XQuAD-en F1"] == pytest.approx(f1["xquad-en"])
    # Split III stays sealed on the public board: no CoQA column, its alias shows no number.
    assert not any("CoQA" in key for key in row)
    assert row["Hidden-07 F1"] is None
    # Nor does the macro average over XQuAD-en and it (CoQA's F1 = 2 x macro - XQuAD-en's):
    # only the organizer view shows it.
    assert row["Macro F1"] is None and "Macro F1" in board["withheld"]
    client = Client()
    client.force_login(platform.cast.oscar)
    organizer = client.get("/c/demo/board/test/organizer/export.json").json()
    row = next(r for r in organizer["rows"] if r["team"] == "Alpha")
    assert row["Macro F1"] == pytest.approx((xquad_f1 + coqa_f1) / 2)


def test_a_baseline_system_queued_by_the_organizers_is_a_marked_row(
    platform: Platform, engine: docker.DockerClient, tmp_path: Path
) -> None:
    archive = saved_image(engine, BASELINE_IMAGE, tmp_path / "baseline.tar")
    call_command("system_submit", "demo", "test", str(archive), "--team", "Sentence-overlap baseline")
    submission = Submission.objects.get(team__name="Sentence-overlap baseline")
    submission = platform.wait_final(submission.pk, timeout=180)
    assert submission.status == Status.FINISHED, submission.failure_reason
    board = Client().get("/c/demo/board/test/export.json").json()
    row = next(r for r in board["rows"] if r["team"] == "Sentence-overlap baseline")
    assert row["baseline"] is True and row["XQuAD-en F1"] > 5
