"""A submission runs only what it uploaded, under a name of its own, and leaves nothing behind.

The attack: the engine knows an image by its config's hash and skips loading any layer whose chain
it already has, so a ~10 KiB archive holding the organizers' baseline config and placeholder layers
used to run the baseline under another team's name.  Now the archive's layers must hash to its
config's diff_ids, at upload and again where the worker loads it; each run's image is loaded under
``<RUN_IMAGE_REPOSITORY>/<submission>:<attempt>`` and removed after the run.

Then storage: after a batch of runs and refused uploads, the organizers' report matches the bytes on
disk, and retention frees exactly what its dry run said.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from leaderboard.submissions import intake
from leaderboard.submissions.models import FailureCause, Status, Submission, Verdict
from tests.builders.systems import BASELINE_IMAGE, SYSTEMS, Platform, bundle, saved_image, script_bundle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def baseline_tar(engine: docker.DockerClient, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return saved_image(engine, BASELINE_IMAGE, tmp_path_factory.mktemp("baseline") / "baseline.tar")


def forged_from(genuine: Path) -> tuple[bytes, str]:
    """The baseline's manifest and config, and an empty tar where each of its layers should be."""
    with tarfile.open(genuine) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = tar.extractfile(manifest[0]["Config"]).read()  # type: ignore[union-attr]
    placeholder = io.BytesIO()
    tarfile.open(fileobj=placeholder, mode="w").close()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as out:
        members = [(manifest[0]["Config"], config), ("manifest.json", json.dumps(manifest).encode())]
        members += [(name, placeholder.getvalue()) for name in manifest[0]["Layers"]]
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return buffer.getvalue(), "sha256:" + hashlib.sha256(config).hexdigest()


def run_references(engine: docker.DockerClient) -> list[str]:
    """This test run's per-submission images (its own repository: other runs share the engine)."""
    found = engine.images.list(filters={"reference": f"{settings.RUN_IMAGE_REPOSITORY}/*"})
    return sorted(tag for image in found for tag in image.tags)


def run_references_left(engine: docker.DockerClient, *, within_s: float = 30.0) -> list[str]:
    """``run_references`` once the workers have taken their runs down: a run's outcome is handed back
    before its sandbox and image are removed (workers.run_system), so a final status can come first."""
    deadline = time.monotonic() + within_s
    while (left := run_references(engine)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture
def no_run_images_after(engine: docker.DockerClient) -> Iterator[None]:
    yield
    assert run_references_left(engine) == [], "a run's image stayed in the engine"


def test_a_forged_archive_with_the_baselines_config_is_refused_at_upload(
    platform: Platform, engine: docker.DockerClient, baseline_tar: Path
) -> None:
    forged, baseline_id = forged_from(baseline_tar)
    assert len(forged) < 64 * 1024 and baseline_id == engine.images.get(BASELINE_IMAGE).id
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    before = {p for p in root.rglob("*") if p.is_file()}
    response = platform.cast.client("alice").post(
        "/api/v1/challenges/demo/systems/",
        {"phase": "test", "kind": "docker_image", "file": SimpleUploadedFile("my-system.tar", forged)},
    )
    assert response.status_code == 400, response.content[:500]
    detail = response.json()["detail"]
    assert "is not the layer the image's config names" in detail and "rootfs.diff_ids[0]" in detail
    assert not Submission.objects.exists()
    assert {p for p in root.rglob("*") if p.is_file()} == before, "the refused archive stayed on disk"


def test_a_forged_archive_that_got_past_upload_fails_at_load_once_and_the_baseline_runs_as_itself(
    platform: Platform, engine: docker.DockerClient, baseline_tar: Path, monkeypatch: pytest.MonkeyPatch,
    no_run_images_after: None,
) -> None:
    forged, baseline_id = forged_from(baseline_tar)
    # As if the upload check had missed it (an older platform let it in): the worker checks again.
    monkeypatch.setattr(intake, "_check_archive", lambda path, *, kind, name, phase: baseline_id)
    pk = platform.submit(forged, kind="docker_image", name="my-system.tar")
    monkeypatch.undo()
    call_command("system_submit", "demo", "test", str(baseline_tar), "--team", "Baseline: sentence overlap")
    baseline_pk = Submission.objects.get(team__name="Baseline: sentence overlap").pk

    forged_run = platform.wait_final(pk, timeout=120)
    assert forged_run.status == Status.FAILED, forged_run.failure_reason
    assert forged_run.failure_cause == FailureCause.PARTICIPANT and forged_run.verdict == Verdict.NOT_STARTED
    assert forged_run.attempts == 1, "a refused archive is the team's fault: it is not tried again"
    assert "is not the layer the image's config names" in forged_run.failure_reason, forged_run.failure_reason
    assert forged_run.scores.count() == 0

    baseline_run = platform.wait_final(baseline_pk, timeout=180)
    assert baseline_run.status == Status.FINISHED, f"{baseline_run.failure_reason}\n{platform.logs()}"
    board = Client().get("/c/demo/board/test/export.json").json()
    teams = {row["team"]: row for row in board["rows"]}
    assert teams["Baseline: sentence overlap"]["XQuAD-en F1"] > 5
    assert "Alpha" not in teams or teams["Alpha"]["XQuAD-en F1"] is None
    # The baseline's image is untouched, under its own tag; no run's image is left.
    assert BASELINE_IMAGE in engine.images.get(baseline_id).tags
    assert run_references_left(engine) == []


def test_after_a_batch_of_runs_the_report_matches_the_disk_and_retention_frees_what_it_said(
    platform: Platform, engine: docker.DockerClient, baseline_tar: Path, no_run_images_after: None,
) -> None:
    cast = platform.cast
    cast.challenge.system_settings = {**cast.challenge.system_settings, "storage_mb_per_team": 1}
    cast.challenge.save()
    trivial = script_bundle(SYSTEMS / "trivial" / "run.py")
    runs = [platform.submit(trivial, phase="dev", who=who) for who in ("alice", "alice", "alice", "charlie")]
    # Refused uploads (not an archive, a forgery, past the budget) leave nothing on disk.
    client = cast.client("alice")
    too_big = bundle(("run.py", "print(1)\n"), ("weights.bin", os.urandom(1100 * 1024)))
    for content, kind, expected in ((b"junk", "code_bundle", 400), (forged_from(baseline_tar)[0], "docker_image", 400),
                                    (too_big, "code_bundle", 413)):
        response = client.post("/api/v1/challenges/demo/systems/",
                               {"phase": "dev", "kind": kind, "file": SimpleUploadedFile("upload", content)})
        assert response.status_code == expected, response.content[:300]
    for pk in runs:
        assert platform.wait_final(pk).status == Status.FINISHED, platform.logs()

    root = Path(settings.PRIVATE_STORAGE_ROOT)
    on_disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    out = io.StringIO()
    call_command("storage_report", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["total_bytes"] == on_disk and report["engine_error"] == ""
    alpha = next(x for x in report["lines"] if x["owner"] == "Alpha")
    assert alpha == {"challenge": "demo", "owner": "Alpha", "kind": "code_bundle", "files": 3,
                     "bytes": 3 * len(trivial)}
    assert report["images"] == []  # every run removed its image

    def retain(*extra: str) -> dict:
        out = io.StringIO()
        call_command("storage_retain", "--older-than", "0", "--keep-newest", "1", "--json", *extra, stdout=out)
        retained: dict = json.loads(out.getvalue())
        return retained

    # Alpha keeps its board run (the first of equal scores) and its newest; Charlie its one.
    planned = retain("--dry-run")
    assert sorted(item["submission"] for item in planned["free"]) == [runs[1]]
    assert planned["free_bytes"] == len(trivial)
    done = retain()
    assert [item["name"] for item in done["freed"]] == [item["name"] for item in planned["free"]]
    after = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert on_disk - after == done["freed_bytes"] == planned["free_bytes"]
    assert not Submission.objects.get(pk=runs[1]).file
