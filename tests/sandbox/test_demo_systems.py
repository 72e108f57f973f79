"""The demo's MRQA challenge (deploy/demo/mrqa-demo.yaml) with its own baseline image run for real.

Its budget tracks: the image is refused for the track its archive is over, taken for the one it fits,
run on the hidden test data, and marked over the memory track with the peak the engine measured.  Its
evaluation campaign: the organizer starts it, the same image runs again on Quoref (sealed, the
campaign's own), and the campaign's board has the score while the test board does not change."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import REPO
from tests.builders.systems import BASELINE_IMAGE, Platform, saved_image

pytestmark = pytest.mark.django_db(transaction=True)

DEMO_SPEC = REPO / "deploy" / "demo" / "mrqa-demo.yaml"


def test_the_demo_refuses_an_image_over_a_track_and_marks_a_run_over_its_memory_budget(
    platform: Platform, engine: docker.DockerClient, tmp_path: Path
) -> None:
    User.objects.create_user("organizer")
    challenge = challenge_load(spec_path=DEMO_SPEC)
    alice = platform.cast.alice
    team_create(challenge=challenge, owner=alice, name="Alpha")
    archive = saved_image(engine, BASELINE_IMAGE, tmp_path / "baseline.tar").read_bytes()
    client = platform.cast.client("alice")

    def upload(track: str) -> tuple[int, str]:
        response = client.post(f"/api/v1/challenges/{challenge.slug}/systems/", {
            "phase": "test", "kind": "docker_image", "track": track,
            "file": SimpleUploadedFile("baseline.tar", archive)})
        return response.status_code, response.content.decode()

    status, body = upload("64 MiB image")
    assert status == 400 and "over the '64 MiB image' track's limit" in body, body
    assert not Submission.objects.filter(phase__challenge=challenge).exists(), "a refused upload was kept"
    status, body = upload("6 GiB")
    assert status == 201, body
    submission = platform.wait_final(int(Submission.objects.get(phase__challenge=challenge).pk), timeout=300)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{platform.logs()}"
    peak = submission.peak_memory_mb
    assert peak is not None and 8 < peak < 1024, peak

    html = Client().get(f"/c/{challenge.slug}/board/test/budgets/").content.decode()
    memory = html[html.index("<h2>8 MiB memory"):html.index("<h2>6 GiB")]
    assert "over budget" in memory and f"peak memory {peak} MiB" in memory, memory
    roomy = html[html.index("<h2>6 GiB"):html.index("Cost against score")]
    assert "over budget" not in roomy and "Alpha" in roomy
    image = html[html.index("<h2>64 MiB image"):html.index("<h2>8 MiB memory")]
    assert "over budget" in image and "image" in image

    organizer = Client()
    organizer.force_login(User.objects.get(username="organizer"))
    board = organizer.get(f"/c/{challenge.slug}/board/test/organizer/export.json").content
    confirm = organizer.get(f"/c/{challenge.slug}/console/phases/new-domains/campaign/").content.decode()
    assert "1 system of the Test (hidden) phase run again" in confirm and "Quoref" in confirm, confirm
    started = organizer.post(f"/c/{challenge.slug}/console/phases/new-domains/campaign/", {"reason": "demo"})
    assert started.status_code == 302, started.content[:500]
    run = platform.wait_final(Submission.objects.get(phase__slug="new-domains").pk, timeout=300)
    assert run.status == Status.FINISHED and run.image_digest == submission.image_digest, run.failure_reason
    [row] = organizer.get(f"/c/{challenge.slug}/board/new-domains/organizer/export.json").json()["rows"]
    assert row["team"] == "Alpha" and row["Quoref F1"] is not None and "Quoref" not in run.log
    assert organizer.get(f"/c/{challenge.slug}/board/test/organizer/export.json").content == board
