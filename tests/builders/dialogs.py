"""Conversational challenges and interactive runs, claimed through the internal API."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.models import Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.worker_api import worker_token_create
from tests.builders.suites import quac_gold


def conversational_challenge(tmp_path: Path, phases: dict[str, list[str] | None],
                             gold: dict[str, Any] | None = None) -> Challenge:
    """A QuAC challenge with a test phase per entry of ``phases``: its slug and modes (None: batch)."""
    path = tmp_path / "val_v0.2.json"
    path.write_text(json.dumps(gold or quac_gold()))
    spec = {
        "slug": "talk", "title": "Talk", "metric_suite": "quac",
        "phases": [{"slug": slug, "name": slug.capitalize(), "kind": "test", "opens_at": "2020-01-01T00:00:00Z",
                    "closes_at": "2099-01-01T00:00:00Z", "allowed_kinds": ["docker_image", "code_bundle"],
                    **({"protocol": modes} if modes else {})} for slug, modes in phases.items()],
        "datasets": [{"slug": "quac", "name": "QuAC", "split": "II", "files": {"test": str(path)}}],
    }
    (tmp_path / "talk.yaml").write_text(yaml.safe_dump(spec))
    return challenge_load(spec_path=tmp_path / "talk.yaml")


def conversational_phase(tmp_path: Path, modes: list[str], gold: dict[str, Any] | None = None) -> Phase:
    """A QuAC challenge whose test phase runs systems in ``modes``."""
    return conversational_challenge(tmp_path, {"test": modes}, gold).phases.get()


def interactive_bundle(script: str = "print('hi')\n", declaration: str | None = '{"protocol": "interactive"}'
                       ) -> SimpleUploadedFile:
    """A code bundle that declares (with readerboard.json) that it answers turn by turn."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run.py", script)
        if declaration is not None:
            archive.writestr("readerboard.json", declaration)
    return SimpleUploadedFile("system.zip", buffer.getvalue())


def dialog_run_claim(tmp_path: Path) -> tuple[Client, str, Submission]:
    """A claimed run on a phase in the gold, own and adversarial modes: its worker's client and URL."""
    phase = conversational_phase(tmp_path, ["gold", "own", "adversarial"])
    user = User.objects.create_user("alice")
    team = team_create(challenge=phase.challenge, owner=user, name="Alpha")
    submission = submission_create_system(team=team, phase=phase, user=user, upload=interactive_bundle(),
                                          kind="code_bundle")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {worker_token_create(name='host-a')}")
    ticket = client.post("/internal/v1/runs/claim/", {"queue": "cpu", "hint": 0, "instance": "h:1"},
                         content_type="application/json").json()["ticket"]
    assert ticket["submission_id"] == submission.pk
    return client, f"/internal/v1/runs/{submission.pk}/{ticket['attempt']}/dialogs/", submission


def post(client: Client, url: str, **body: Any) -> Any:
    return client.post(url, body, content_type="application/json")


def answer(text: str) -> dict[str, str]:
    return {"answer": text, "yesno": "x", "followup": "y"}
