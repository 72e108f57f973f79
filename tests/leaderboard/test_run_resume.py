"""A result handed back is kept until it is scored: a lost scoring is scored again from it, never run again.

The control worker's loss is simulated without processes: its finish never runs (the message lost with
it), or it dies half-way through the scoring (an exception no handler of the platform catches, as a
SIGKILL would leave it).  The reaper's round is what ``workers.control_runs.runs_reap`` does: the
results waiting, then the reap of runs whose worker is gone, leaving the runs whose result is kept.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.utils import timezone

from leaderboard.sandbox.contract import RunPlan, outcome_as_json
from leaderboard.submissions import evaluation, worker_api
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import Reaped, submission_run_claim, submissions_reap
from leaderboard.submissions.models import Score, Status, Submission
from tests.builders.cast import Cast
from tests.builders.runs import bundle, gold_outputs, outcome
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db


class ControlWorkerKilled(BaseException):
    """Not an ``Exception``: nothing of the platform catches it, as nothing runs after a SIGKILL."""


@pytest.fixture
def handed_back(cast: Cast) -> Submission:
    """A run whose system ran to its end on a compute worker and whose result was handed back; its
    FINISH_RUN message is never sent (on-commit callbacks do not run here): the finish is lost."""
    system_phases(cast)
    submission = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                          kind="code_bundle")
    plan = submission_run_claim(submission.pk, worker="host-a/host:1")
    assert plan is not None
    submission.refresh_from_db()
    worker_api.submission_run_result_store(submission=submission, outcome=outcome_as_json(outcome()),
                                           outputs=_outputs(plan))
    return submission


def _outputs(plan: RunPlan) -> dict[str, UploadedFile]:
    by_slug = gold_outputs(plan)
    return {ds.output_name: SimpleUploadedFile(ds.output_name, by_slug[ds.slug]) for ds in plan.datasets}


def reaper_round(now: dt.datetime) -> tuple[list[int], Reaped]:
    """One round of ``runs_reap``: the finishes it sends again, and what it re-queued or failed."""
    resend, _ = worker_api.run_results_waiting(now=now)
    return resend, submissions_reap(keep=worker_api.run_results_kept(), now=now)


def killed_while_scoring(submission: Submission, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(**_: Any) -> None:
        raise ControlWorkerKilled

    with monkeypatch.context() as patched:
        patched.setattr(evaluation, "scores_write", killed)
        with pytest.raises(ControlWorkerKilled):
            worker_api.submission_run_result_score(submission.pk)


def test_a_scoring_lost_half_way_is_resumed_from_the_kept_result_after_its_short_lease(
    handed_back: Submission, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed_while_scoring(handed_back, monkeypatch)
    handed_back.refresh_from_db()
    assert handed_back.status == Status.SCORING and handed_back.attempts == 1
    lease = handed_back.lease_expires_at
    assert lease is not None and lease <= timezone.now() + dt.timedelta(
        seconds=django_settings.RESULT_SCORING_LEASE_S)
    folder = worker_api._results_dir(handed_back.pk)
    assert (folder / "outcome.json").is_file()  # kept: it is not scored

    # The restarted control worker's first round, within the lease: nothing sent, nothing reaped, kept.
    assert reaper_round(timezone.now()) == ([], Reaped())
    assert (folder / "outcome.json").is_file()

    # Once the lease passed: the finish is sent again; the run is not re-queued (no second run).
    after = lease + dt.timedelta(seconds=1)
    resend, reaped = reaper_round(after)
    assert resend == [handed_back.pk] and reaped == Reaped()
    with monkeypatch.context() as later:
        # The django.utils.timezone each module reads the time from (by its dotted name: not exported).
        later.setattr("leaderboard.submissions.evaluation.timezone.now", lambda: after)
        later.setattr("leaderboard.submissions.worker_api.timezone.now", lambda: after)
        worker_api.submission_run_result_score(handed_back.pk)
    handed_back.refresh_from_db()
    assert handed_back.status == Status.FINISHED, handed_back.failure_reason
    assert handed_back.attempts == 1 and handed_back.worker == "host-a/host:1"
    scores = set(Score.objects.filter(submission=handed_back).values_list("pk", "metric", "value"))
    assert Score.objects.get(submission=handed_back, dataset__isnull=True, metric="macro_f1").value == pytest.approx(100)
    assert not folder.exists()  # removed once its scores are written

    # Exactly once: the first message's late delivery, and the reaper's next rounds, do nothing.
    worker_api.submission_run_result_score(handed_back.pk)
    assert reaper_round(after + dt.timedelta(minutes=5)) == ([], Reaped())
    handed_back.refresh_from_db()
    assert handed_back.status == Status.FINISHED and handed_back.attempts == 1
    assert set(Score.objects.filter(submission=handed_back).values_list("pk", "metric", "value")) == scores


def test_a_lost_finish_message_is_sent_again_and_the_run_is_never_requeued_while_its_result_waits(
    handed_back: Submission,
) -> None:
    handed_back.refresh_from_db()
    assert handed_back.status == Status.RUNNING
    assert handed_back.lease_expires_at is not None
    # Past the result's lease and the re-dispatch wait: sent again, still running, attempt 1.
    later = handed_back.lease_expires_at + dt.timedelta(seconds=django_settings.REDISPATCH_AFTER_S + 1)
    resend, reaped = reaper_round(later)
    assert resend == [handed_back.pk] and reaped == Reaped()
    worker_api.submission_run_result_score(handed_back.pk)
    handed_back.refresh_from_db()
    assert handed_back.status == Status.FINISHED and handed_back.attempts == 1, handed_back.failure_reason
    assert not worker_api._results_dir(handed_back.pk).exists()


def test_a_second_finish_within_the_scoring_lease_does_nothing_and_keeps_the_result(
    handed_back: Submission, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another finish of the same result while one scores it (a redelivery): it leaves the run and the
    kept result to the scoring that holds the lease."""
    killed_while_scoring(handed_back, monkeypatch)  # as if still scoring: its lease has not passed
    worker_api.submission_run_result_score(handed_back.pk)
    handed_back.refresh_from_db()
    assert handed_back.status == Status.SCORING and not Score.objects.filter(submission=handed_back).exists()
    assert (worker_api._results_dir(handed_back.pk) / "outcome.json").is_file()


def test_a_kept_result_that_cannot_be_read_falls_back_to_reaping_the_run(
    handed_back: Submission, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed_while_scoring(handed_back, monkeypatch)
    folder = worker_api._results_dir(handed_back.pk)
    (folder / "outcome.json").write_text("{not json", encoding="utf-8")
    handed_back.refresh_from_db()
    assert handed_back.lease_expires_at is not None
    resend, reaped = reaper_round(handed_back.lease_expires_at + dt.timedelta(seconds=1))
    assert resend == [] and reaped.requeued == [handed_back.pk]  # today's path: the run is queued again
    assert not folder.exists()
    handed_back.refresh_from_db()
    assert handed_back.status == Status.QUEUED and handed_back.attempts == 1
