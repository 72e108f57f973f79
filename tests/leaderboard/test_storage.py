"""Storage: each team's budget per challenge, the organizers' report, and retention (no engine needed).

Uploads are real (API and web); runs are not (eager mode leaves systems queued), so a run's end
is written to the row the way the worker's services would leave it.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone
from pytest_django import DjangoCaptureOnCommitCallbacks, Settings

from leaderboard.accounts.models import Team
from leaderboard.challenges.spec import SpecError
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import BoardEntry, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.storage import (
    storage_report,
    storage_retain,
    storage_retention_plan,
    team_storage_usage,
)
from tests.builders.cast import SPEC, Cast, gold_predictions, upload
from tests.builders.storage import finish, post_id, weights
from tests.builders.system_uploads import CHANNELS, post, stored_files
from tests.builders.systems import TEST_LIMITS, system_phases

KIB = 1024


def disk_bytes() -> int:
    """What private storage holds, as ``du -b`` counts files: the truth the report must match."""
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.fixture
def systems(cast: Cast) -> Cast:
    """Systems accepted in both phases; a budget of 1 MiB per team."""
    system_phases(cast)
    cast.challenge.system_settings = {"limits": TEST_LIMITS, "storage_mb_per_team": 1}
    cast.challenge.save()
    return cast


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_upload_past_the_teams_storage_budget_is_refused_with_413_and_nothing_stored(
    systems: Cast, channel: str
) -> None:
    status, _ = post(systems, channel, weights(600 * KIB), kind="code_bundle", name="first.zip")
    assert status in (201, 302)
    before_rows, before_files = Submission.objects.count(), stored_files()
    status, message = post(systems, channel, weights(600 * KIB), kind="code_bundle", name="second.zip")
    assert status == 413, message[:500]
    assert "storage budget: team Alpha's stored uploads take 600.2 KiB of its 1.0 MiB in this challenge" in message
    assert "would exceed it" in message and "ask them, or upload a smaller file" in message
    assert Submission.objects.count() == before_rows and stored_files() == before_files, "a refused upload stayed"
    # The budget is the team's: Charlie's team still has its own.
    status, _ = post(systems, channel, weights(600 * KIB), kind="code_bundle", name="theirs.zip", who="charlie")
    assert status in (201, 302)


def test_prediction_files_count_against_the_same_budget(systems: Cast, settings: Settings) -> None:
    settings.MAX_PREDICTION_UPLOAD_BYTES = 4 * 1024 * 1024
    post(systems, "api", weights(900 * KIB), kind="code_bundle", name="big.zip")
    predictions = json.dumps(gold_predictions("dev")).encode()
    padded = predictions[:-1] + b"," + json.dumps({"padding": "x" * 200 * KIB}).encode()[1:]
    response = systems.client("alice").post(
        "/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": upload(padded, "preds.json")})
    assert response.status_code == 413, response.content[:300]
    assert "storage budget" in response.json()["detail"]
    # A small one fits in what is left.
    response = systems.client("alice").post(
        "/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": upload(predictions, "preds.json")})
    assert response.status_code == 201, response.content[:300]


def test_the_budget_is_stated_on_the_challenge_and_upload_pages(systems: Cast) -> None:
    post(systems, "api", weights(300 * KIB), kind="code_bundle", name="b.zip")
    page = systems.client(None).get("/c/demo/").content.decode()
    assert 'id="storage-budget"' in page and "each team may keep 1.0 MiB of uploads" in page
    submit = systems.client("alice").get("/c/demo/submit/system/").content.decode()
    assert "stored uploads take <strong>300.2 KiB</strong>" in submit and "of its 1.0 MiB" in submit


def test_a_spec_sets_the_budget_and_a_bad_value_is_refused(cast: Cast, tmp_path: Path) -> None:
    spec = tmp_path / "demo.yaml"
    spec.write_text(SPEC + "systems: {storage_mb_per_team: 250}\n")
    challenge = challenge_load(spec_path=spec)
    assert challenge.system_settings["storage_mb_per_team"] == 250
    assert team_storage_usage(team=Team.objects.get(pk=cast.alpha.pk)).budget_bytes == 250 * 2**20
    spec.write_text(SPEC + "systems: {storage_mb_per_team: -1}\n")
    with pytest.raises(SpecError, match="storage_mb_per_team must be a positive whole number of MiB"):
        challenge_load(spec_path=spec)


def report_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("storage_report", *args, "--json", "--no-engine", stdout=out)
    report: dict = json.loads(out.getvalue())
    return report


def retain_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("storage_retain", *args, "--json", stdout=out)
    report: dict = json.loads(out.getvalue())
    return report


def test_the_report_accounts_for_every_byte_on_disk_by_team_and_kind(systems: Cast) -> None:
    systems.challenge.system_settings["storage_mb_per_team"] = 50
    systems.challenge.save()
    mine = [Submission.objects.get(pk=post_id(systems, weights(n * KIB), "alice")) for n in (10, 20)]
    theirs = post_id(systems, weights(5 * KIB), "charlie")
    post(systems, "api", b"not a zip", kind="code_bundle", name="rejected.zip")  # refused: stores nothing
    report = report_json()
    assert report["total_bytes"] == disk_bytes()
    lines = {(x["challenge"], x["owner"], x["kind"]): x for x in report["lines"]}
    alpha = lines[("demo", "Alpha", "code_bundle")]
    assert alpha["files"] == 2 and alpha["bytes"] == sum(Path(s.file.path).stat().st_size for s in mine)
    assert lines[("demo", "Charlie's", "code_bundle")]["bytes"] == Submission.objects.get(pk=theirs).size_bytes
    assert lines[("demo", "organizers", "gold and training data")]["files"] >= 3
    teams = {t["team"]: t for t in report["teams"]}
    assert teams["Alpha"]["used_bytes"] == alpha["bytes"] and teams["Alpha"]["budget_bytes"] == 50 * 2**20
    # One challenge: only its own files, and still what the disk holds of them.
    scoped = report_json("demo")
    assert all(x["challenge"] == "demo" for x in scoped["lines"])
    assert scoped["total_bytes"] == sum(x["bytes"] for x in report["lines"] if x["challenge"] == "demo")


def test_retention_frees_exactly_what_its_dry_run_said_and_keeps_what_is_needed(
    systems: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    systems.challenge.system_settings["storage_mb_per_team"] = 50
    systems.challenge.save()
    # Alpha, dev: an old best run (its board row), old others, and its two newest.
    best, old_a, old_b, new_a, new_b = (post_id(systems, weights(n * KIB), "alice") for n in (11, 12, 13, 14, 15))
    finish(best, score=90, days_ago=60)
    finish(old_a, score=10, days_ago=50)
    finish(old_b, status=Status.FAILED, days_ago=45)
    finish(new_a, score=20, days_ago=40)
    finish(new_b, score=30, days_ago=40)
    # An old submission still queued (its run needs the file), and Charlie's old, selected one.
    queued = post_id(systems, weights(3 * KIB), "alice", phase="test")
    Submission.objects.filter(pk=queued).update(created_at=timezone.now() - dt.timedelta(days=90))
    selected = post_id(systems, weights(4 * KIB), "charlie")
    finish(selected, score=5, days_ago=70)
    Submission.objects.filter(pk=selected).update(is_selected=True)
    # A file no row names (a crash between storing and committing), old enough to go.
    orphan = Path(settings.PRIVATE_STORAGE_ROOT) / "submissions" / "orphan-upload.zip"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(os.urandom(7 * KIB))
    long_ago = (timezone.now() - dt.timedelta(days=40)).timestamp()
    os.utime(orphan, (long_ago, long_ago))

    planned = retain_json("--older-than", "30", "--keep-newest", "2", "--dry-run")
    names = {item["name"]: item for item in planned["free"]}
    expected = {Submission.objects.get(pk=pk).file.name for pk in (old_a, old_b)} | {"submissions/orphan-upload.zip"}
    # Orphans from earlier tests on this storage are newer than a day: never planned.
    assert set(names) == expected
    assert planned["free_bytes"] == sum(item["size_bytes"] for item in planned["free"])
    assert planned["kept"] == {
        "queued, running or being scored (the run needs its file)": 1,
        "the team's board submission, or the one it selected": 2,
        "among the team's newest in its phase": 2,
    }
    before = disk_bytes()
    assert disk_bytes() == before, "a dry run deleted something"
    assert report_json()["total_bytes"] == before

    with django_capture_on_commit_callbacks(execute=True):  # files go once the rows are committed
        done = retain_json("--older-than", "30", "--keep-newest", "2")
    assert {item["name"] for item in done["freed"]} == set(names) and not done["skipped"]
    assert done["freed_bytes"] == planned["free_bytes"] == before - disk_bytes()
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    assert not any((root / name).exists() for name in names)
    for pk in (old_a, old_b):
        submission = Submission.objects.get(pk=pk)
        assert not submission.file
        assert "deleted by the organizers' storage retention" in submission.log_notes[-1]["text"]
    for pk in (best, new_a, new_b, queued, selected):
        assert Path(Submission.objects.get(pk=pk).file.path).exists()
    assert BoardEntry.objects.filter(submission=best).exists()
    # The freed bytes no longer count against the team's budget, and the report still adds up.
    assert team_storage_usage(team=systems.alpha).used_bytes == sum(
        s.size_bytes for s in Submission.objects.filter(team=systems.alpha).exclude(file=""))
    assert storage_report().total_bytes == disk_bytes()
    # The team reads on the submission's page what happened to its file.
    page = systems.client("alice").get(f"/c/demo/submissions/{old_a}/").content.decode()
    assert 'id="file-freed"' in page and "deleted by the organizers&#x27; storage retention" in page
    # A second run finds nothing more to free.
    assert retain_json("--older-than", "30", "--keep-newest", "2")["free"] == []


def test_retention_skips_a_submission_that_became_the_board_row_after_the_plan(
    systems: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    systems.challenge.system_settings["storage_mb_per_team"] = 50
    systems.challenge.save()
    first, second = (post_id(systems, weights(2 * KIB), "alice") for _ in range(2))
    finish(first, score=10, days_ago=40)
    finish(second, score=20, days_ago=35)
    plan = storage_retention_plan(older_than_days=30, keep_newest=0)
    assert [item.submission for item in plan.free] == [first]
    Submission.objects.filter(pk=second).update(primary_score=1)  # e.g. rescored: first is now the best
    board_entry_refresh(team=systems.alpha, phase=systems.dev)
    with django_capture_on_commit_callbacks(execute=True):
        result = storage_retain(plan=plan)
    assert [item.submission for item in result.skipped] == [first] and not result.freed
    assert Path(Submission.objects.get(pk=first).file.path).exists()
