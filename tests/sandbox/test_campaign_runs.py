"""Evaluation campaigns with real containers: archived systems of a finished phase run again on a new
sealed dataset, through the whole path (the API's upload, the queue, compute workers without database
or gold, the engine, scoring outside), and the original boards stay byte for byte as they were.

- MRQA: a Docker image (the baseline) and a code bundle of two teams, and an older bundle whose
  archive storage retention deleted, re-run on DuoRC.SelfRC, a domain the test phase never had.
- QuAC: an interactive system (it answers turn by turn) re-run in the interactive protocol on a
  re-annotated copy of the test dialogs; being deterministic, it scores there what it scored before.
"""

from __future__ import annotations

import difflib
import re
import time
from pathlib import Path

import docker
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Phase
from leaderboard.submissions.campaigns import campaign_start
from leaderboard.submissions.models import CampaignRun, RunAttempt, Score, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.storage import storage_retain, storage_retention_plan
from tests.builders.campaigns import mrqa_campaign_spec, quac_campaign_spec
from tests.builders.dialogs import interactive_bundle
from tests.builders.systems import BASELINE_IMAGE, SYSTEMS, Platform, saved_image, script_bundle

pytestmark = pytest.mark.django_db(transaction=True)


CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


def read_boards(slug: str, phases: list[str], organizer: Client) -> dict[str, bytes]:
    """Every page and export of the phases' boards, public and organizer view, once the boards'
    significance (computed in the background after a board changes) is in: a board read while it is
    "being computed" would differ from itself a minute later, campaign or not.  The organizer's pages
    carry a CSRF token of their own per answer: left out."""
    deadline = time.monotonic() + 120
    while True:
        out = {}
        for phase in phases:
            for view, client in (("", Client()), ("organizer/", organizer)):
                for part in ("", "export.json", "export.csv"):
                    response = client.get(f"/c/{slug}/board/{phase}/{view}{part}")
                    assert response.status_code == 200, (phase, view, part)
                    out[f"{phase}/{view}{part}"] = CSRF.sub(b"", response.content)
        if not any(b"being computed" in body for body in out.values()) or time.monotonic() > deadline:
            return out
        time.sleep(1)


def changes(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """What differs, line by line, for the failure message ("" when nothing does)."""
    out = []
    for key in before:
        if before[key] != after[key]:
            lines = difflib.unified_diff(before[key].decode().splitlines(), after[key].decode().splitlines(),
                                         lineterm="", n=0)
            out += [key, *list(lines)[2:12]]
    return "\n".join(out)


def finished(platform: Platform, pk: int) -> Submission:
    submission = platform.wait_final(pk, timeout=240)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"
    return submission


def test_a_campaign_reruns_an_image_and_a_bundle_on_new_sealed_data_and_reports_a_pruned_archive(
    platform: Platform, engine: docker.DockerClient, tmp_path: Path
) -> None:
    cast = platform.cast
    challenge_load(spec_path=mrqa_campaign_spec(tmp_path))
    old_bundle = finished(platform, platform.submit(script_bundle(SYSTEMS / "trivial" / "run.py"), name="old.zip"))
    archive = saved_image(engine, BASELINE_IMAGE, tmp_path / "baseline.tar")
    image = finished(platform, platform.submit(archive.read_bytes(), kind="docker_image", name="baseline.tar"))
    charlies = finished(platform, platform.submit(script_bundle(SYSTEMS / "trivial" / "run.py"), who="charlie"))
    # Alpha's old bundle is not on the board (its image ranks higher): retention may delete its archive.
    assert image.primary_score is not None and old_bundle.primary_score is not None
    assert image.primary_score > old_bundle.primary_score
    freed = storage_retain(plan=storage_retention_plan(older_than_days=0, keep_newest=0, challenge=cast.challenge))
    assert [item.submission for item in freed.freed] == [old_bundle.pk]

    organizer = cast.client("oscar")
    before = read_boards("demo", ["dev", "test"], organizer)
    challenge_load(spec_path=mrqa_campaign_spec(tmp_path, campaign={"of": "test", "systems": "all"}))
    fresh = Phase.objects.get(challenge=cast.challenge, slug="fresh")
    made = campaign_start(phase=fresh, by=cast.oscar, reason="a domain nobody saw")
    by_source = {r.source_id: r for r in made}
    assert set(by_source) == {old_bundle.pk, image.pk, charlies.pk}
    pruned = by_source[old_bundle.pk]
    assert pruned.run is None and "deleted by storage retention" in pruned.problem

    runs = {pk: finished(platform, r.run.pk) for pk, r in by_source.items() if r.run is not None}
    for source_pk, run in runs.items():
        source = Submission.objects.get(pk=source_pk)
        # Provenance: what ran is what ran before, by its digest.
        assert (run.kind, run.sha256, run.image_digest, run.file.name) == (
            source.kind, source.sha256, source.image_digest, source.file.name)
        assert RunAttempt.objects.get(submission=run, history=None).end == "scored"
        datasets = set(Score.objects.filter(submission=run, dataset__isnull=False)
                       .values_list("dataset__slug", flat=True))
        assert datasets == {"duorc-selfrc"}, "a campaign run was scored on other data"
        # Sealed: the system read it under its alias; the log names no dataset.
        assert "DuoRC" not in run.log and "duorc" not in run.log
    assert runs[image.pk].image_digest == engine.images.get(BASELINE_IMAGE).id

    assert not (changed := changes(before, read_boards("demo", ["dev", "test"], organizer))), changed
    board = organizer.get("/c/demo/board/fresh/organizer/export.json").json()
    f1 = {row["team"]: row["DuoRC.SelfRC F1"] for row in board["rows"]}
    assert set(f1) == {"Alpha", "Charlie's"} and all(v is not None for v in f1.values()), board["rows"]
    assert f1["Alpha"] == pytest.approx(runs[image.pk].primary_score)
    public = Client().get("/c/demo/board/fresh/export.json").json()
    assert not any("DuoRC" in key for row in public["rows"] for key in row), "a sealed name on the public board"
    page = Client().get("/c/demo/board/fresh/").content.decode()
    assert "2 systems run again; not run again: 1 (its upload was deleted by storage retention" in page


COPYCAT = r"""
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    history = request.get("history") or []
    answer = history[-1]["answer"] if history else "CANNOTANSWER"
    print(json.dumps({"id": request["id"], "answer": answer, "yesno": "x", "followup": "y"}), flush=True)
"""


def test_a_campaign_reruns_an_interactive_system_turn_by_turn(platform: Platform, tmp_path: Path) -> None:
    modes = ["gold", "own"]
    phase = challenge_load(spec_path=quac_campaign_spec(tmp_path, modes=modes, campaign=False)).phases.get()
    team_create(challenge=phase.challenge, owner=platform.cast.alice, name="Talkers")
    response = platform.cast.client("alice").post(
        f"/api/v1/challenges/{phase.challenge.slug}/systems/",
        {"phase": "test", "kind": "code_bundle",
         "file": SimpleUploadedFile("system.zip", interactive_bundle(COPYCAT).read())},
    )
    assert response.status_code == 201, response.content
    source = finished(platform, int(response.json()["id"]))
    organizer = platform.cast.client("oscar")
    phase.challenge.staff.add(platform.cast.oscar)
    before = read_boards("talk", ["test"], organizer)

    fresh = challenge_load(spec_path=quac_campaign_spec(tmp_path, modes=modes, campaign=True)).phases.get(slug="fresh")
    [record] = campaign_start(phase=fresh, by=platform.cast.oscar)
    assert record.run is not None
    run = finished(platform, record.run.pk)
    assert CampaignRun.objects.get(run=run).source == source
    # Turn by turn, in both modes, on the campaign's data; the same deterministic system on the same
    # dialogs scores what it scored before.
    notes = [note["text"] for note in run.log_notes]
    assert notes[0].startswith("gold history: 7 of 7 turns answered") and notes[1].startswith("own history"), notes
    scores = {s.metric: s.value for s in Score.objects.filter(submission=run, dataset__isnull=True)}
    before_scores = {s.metric: s.value for s in Score.objects.filter(submission=source, dataset__isnull=True)}
    assert scores["f1"] == pytest.approx(before_scores["f1"]) and scores["own_f1"] == pytest.approx(
        before_scores["own_f1"])
    scored = Score.objects.filter(submission=run, dataset__isnull=False).values_list("dataset__slug", flat=True)
    assert set(scored) == {"quac-again"}
    assert not (changed := changes(before, read_boards("talk", ["test"], organizer))), changed
