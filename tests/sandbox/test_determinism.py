"""The determinism check for real: a system run twice in its container on the same inputs."""

from __future__ import annotations

import pytest

from leaderboard.challenges.models import AuditEntry
from leaderboard.console.integrity import DETERMINISM_ACTION, determinism_check_start, determinism_result
from leaderboard.submissions.models import BoardEntry, Status, Submission
from tests.builders.systems import SYSTEMS, Platform, script_bundle

pytestmark = pytest.mark.django_db(transaction=True)


def _checked(platform: Platform, system: str) -> tuple[Submission, str, int, int]:
    pk = platform.submit(script_bundle(SYSTEMS / system / "run.py"))
    first = platform.wait_final(pk)
    assert first.status == Status.FINISHED, f"{first.failure_reason}\n{first.log}\n{platform.logs()}"
    determinism_check_start(submission=first, by=platform.cast.oscar, reason="answers looked unstable")
    # The check is a re-run: the row leaves the board while the system runs again.
    assert not BoardEntry.objects.filter(submission_id=pk).exists()
    second = platform.wait_final(pk)
    assert second.status == Status.FINISHED, f"{second.failure_reason}\n{second.log}\n{platform.logs()}"
    entry = AuditEntry.objects.get(action=DETERMINISM_ACTION, details__submission_id=pk)
    result = determinism_result(entry=entry)
    assert result is not None and result.state == "compared", result
    return second, result.explanation, result.differ, result.compared


def test_the_determinism_check_flags_a_system_that_answers_with_a_random_choice(platform: Platform) -> None:
    submission, explanation, differ, compared = _checked(platform, "random_choice")
    # XQuAD-en's and Hidden-07's questions, each a word drawn from its context: most differ.
    assert compared > 50 and differ > compared // 2, explanation
    assert f"{differ} of {compared} answers differ" in explanation and "XQuAD-en:" in explanation
    page = platform.cast.client("oscar").get("/c/demo/console/integrity/").content.decode()
    assert f"{differ} of {compared} answers differ" in page and f"/c/demo/submissions/{submission.pk}/" in page
    assert BoardEntry.objects.filter(submission=submission).exists()  # back on the board with the new run


def test_a_deterministic_system_run_twice_answers_the_same(platform: Platform) -> None:
    _, explanation, differ, compared = _checked(platform, "trivial")
    assert differ == 0 and compared > 50, explanation
    assert "identical between the two runs" in explanation
