"""Hostile image archives and code bundles: the engine or the file system refuses them, and each ends as
its team's fault after exactly one attempt, with a clear reason, while the worker goes on to the next.

Where an archive can be refused at upload it is (no ENTRYPOINT or CMD; a file and a folder of one
name), and that is checked too; to show that the worker's own classification holds for an archive
accepted before those checks existed, those are then stored past the upload check.  The images are
built in Python (tests/builders/image_archives.py): no registry, no ``docker build``.
"""

from __future__ import annotations

import docker
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.sandbox.archives import BundleInfo
from leaderboard.submissions import intake
from leaderboard.submissions.models import FailureCause, Status, Submission, Verdict
from tests.builders.image_archives import hard_link_out_of_layer, many_layers, no_command
from tests.builders.systems import SYSTEMS, Platform, bundle, our_containers

pytestmark = pytest.mark.django_db(transaction=True)

FILE_AND_FOLDER = bundle(("run.py", "print('never runs')\n"), ("lib", "a file"), ("lib/util.py", "x = 1\n"))


def refused_at_upload(platform: Platform, content: bytes, *, kind: str, name: str) -> str:
    response = platform.cast.client("alice").post(
        f"/api/v1/challenges/{platform.cast.challenge.slug}/systems/",
        {"phase": "test", "kind": kind, "file": SimpleUploadedFile(name, content)},
    )
    assert response.status_code == 400, response.content
    return str(response.json()["detail"])


def test_hostile_archives_fail_once_as_the_teams_fault_with_a_clear_reason(
    platform: Platform, engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "has no ENTRYPOINT or CMD" in refused_at_upload(platform, no_command(), kind="docker_image", name="x.tar")
    assert "'lib' is both a file and a folder" in refused_at_upload(platform, FILE_AND_FOLDER, kind="code_bundle",
                                                                   name="b.zip")
    assert not Submission.objects.exists()

    cases: dict[int, tuple[str, list[str]]] = {}
    # These two pass every upload check: only the engine can refuse them.
    pk = platform.submit(many_layers(130), kind="docker_image", name="layers.tar")
    cases[pk] = ("130 layers", ["the engine could not load the image", "max depth exceeded"])
    pk = platform.submit(hard_link_out_of_layer(), kind="docker_image", name="hardlink.tar")
    cases[pk] = ("hard link out of the layer", ["the engine could not load the image"])
    # Stored past the upload checks, as archives accepted before them were.
    monkeypatch.setattr(intake, "bundle_inspect",
                        lambda *_, **__: BundleInfo("run.py", ["python3", "/system/run.py"], 1, 0))
    pk = platform.submit(FILE_AND_FOLDER, name="b.zip")
    cases[pk] = ("a file and a folder of one name", ["'lib' is both a file and a folder"])
    honest = platform.submit(bundle(("run.py", (SYSTEMS / "trivial" / "run.py").read_text())))

    problems = []
    for pk, (name, words) in cases.items():
        run = platform.wait_final(pk, timeout=180)
        summary = f"{name}: {run.status} ({run.failure_cause}, {run.verdict}) after {run.attempts}: {run.failure_reason}"
        print(summary)
        if (run.status, run.failure_cause, run.verdict, run.attempts) != (
                Status.FAILED, FailureCause.PARTICIPANT, Verdict.NOT_STARTED, 1):
            problems.append(summary)
        if not run.failure_reason.startswith("the system could not be started: ") or not all(
                w in run.failure_reason for w in words):
            problems.append(f"{name}: unclear reason {run.failure_reason!r}, expected {words}")
        # Its team sees the fixed verdict (a run on hidden data), counted against its quota.
        seen = platform.cast.client("alice").get(f"/api/v1/submissions/{pk}/").json()
        if seen["failure_reason"] != "Could not be started.":
            problems.append(f"{name}: the team reads {seen['failure_reason']!r}")
    assert not problems, "\n".join(problems) + "\n" + platform.logs()
    finished = platform.wait_final(honest, timeout=120)
    assert finished.status == Status.FINISHED, finished.failure_reason
    assert not our_containers(engine, "readerboard.submission")
