"""Uploading systems (image archives, code bundles): refused whole with a clear 4xx, or stored and queued.

No engine is needed here: archives are built by hand, byte for byte what ``docker save`` writes
(manifest.json, the config blob, layer tars), so every refusal happens before anything runs.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from pytest_django import Settings

from leaderboard.accounts.models import Team
from leaderboard.sandbox.archives import ArchiveError, bundle_inspect
from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast
from tests.builders.system_uploads import CHANNELS, bundle_of, image_archive, post, tar_of


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_image_archive_is_stored_pinned_by_its_id_and_queued(systems: Cast, channel: str) -> None:
    content, image_id = image_archive(gz=True)
    status, _ = post(systems, channel, content, kind="docker_image", name="mine.tar.gz")
    assert status in (201, 302)
    submission = Submission.objects.get()
    assert submission.status == Status.QUEUED and submission.image_digest == image_id
    assert submission.queued_at is not None
    assert Path(submission.file.path).read_bytes() == content
    assert not list((Path(settings.PRIVATE_STORAGE_ROOT) / "spool").iterdir())


CASES = {
    "not an archive": (b"just some text", "docker_image", "x.tar", ["not a tar archive"]),
    "no manifest": (tar_of({"a.json": b"{}"}), "docker_image", "x.tar", ["no manifest.json", "docker save"]),
    "two images": (image_archive(manifest=[{}, {}])[0], "docker_image", "x.tar", ["holds 2 images"]),
    "path traversal": (image_archive(extra={"../../etc/cron.d/x": b"boom"})[0], "docker_image", "x.tar",
                       ["unsafe member name", "../../etc/cron.d/x"]),
    "missing layer": (image_archive(manifest=[{"Config": "nope.json", "Layers": []}])[0], "docker_image", "x.tar",
                      ["names 'nope.json', which is not in the archive"]),
    "a VOLUME": (image_archive(config={"os": "linux", "architecture": "amd64",
                                       "config": {"Volumes": {"/data": {}}}})[0],
                 "docker_image", "x.tar", ["declares VOLUME /data"]),
    "arm image": (image_archive(config={"os": "linux", "architecture": "arm64", "config": {}})[0],
                  "docker_image", "x.tar", ["linux/arm64", "linux/amd64 is needed"]),
    "truncated gzip": (image_archive(gz=True)[0][:200], "docker_image", "x.tar.gz", ["x.tar.gz:"]),
    # Another image's config with a placeholder where its layer should be: the engine, which knows
    # an image by its config's hash and skips layers it has, would run that other image.
    "forged layer": (image_archive(stored_layer=tar_of({"placeholder": b""}))[0], "docker_image", "x.tar",
                     ["layer 1 of 1", "is not the layer the image's config names", "rootfs.diff_ids[0]"]),
    "layers the config does not list": (
        image_archive(config={"os": "linux", "architecture": "amd64", "config": {"Cmd": ["true"]},
                              "rootfs": {"type": "layers", "diff_ids": []}})[0], "docker_image", "x.tar",
        ["lists 0 layers (rootfs.diff_ids) and manifest.json 1"]),
    # Inspecting must cost memory bounded by the limits, not by what the archive holds (issue 17):
    # a config or manifest of a million empty objects, or an archive of countless tiny entries.
    "a config too big to parse": (image_archive(config={"os": "linux", "architecture": "amd64",
                                                       "junk": [{}] * 400_000}, gz=True)[0],
                                  "docker_image", "x.tar.gz", ["(the image's config) is over 1024 KiB"]),
    "a manifest too big to parse": (
        tar_of({"manifest.json": b"[" + b"{}," * 400_000 + b"{}]"}, gz=True), "docker_image", "x.tar.gz",
        ["manifest.json is not a small file (at most 1024 KiB)"]),
    "countless entries": (tar_of({f"e{i}": b"" for i in range(1200)}, gz=True), "docker_image", "x.tar.gz",
                          ["more than 1000 entries in the archive"]),
    "bundle of countless files": (bundle_of({"run.py": b"", **{f"f{i}": b"" for i in range(2500)}}), "code_bundle",
                                  "b.zip", ["2501 files in the bundle; at most 2000"]),
    "bundle not a zip": (b"PK not really", "code_bundle", "b.zip", ["not a zip archive"]),
    "bundle without run.py": (bundle_of({"main.py": b"print(1)"}), "code_bundle", "b.zip",
                              ["no run.sh or run.py at the top"]),
    "bundle in a folder": (bundle_of({"mine/run.py": b"print(1)"}), "code_bundle", "b.zip",
                           ["not inside a folder"]),
    "bundle traversal": (bundle_of({"run.py": b"", "../evil.py": b"x"}), "code_bundle", "b.zip",
                         ["unsafe path '../evil.py'"]),
}


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_system_upload_is_refused_whole_and_says_why(
    systems: Cast, nothing_stored: None, channel: str, case: str
) -> None:
    content, kind, name, fragments = CASES[case]
    status, message = post(systems, channel, content, kind=kind, name=name)
    assert status == 400, message[:500]
    for fragment in fragments:
        assert fragment in message, (fragment, message[:2000])


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_image_over_the_size_limit_is_413(systems: Cast, nothing_stored: None, channel: str,
                                             settings: Settings) -> None:
    content, _ = image_archive()
    settings.MAX_SYSTEM_UPLOAD_BYTES = len(content) - 1
    status, message = post(systems, channel, content, kind="docker_image", name="big.tar")
    assert status == 413
    assert "big.tar" in message and "limit" in message


def test_a_huge_system_request_is_413_before_its_body_is_read(systems: Cast, nothing_stored: None,
                                                              settings: Settings) -> None:
    settings.MAX_SYSTEM_UPLOAD_BYTES = 1000
    response = systems.client("alice").post(
        "/api/v1/challenges/demo/systems/", data=b"x" * 200_000, content_type="application/octet-stream"
    )
    assert response.status_code == 413
    assert "limited to 1000 bytes" in response.json()["detail"]


def test_a_phase_that_takes_only_predictions_refuses_systems(cast: Cast) -> None:
    content, _ = image_archive()
    status, message = post(cast, "api", content, kind="docker_image", name="x.tar")
    assert status == 400
    assert "The Test phase takes prediction files, not Docker images." in message
    assert not Submission.objects.exists()


def test_the_log_of_a_run_on_hidden_data_is_shown_to_organizers_until_one_releases_it(systems: Cast) -> None:
    content, _ = image_archive()
    post(systems, "api", content, kind="docker_image", name="x.tar")
    submission = Submission.objects.get()
    assert submission.phase.portion == "test"
    Submission.objects.filter(pk=submission.pk).update(log="SECRET-LOG-LINE", attempts=1, status="finished")
    url = f"/api/v1/submissions/{submission.pk}/log/"
    page = f"/c/demo/submissions/{submission.pk}/"

    for who, expected in [("alice", 200), ("bob", 200), ("oscar", 200), ("charlie", 404), ("dave", 404),
                          (None, 401)]:
        response = systems.client(who).get(url)
        assert response.status_code in ((expected,) if expected != 401 else (401, 403)), who
        # Only the organizer reads it: the run read hidden test data.
        assert ("SECRET-LOG-LINE" in response.content.decode()) == (who == "oscar"), who
    assert "SECRET-LOG-LINE" not in systems.client("alice").get(page).content.decode()
    assert "SECRET-LOG-LINE" in systems.client("oscar").get(page).content.decode()
    assert systems.client("charlie").get(page).status_code == 404
    assert systems.client("alice").get(url).json()["log"] is None
    assert "organizers only" in systems.client("alice").get(url).json()["note"]
    assert systems.client("oscar").get(url).json()["log"] == "SECRET-LOG-LINE"
    # A team member cannot release it; the organizer can, from the console, with a reason after seeing
    # what it discloses; the release is recorded in the audit log and shown, and can be withdrawn.
    release = f"/c/demo/console/submissions/{submission.pk}/release-log/"
    withdraw = f"/c/demo/console/submissions/{submission.pk}/withdraw-log/"
    assert systems.client("alice").post(release, {"reason": "please"}).status_code == 404
    assert systems.client("alice").post(page, {"action": "release_log"}).status_code == 302  # no such action
    assert systems.client("alice").get(url).json()["log"] is None
    confirmation = systems.client("oscar").get(release).content.decode()
    assert "15 characters in 1 lines" in confirmation and "SECRET-LOG-LINE" in confirmation
    assert "this run read sealed data" in confirmation
    systems.client("oscar").post(release, {"reason": ""})  # no reason: nothing released
    assert systems.client("alice").get(url).json()["log"] is None
    systems.client("oscar").post(release, {"reason": "the team asked why its run crashed"})
    submission.refresh_from_db()
    assert submission.log_released_by == systems.oscar and submission.log_released_at is not None
    entry = submission.phase.challenge.audit_entries.get(action="submission.log_release")
    assert entry.reason == "the team asked why its run crashed" and entry.details["log_characters"] == 15
    assert entry.details["read_sealed_data"] is True
    released = systems.client("alice").get(url).json()
    assert released["log"] == "SECRET-LOG-LINE" and "Released to the team by oscar" in released["note"]
    assert systems.client("charlie").get(url).status_code == 404
    systems.client("oscar").post(withdraw, {"reason": "released by mistake"})
    assert systems.client("alice").get(url).json()["log"] is None
    assert submission.phase.challenge.audit_entries.get(action="submission.log_withdraw").reason == "released by mistake"


def test_an_organizers_bad_baseline_archive_creates_neither_team_nor_submission(systems: Cast, tmp_path: Path) -> None:
    bad = tmp_path / "baseline.tar"
    bad.write_bytes(b"not an image")
    with pytest.raises(CommandError, match="baseline.tar: not a tar archive"):
        call_command("system_submit", "demo", "test", str(bad), "--team", "Some baseline")
    assert not Team.objects.filter(name="Some baseline").exists()
    assert not Submission.objects.exists()
    good, image_id = image_archive()
    archive = tmp_path / "good.tar"
    archive.write_bytes(good)
    call_command("system_submit", "demo", "test", str(archive), "--team", "Some baseline")
    submission = Submission.objects.get(team__name="Some baseline", team__kind="baseline")
    assert submission.image_digest == image_id and Path(submission.file.path).read_bytes() == good
    assert submission.sha256 == hashlib.sha256(good).hexdigest()


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("entry", ["run.sh/", "run.py/"])
def test_a_bundle_whose_entry_point_is_a_folder_is_refused(
    systems: Cast, nothing_stored: None, channel: str, entry: str
) -> None:
    content = bundle_of({entry: b"", f"{entry}main.py": b"print(1)"})
    status, message = post(systems, channel, content, kind="code_bundle", name="b.zip")
    assert status == 400, message[:500]
    assert "no run.sh or run.py at the top" in message, message[:2000]


def test_a_zip_directory_too_big_is_refused_from_its_end_record_before_it_is_read(tmp_path: Path) -> None:
    """The end record says how many files and how long the list is: a zip claiming 300,000 files
    (here only the record: nothing else needs to exist) is refused without building one entry."""

    fake = tmp_path / "b.zip"
    fake.write_bytes(b"x" * 100 + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 0xFFFF, 0xFFFF, 20_000_000, 100, 0))
    with pytest.raises(ArchiveError, match="ZIP64"):
        bundle_inspect(fake, max_uncompressed=2**30)
    fake.write_bytes(b"x" * 100 + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 9, 9, 20_000_000, 100, 0))
    with pytest.raises(ArchiveError, match="list of files is over 4 MiB"):
        bundle_inspect(fake, max_uncompressed=2**30)
