from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import Phase
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status, Submission
from tests.builders.cast import Cast, gold_predictions, upload


def submit(cast: Cast, preds: dict, *, phase: Phase | None = None, user: User | None = None,
           team: Team | None = None) -> Submission:
    return submission_create_predictions(
        team=team or cast.alpha, phase=phase or cast.dev, user=user or cast.alice, upload=upload(preds),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )


@pytest.mark.django_db(transaction=True)
def test_gold_predictions_score_100_and_rank_first(cast: Cast) -> None:
    best = submit(cast, gold_predictions())
    worse = submit(cast, gold_predictions(wrong_every=3), user=cast.charlie, team=cast.charlies)
    best.refresh_from_db()
    worse.refresh_from_db()
    assert best.status == Status.FINISHED, best.failure_reason
    assert best.primary_score == pytest.approx(100.0)
    assert worse.primary_score is not None and worse.primary_score < 100
    f1 = Score.objects.get(submission=best, dataset__slug="squad", metric="f1")
    assert f1.value == pytest.approx(100.0)
    board = board_build(phase=cast.dev, viewer=cast.dave)
    assert [(r.team_name, r.rank) for r in board.rows] == [("Alpha", 1), ("Charlie's", 2)]
