"""Scored prediction files for the breakdown tests, and what the pages say of hidden slices."""

from __future__ import annotations

from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast, gold_predictions, upload

HIDDEN = "hidden: a slice has fewer than 50 questions of hidden test data"


FOR_ORGANIZERS = "its team does not see this family: a slice has fewer than 50 questions of hidden test data"


def submit(cast: Cast, portion: str, *, wrong_every: int = 3) -> Submission:
    phase = cast.dev if portion == "dev" else cast.test
    submission = submission_create_predictions(
        team=cast.alpha, phase=phase, user=cast.alice,
        upload=upload(gold_predictions(portion, wrong_every=wrong_every)), limit_bytes=10 * 1024 * 1024)
    submission_evaluate(submission.pk)  # what the worker does once the upload commits
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission
