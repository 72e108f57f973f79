"""Submitted systems run for real: Docker engine, Redis, Celery workers; scored outside the container."""

from __future__ import annotations

import pytest

from leaderboard.submissions.models import Score, Status
from tests.workers.systems_fixtures import SYSTEMS, Platform, script_bundle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.docker]


def test_a_code_bundle_runs_on_the_hidden_test_inputs_and_is_scored(platform: Platform) -> None:
    pk = platform.submit(script_bundle(SYSTEMS / "trivial" / "run.py"))
    submission = platform.wait_final(pk)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"
    per_dataset = {(s.dataset.slug, s.metric) for s in Score.objects.filter(submission=submission, dataset__isnull=False)}
    # The test portion: XQuAD-en (Split II) and CoQA (Split III, sealed as Hidden-07).
    assert {("xquad-en", "f1"), ("coqa", "f1")} <= per_dataset
    assert "Hidden-07" in submission.log and "CoQA" not in submission.log
    assert submission.exit_code == 0 and submission.run_seconds is not None
    assert submission.attempts == 1
