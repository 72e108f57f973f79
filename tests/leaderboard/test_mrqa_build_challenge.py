"""End to end: SQuAD turned into MRQA format (``mrqa-build``), split by context into dev and test
(``mrqa-partition``), loads into an MRQA challenge and is scored (the MRQA 2019 overview, section 3)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import DatasetFile, Phase
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from leaderboard.submissions.reload import challenge_load
from scoring.cli import main
from tests.builders.cast import upload
from tests.builders.shared import shared_path

SPEC = """
slug: built
title: Built from SQuAD
metric_suite: mrqa
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}}
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}}
datasets:
  - {{slug: squad, name: SQuAD, split: II, files: {{dev: {dev}, test: {test}}}}}
"""


def contexts(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh][1:]  # after the header


@pytest.mark.shared
@pytest.mark.django_db(transaction=True)
def test_squad_built_and_partitioned_by_context_loads_into_a_challenge_and_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    squad = json.loads(shared_path("data", "squad-v1.1", "dev-v1.1.json").read_text(encoding="utf-8"))
    source = tmp_path / "squad-slice.json"
    source.write_text(json.dumps({"version": squad["version"], "data": squad["data"][:4]}), encoding="utf-8")
    built, dev, test = tmp_path / "SQuAD.jsonl.gz", tmp_path / "dev.jsonl.gz", tmp_path / "test.jsonl.gz"
    assert main(["mrqa-build", str(source), str(built), "--dataset", "SQuAD"]) == 0
    assert main(["mrqa-partition", str(built), "--dev-out", str(dev), "--test-out", str(test),
                 "--test-questions", "150", "--seed", "3"]) == 0
    capsys.readouterr()
    dev_contexts, test_contexts = contexts(dev), contexts(test)
    # No context in both portions, and the test portion near its target.
    assert not {c["context"] for c in dev_contexts} & {c["context"] for c in test_contexts}
    n_test = sum(len(c["qas"]) for c in test_contexts)
    assert 100 <= n_test <= 150

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(dev=dev, test=test), encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    files = {f.portion: f for f in DatasetFile.objects.filter(dataset__challenge=challenge)}
    assert files["test"].n_questions == n_test
    assert files["dev"].n_questions == sum(len(c["qas"]) for c in dev_contexts)

    alice = User.objects.create_user("alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    # The gold's first answer to every dev question: the platform's MRQA scorer gives 100.
    predictions = {qa["qid"]: qa["answers"][0] for c in dev_contexts for qa in c["qas"]}
    submission = submission_create_predictions(
        team=team, phase=Phase.objects.get(challenge=challenge, slug="dev"), user=alice,
        upload=upload({"SQuAD": predictions}), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    f1 = Score.objects.get(submission=submission, dataset__slug="squad", metric="f1").value
    assert f1 == pytest.approx(100.0)
