"""Sealed datasets are listed by alias, after the others, wherever anyone but the organizers looks
(issue 15, §3): in the spec's order (here alphabetical by real name, as organizers write them),
the position of "Hidden-A" and "Hidden-B" would match them to CoQA and DROP."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import AnonymousUser, User
from django.test import Client

from leaderboard.challenges.models import Challenge, Dataset, Phase
from leaderboard.challenges.services import challenge_load
from leaderboard.rankings.selectors import ORGANIZER, board_build
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import system_run_plan
from tests.leaderboard.test_staged_reveal import SPEC, system_row


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
