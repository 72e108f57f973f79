"""Sealed datasets are listed by alias, after the others, wherever anyone but the organizers looks
(issue 15, §3): in the spec's order (here alphabetical by real name, as organizers write them),
the position of "Hidden-A" and "Hidden-B" would match them to CoQA and DROP."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from django.contrib.auth.models import AnonymousUser, User
from django.test import Client

from leaderboard.challenges.models import Challenge, Dataset, Phase
from leaderboard.challenges.selectors import dataset_label, datasets_ordered
from leaderboard.rankings.selectors import ORGANIZER, board_build
from leaderboard.submissions.models import Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.selectors import system_run_plan
from tests.builders.responses import streamed
from tests.builders.staged import SPEC, WALK_SPEC, system_row


def _challenge(tmp_path: Path) -> Challenge:
    User.objects.create_user("oscar")
    # CoQA gets the later alias: spec order and alias order disagree.
    text = SPEC.format(coqa="", drop="", sealing="").replace("Hidden-A", "Hidden-Z")
    spec = tmp_path / "order.yaml"
    spec.write_text(text, encoding="utf-8")
    return challenge_load(spec_path=spec)


def test_every_public_listing_puts_sealed_datasets_last_by_alias(db: None, tmp_path: Path) -> None:
    challenge = _challenge(tmp_path)
    phase: Phase = challenge.phases.get(slug="test")
    system_row(phase, "alpha", {"xquad-en": 80.0, "coqa": 60.0, "drop": 40.0})
    public = ["XQuAD-en", "Hidden-B", "Hidden-Z"]
    board = board_build(phase=phase, viewer=AnonymousUser())
    assert list(dict.fromkeys(c.group for c in board.columns if c.group in {*public, "CoQA", "DROP"})) == public
    detail = Client().get("/api/v1/challenges/staged/").json()
    assert [d["name"] for d in detail["datasets"]] == public
    page = Client().get("/c/staged/").content.decode()
    assert page.index("Hidden-B") < page.index("Hidden-Z")
    plan = system_run_plan(submission=Submission.objects.get())
    assert [d.label for d in plan.datasets] == public
    # The organizers' view keeps their own order, with the real names.
    organizer = board_build(phase=phase, viewer=User.objects.get(username="oscar"), view=ORGANIZER)
    assert list(dict.fromkeys(c.group for c in organizer.columns if c.group in {"XQuAD-en", "CoQA", "DROP"})) == [
        "XQuAD-en", "CoQA", "DROP"]
    assert Dataset.objects.get(slug="coqa").sealed_alias == "Hidden-Z"


REAL = ("CoQA", "DROP", "Quoref")


def _in_order(text: str, labels: list[str], where: str) -> None:
    """Every label is in ``text``, and each first appears after the one before it."""
    positions = [text.find(label) for label in labels]
    assert -1 not in positions, (where, dict(zip(labels, positions)))
    assert positions == sorted(positions), (where, dict(zip(labels, positions)))


def test_every_team_surface_lists_three_sealed_datasets_in_the_one_order(db: None, tmp_path: Path) -> None:
    User.objects.create_user("oscar")
    spec = tmp_path / "walk.yaml"
    spec.write_text(WALK_SPEC, encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    test = challenge.phases.get(slug="test")
    system_row(test, "alpha", {"xquad-en": 80.0, "coqa": 60.0, "drop": 40.0, "quoref": 50.0,
                               "adversarialqa": 30.0})
    public = [dataset_label(ds, reveal_sealed=False)
              for ds in datasets_ordered(Dataset.objects.filter(challenge=challenge), reveal_sealed=False)]
    # The one function's order: the others as the organizer ordered them, then the sealed by alias.
    assert public == ["XQuAD-en", "AdversarialQA", "Hidden-B", "Hidden-M", "Hidden-Z"]
    assert [ds.name for ds in datasets_ordered(Dataset.objects.filter(challenge=challenge), reveal_sealed=True)] == [
        "XQuAD-en", "CoQA", "DROP", "Quoref", "AdversarialQA"]
    submission = Submission.objects.get()
    team = Client()
    team.force_login(User.objects.get(username="alpha"))
    surfaces = {
        "board page": "/c/walk/board/test/",
        "board CSV": "/c/walk/board/test/export.csv",
        "board JSON": "/c/walk/board/test/export.json",
        "API leaderboard": "/api/v1/challenges/walk/phases/test/leaderboard/",
        "challenge page": "/c/walk/",
        "challenge API": "/api/v1/challenges/walk/",
        "submission page": f"/c/walk/submissions/{submission.pk}/",
        "submission API": f"/api/v1/submissions/{submission.pk}/",
    }
    for where, url in surfaces.items():
        response = team.get(url)
        assert response.status_code == 200, (where, response.status_code)
        text = response.content.decode()
        _in_order(text, public, where)
        assert not any(name in text for name in REAL), where
    # The data page and its API: the sealed datasets listed (their test files run on systems only).
    for where, url in {"data page": "/c/walk/data/", "data API": "/api/v1/challenges/walk/data/"}.items():
        text = team.get(url).content.decode()
        _in_order(text, ["XQuAD-en", "AdversarialQA"], where)
        _in_order(text, [label for label in public if label.startswith("Hidden-") and label in text], where)
        assert not any(name in text for name in REAL), where
    # The starting kit: every member, the scoring library's wheel aside (it names the formats it scores,
    # the same bytes for every challenge: tests/leaderboard/test_kit_sealed_names.py checks inside it).
    with zipfile.ZipFile(io.BytesIO(streamed(team.get("/c/walk/data/starting-kit.zip")))) as kit:
        text = "\n".join(kit.read(n).decode("utf-8", "replace") for n in kit.namelist()
                         if not n.endswith((".gz", ".whl")))
        manifest = json.loads(kit.read("walk-starting-kit/dev/manifest.json"))
    assert [d["name"] for d in manifest["datasets"]] == ["XQuAD-en", "AdversarialQA"]
    assert not any(name in text for name in (*REAL, "Hidden-")), "starting kit"
    # The run manifest a system reads on the test portion.
    plan = system_run_plan(submission=submission)
    assert [d.label for d in plan.datasets] == public
    assert [d["name"] for d in plan.manifest()["datasets"]] == public
