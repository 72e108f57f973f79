"""End to end: NAQs built from SQuAD (``naq-build``, levels from ``naq-vectors``) make a squad2 challenge
whose scores carry the per-level breakdown, balanced accuracy included (Nakanishi et al. 2018)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Phase
from leaderboard.challenges.suites.squad2 import Squad2Suite
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from leaderboard.submissions.reload import challenge_load
from scoring.cli import main
from scoring.unanswerable import evaluate_unanswerable
from tests.builders.cast import upload
from tests.builders.shared import shared_path
from tests.builders.suites import SPEC, squad_qas


def _predictions(document: dict[str, Any]) -> dict[str, str]:
    """Every third answerable question abstained on, every fourth NAQ answered with its plausible answer."""
    out: dict[str, str] = {}
    for n, qa in enumerate(squad_qas(document)):
        if qa["is_impossible"]:
            out[qa["id"]] = qa["plausible_answers"][0]["text"] if n % 4 == 0 else ""
        else:
            out[qa["id"]] = "" if n % 3 == 0 else qa["answers"][0]["text"]
    return out


@pytest.mark.shared
@pytest.mark.django_db(transaction=True)
def test_naqs_built_from_squad_load_into_a_challenge_and_score_per_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    dev = json.loads(shared_path("data", "squad-v1.1", "dev-v1.1.json").read_text(encoding="utf-8"))
    source = tmp_path / "squad-slice.json"
    source.write_text(json.dumps({"version": dev["version"], "data": dev["data"][:3]}), encoding="utf-8")
    vectors, gold = tmp_path / "vectors.txt", tmp_path / "naq-dev.json"
    assert main(["naq-vectors", str(source), str(vectors), "--dim", "50"]) == 0
    assert main(["naq-build", str(source), str(gold), "--vectors", str(vectors)]) == 0
    capsys.readouterr()
    document = json.loads(gold.read_text(encoding="utf-8"))
    labels = {qa["level"] for qa in squad_qas(document) if qa["is_impossible"]}
    assert len(labels) >= 2

    # What teams download says nothing of answerability: no level (only NAQs have one), no source id.
    inputs = json.loads(Squad2Suite().inspect_gold(gold.read_bytes(), filename="naq-dev.json").inputs)
    assert {key for qa in squad_qas(inputs) for key in qa} == {"id", "question"}

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(key="squad2", gold=gold.name), encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    alice = User.objects.create_user("alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    predictions = _predictions(document)
    submission = submission_create_predictions(
        team=team, phase=Phase.objects.get(challenge=challenge, slug="dev"), user=alice, upload=upload(predictions),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason

    scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__slug="main")}
    library = evaluate_unanswerable(document, predictions).metrics["levels"]
    assert set(library) == labels
    for label, values in library.items():
        name = label.removeprefix("LEVEL")
        assert scores[f"level_{name}_detection_acc"] == pytest.approx(values["unanswerable_detection_accuracy"])
        assert scores[f"level_{name}_balanced_detection_acc"] == pytest.approx(values["balanced_detection_accuracy"])
        assert values["balanced_total"] == 2 * values["unanswerable_total"]
        # Answerable questions are abstained on a third of the time: the balanced figure sits below recall.
        assert values["balanced_detection_accuracy"] < values["unanswerable_detection_accuracy"]
