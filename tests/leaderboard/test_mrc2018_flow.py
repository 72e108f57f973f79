"""The MRC2018 suite end to end: DuReader references, bonus metric, breakdown by question type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.services import team_create
from leaderboard.core.errors import ServiceError
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import upload

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_reference_answers_score_100_rouge_and_bleu_with_a_type_breakdown() -> None:
    User.objects.create_user("organizer")
    alice = User.objects.create_user("alice")
    challenge = challenge_load(spec_path=REPO / "deploy" / "demo" / "mrc2018-demo.yaml")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    refs = [json.loads(line) for line in (REPO / "deploy/demo/data/dureader/search.dev.jsonl").open(encoding="utf-8")]
    preds = {str(r["question_id"]): {"answers": r["answers"][:1], "yesno_answers": r["yesno_answers"][:1]}
             for r in refs}
    submission = submission_create_predictions(
        team=team, phase=challenge.phases.get(slug="dev"), user=alice, upload=upload(preds),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    assert submission.primary_score == pytest.approx(100.0)
    scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__isnull=True)}
    assert scores["bleu_4"] == pytest.approx(100.0)
    assert {"rouge_l_ENTITY", "rouge_l_DESCRIPTION", "rouge_l_YES_NO"} <= set(scores)
    board = board_build(phase=challenge.phases.get(slug="dev"), viewer=alice)
    assert board.rows[0].team_name == "Alpha" and board.rows[0].rank == 1


@pytest.mark.django_db(transaction=True)
def test_an_answer_that_is_not_text_is_rejected_naming_the_question() -> None:
    User.objects.create_user("organizer")
    alice = User.objects.create_user("alice")
    challenge = challenge_load(spec_path=REPO / "deploy" / "demo" / "mrc2018-demo.yaml")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")

    with pytest.raises(ServiceError, match="186572"):
        submission_create_predictions(
            team=team, phase=challenge.phases.get(slug="dev"), user=alice, upload=upload({"186572": 3}),
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
        )
