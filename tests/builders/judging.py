"""Worlds for the judging tests.

The MRC2018 world: the demo challenge (DuReader search, 50 dev questions: 35 DESCRIPTION, 10
ENTITY, 5 YES_NO) loaded from ``deploy/demo/mrc2018-demo.yaml``, three teams with one prediction
file each on the dev phase:

- Alpha ("gold"): each question's first reference, with its yes/no label;
- Beta ("half"): the first half of it (another answer everywhere);
- Gamma ("mixed"): Alpha's answer on even-numbered questions, Beta's on odd ones, so every question
  has exactly two distinct answers and Gamma's is always merged with another system's.

The organizer is ``organizer``; ``jane`` and ``jim`` have accounts and no team (judges to be);
``dave`` has an account and no role.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model
from django.test import Client

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, DatasetFile, Phase
from leaderboard.judging.models import Candidate, Judge, Round
from leaderboard.judging.services import judge_invite, judgment_give, round_create, round_open
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import upload

REPO = Path(__file__).resolve().parents[2]
MRC_SPEC = REPO / "deploy" / "demo" / "mrc2018-demo.yaml"
DUREADER_DEV = REPO / "deploy" / "demo" / "data" / "dureader" / "search.dev.jsonl"


def dureader_refs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DUREADER_DEV.open(encoding="utf-8")]


def mrc_predictions(kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, ref in enumerate(dureader_refs()):
        first = (ref["answers"] or [""])[0]
        half = first[: max(1, len(first) // 2)] if first else "不知道"
        text = {"gold": first, "half": half, "mixed": first if i % 2 == 0 else half}[kind]
        out[str(ref["question_id"])] = {"answers": [text], "yesno_answers": ref["yesno_answers"][:1]}
    return out


@dataclass
class MrcWorld:
    challenge: Challenge
    dev: Phase
    organizer: User
    alice: User
    bea: User
    gus: User
    jane: User
    jim: User
    dave: User
    teams: dict[str, Team] = field(default_factory=dict)
    systems: dict[str, Submission] = field(default_factory=dict)  # by kind: gold, half, mixed

    def client(self, who: str | None) -> Client:
        client = Client()
        if who is not None:
            client.force_login(getattr(self, who))
        return client

    @property
    def system_ids(self) -> list[int]:
        return [self.systems[k].pk for k in ("gold", "half", "mixed")]


# Submission ids start here, so that a page showing one would show a number found nowhere else.
SUBMISSION_IDS_FROM = 73_100


def ids_start_at(model: type[Model], start: int) -> None:
    """The next automatic id of ``model``'s table is above ``start`` (PostgreSQL or SQLite)."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), GREATEST(%s, "
                           "(SELECT COALESCE(MAX(id), 1) FROM " + connection.ops.quote_name(table) + ")))",
                           [table, start])
        else:
            cursor.execute("UPDATE sqlite_sequence SET seq = MAX(seq, %s) WHERE name = %s", [start, table])
            if cursor.rowcount == 0:
                cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, start])


def mrc_world_build() -> MrcWorld:
    """Call with the commit callbacks executed (the uploads are scored after commit)."""
    ids_start_at(Submission, SUBMISSION_IDS_FROM)
    users = {name: User.objects.create_user(name, email=f"{name}@example.org")
             for name in ("organizer", "alice", "bea", "gus", "jane", "jim", "dave")}
    challenge = challenge_load(spec_path=MRC_SPEC)
    dev = challenge.phases.get(slug="dev")
    world = MrcWorld(challenge, dev, organizer=users["organizer"], alice=users["alice"], bea=users["bea"],
                     gus=users["gus"], jane=users["jane"], jim=users["jim"], dave=users["dave"])
    for kind, (owner, name) in {"gold": ("alice", "Alpha"), "half": ("bea", "Beta"),
                                "mixed": ("gus", "Gamma")}.items():
        team = team_create(challenge=challenge, owner=users[owner], name=name)
        world.teams[kind] = team
        world.systems[kind] = submission_create_predictions(
            team=team, phase=dev, user=users[owner], upload=upload(mrc_predictions(kind)),
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    return world


def mrc_world_check(world: MrcWorld) -> None:
    for submission in world.systems.values():
        submission.refresh_from_db()
        assert submission.status == Status.FINISHED, submission.failure_reason


def judged_round(world: MrcWorld) -> tuple[Round, Judge, Judge]:
    """Every candidate of 20 questions judged by jane and jim, who mostly agree."""
    jane = judge_invite(challenge=world.challenge, user=world.jane, by=world.organizer)
    jim = judge_invite(challenge=world.challenge, user=world.jim, by=world.organizer)
    round = round_open(round=round_create(phase=world.dev, by=world.organizer, questions=20,
                                          systems=world.system_ids, seed=11, stratify_by="question_type"),
                       by=world.organizer)
    rng = np.random.default_rng(5)
    for candidate in Candidate.objects.filter(item__round=round).order_by("item__position", "position"):
        first = int(rng.integers(1, 6))
        second = int(min(5, max(1, first + rng.choice([-1, 0, 0, 0, 1, 2]))))
        judgment_give(judge=jane, candidate=candidate, score=first)
        judgment_give(judge=jim, candidate=candidate, score=second)
    return round, jane, jim


def gold_path(world: MrcWorld) -> str:
    return DatasetFile.objects.get(dataset__challenge=world.challenge, portion="dev").gold.path
