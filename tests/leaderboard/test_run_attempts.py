"""A record per run attempt: written by each transition, read by each viewer as the report allows.

The services are called directly, as a worker, the reaper and an organizer would call them; the
pages and the API are read through Django's test client, as the team and the organizer read them.
"""

from __future__ import annotations

import datetime as dt
import importlib
import re

import pytest
from django.apps import apps
from django.core import mail
from django.utils import timezone
from pytest_django import Settings

from leaderboard.submissions.attempts import run_attempt_record
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import (
    submission_cancel,
    submission_run_claim,
    submission_run_fail,
    submission_run_platform_failure,
    submissions_reap,
)
from leaderboard.submissions.models import AttemptEnd, FailureCause, RunAttempt, Status, Submission, Verdict
from leaderboard.submissions.rerun import submission_rerun
from leaderboard.submissions.selectors import run_attempts_of
from tests.builders.cast import Cast
from tests.builders.runs import bundle, gold_outputs, outcome
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db

# What only attempt 1 had: its worker and host, and figures no later attempt repeats.
CANARY_WORKER = "canary-tok/CANARYHOST-5d1e:4242"
CANARY_FIGURES = ("CANARYHOST", "canary-tok", "4321", "999", "77")


def attempts(submission: Submission) -> list[RunAttempt]:
    return list(RunAttempt.objects.filter(submission=submission, history=None).order_by("number"))


@pytest.fixture
def queued(cast: Cast) -> Submission:
    system_phases(cast)
    return submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")


def test_a_lost_lease_and_a_second_claim_that_is_scored_give_two_records(queued: Submission) -> None:
    before = timezone.now()
    assert submission_run_claim(queued.pk, worker="tok-a/host-a:11") is not None
    later = timezone.now() + dt.timedelta(hours=1)
    assert submissions_reap(now=later).requeued == [queued.pk]
    plan = submission_run_claim(queued.pk, worker="tok-b/host-b:22")
    assert plan is not None and plan.attempt == 2
    submission_run_finish(queued.pk, attempt=2, outcome=outcome(outputs=gold_outputs(plan)))
    queued.refresh_from_db()
    assert queued.status == Status.FINISHED
    first, second = attempts(queued)
    assert (first.number, first.worker, first.host, first.end) == (1, "tok-a/host-a:11", "host-a", AttemptEnd.LOST)
    assert first.claimed_at >= before and first.ended_at == later
    assert first.failure_cause == FailureCause.PLATFORM and "lease expired" in first.reason
    assert first.exit_code is None and not first.log_recorded
    assert (second.number, second.worker, second.host, second.end) == (2, "tok-b/host-b:22", "host-b",
                                                                        AttemptEnd.SCORED)
    assert second.verdict == Verdict.FINISHED and second.ended_at is not None
    assert (second.exit_code, second.run_seconds, second.log_recorded) == (0, 1.5, True)


def test_a_platform_failure_ends_its_attempt_with_its_reason_and_traceback(queued: Submission,
                                                                           settings: Settings) -> None:
    settings.ADMINS = [("ops", "ops@example.org")]
    submission_run_claim(queued.pk, worker="tok/h1:1")
    assert submission_run_platform_failure(queued.pk, attempt=1, reason="engine unreachable",
                                           detail="Traceback: ConnectionRefusedError")
    submission_run_claim(queued.pk, worker="tok/h2:2")
    assert not submission_run_platform_failure(queued.pk, attempt=2, reason="disk full")
    first, second = attempts(queued)
    assert (first.end, first.verdict, first.reason) == (AttemptEnd.PLATFORM, Verdict.PLATFORM, "engine unreachable")
    assert "ConnectionRefusedError" in first.detail
    assert (second.end, second.reason, second.host) == (AttemptEnd.PLATFORM, "disk full", "h2")
    # The organizers' alert lists each attempt from its record.
    (alert,) = mail.outbox
    assert "1. stopped by the platform on tok/h1:1" in alert.body and ": engine unreachable" in alert.body
    assert "2. stopped by the platform on tok/h2:2" in alert.body


def test_the_teams_own_failure_and_a_cancel_end_their_attempts(cast: Cast, queued: Submission) -> None:
    submission_run_claim(queued.pk, worker="tok/h1:1")
    submission_run_fail(queued.pk, attempt=1, reason="the engine refused the image: no such layer")
    (only,) = attempts(queued)
    assert (only.end, only.verdict, only.failure_cause) == (AttemptEnd.FAILED, Verdict.NOT_STARTED,
                                                           FailureCause.PARTICIPANT)
    other = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                     kind="code_bundle")
    submission_run_claim(other.pk, worker="tok/h1:1")
    other.refresh_from_db()
    submission_cancel(submission=other, user=cast.alice)
    (cancelled,) = attempts(other)
    assert cancelled.end == AttemptEnd.CANCELLED and "alice" in cancelled.reason


def test_a_late_finish_of_a_reaped_attempt_changes_neither_record(queued: Submission) -> None:
    submission_run_claim(queued.pk, worker="tok/h1:1")
    submissions_reap(dead_workers=["tok/h1:1"])
    submission_run_claim(queued.pk, worker="tok/h2:2")
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(exit_code=9))  # the old worker, late
    first, second = attempts(queued)
    assert first.end == AttemptEnd.LOST and first.exit_code is None and "found dead" in first.reason
    assert second.end == AttemptEnd.RUNNING and second.ended_at is None


# --------------------------------------------------------------------------- who sees which attempt


def two_attempts_on_hidden_data(queued: Submission) -> None:
    """Attempt 1 on the canary worker, which handed back figures, then was lost; attempt 2 crashed
    by the team's fault (charged: the team sees its verdict and rounded figures)."""
    submission_run_claim(queued.pk, worker=CANARY_WORKER)
    run_attempt_record(submission_id=queued.pk, number=1, exit_code=77, run_seconds=4321.5, peak_memory_mb=999)
    assert submissions_reap(dead_workers=[CANARY_WORKER]).requeued == [queued.pk]
    plan = submission_run_claim(queued.pk, worker="tok-b/host-b:22")
    assert plan is not None
    submission_run_finish(queued.pk, attempt=2, outcome=outcome(
        outputs=gold_outputs(plan), exit_code=42, duration_s=7.123456, peak_memory_bytes=150 * 2**20 + 1))


def team_reads(cast: Cast, pk: int) -> str:
    alice = cast.client("alice")
    return "\n".join([
        alice.get(f"/c/demo/submissions/{pk}/").content.decode(),
        alice.get("/c/demo/submissions/").content.decode(),
        alice.get(f"/api/v1/submissions/{pk}/").content.decode(),
        alice.get("/api/v1/challenges/demo/submissions/").content.decode(),
    ])


def organizer_reads(cast: Cast, pk: int) -> str:
    oscar = cast.client("oscar")
    return "\n".join([oscar.get(f"/c/demo/submissions/{pk}/").content.decode(),
                      oscar.get(f"/api/v1/submissions/{pk}/").content.decode()])


def assert_nothing_of_attempt_1(text: str) -> None:
    # Timestamps carry digits that may spell a figure by chance.
    text = re.sub(r"\d{4}-\d\d-\d\d[T ][\d:.]+Z?", "<time>", text)
    for secret in CANARY_FIGURES:  # as a word: a hash's "…677ef…" is not the exit code
        assert not re.search(rf"\b{secret}\b", text), secret


def test_on_hidden_data_the_team_sees_nothing_of_the_attempt_the_platform_lost(
    queued: Submission, cast: Cast,
) -> None:
    two_attempts_on_hidden_data(queued)
    team = team_reads(cast, queued.pk)
    assert "Crashed." in team  # the charged attempt's verdict is the team's to read
    assert_nothing_of_attempt_1(team)
    assert "tok-b" not in team and "host-b" not in team  # no worker of any attempt
    detail = cast.client("alice").get(f"/api/v1/submissions/{queued.pk}/").json()
    # Not even that there was an attempt before: one row, numbered 1, figures as the report rounds them.
    assert [(a["number"], a["end"], a["run_seconds"], a["peak_memory_mb"]) for a in detail["run_attempts"]] == [
        (1, "failed by the submission", 7, 151)]
    assert detail["run_attempts"][0]["exit"] == "non-zero" and "worker" not in detail["run_attempts"][0]
    assert "." not in detail["run_attempts"][0]["claimed_at"]
    # The organizer reads every attempt in full.
    organizer = organizer_reads(cast, queued.pk)
    assert CANARY_WORKER in organizer and "CANARYHOST-5d1e" in organizer and "4321.5" in organizer
    full = cast.client("oscar").get(f"/api/v1/submissions/{queued.pk}/").json()["run_attempts"]
    assert [(a["number"], a["worker"], a["end"]) for a in full] == [
        (1, CANARY_WORKER, "worker lost"), (2, "tok-b/host-b:22", "failed by the submission")]


def test_the_canary_check_fails_on_what_the_organizer_reads(queued: Submission, cast: Cast) -> None:
    """The probe: the check the team's view passes is not blind; on the organizer's view it fails."""
    two_attempts_on_hidden_data(queued)
    with pytest.raises(AssertionError):
        assert_nothing_of_attempt_1(organizer_reads(cast, queued.pk))


def test_on_hidden_data_a_run_not_yet_charged_shows_the_team_no_attempt(queued: Submission, cast: Cast) -> None:
    submission_run_claim(queued.pk, worker=CANARY_WORKER)
    run_attempt_record(submission_id=queued.pk, number=1, exit_code=77, run_seconds=4321.5, peak_memory_mb=999)
    submission_run_platform_failure(queued.pk, attempt=1, reason="engine unreachable")
    queued.refresh_from_db()
    assert run_attempts_of(submission=queued, is_organizer=False) == ()
    assert len(run_attempts_of(submission=queued, is_organizer=True)) == 1
    assert_nothing_of_attempt_1(team_reads(cast, queued.pk))


def test_on_public_data_the_team_sees_every_attempt_but_no_worker(cast: Cast) -> None:
    system_phases(cast)
    dev_run = submission_create_system(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=bundle(),
                                       kind="code_bundle")
    submission_run_claim(dev_run.pk, worker=CANARY_WORKER)
    submission_run_platform_failure(dev_run.pk, attempt=1, reason="engine unreachable", detail="Traceback: X")
    submission_run_claim(dev_run.pk, worker="tok-b/host-b:22")
    submission_run_finish(dev_run.pk, attempt=2, outcome=outcome(exit_code=3))
    dev_run.refresh_from_db()
    rows = run_attempts_of(submission=dev_run, is_organizer=False)
    assert [(a.number, a.end, a.reason[:18], a.exit) for a in rows] == [
        (1, "stopped by the platform", "engine unreachable", ""), (2, "failed by the submission",
                                                                  "exited with code 3", "3")]
    assert all(a.worker == a.host == a.detail == "" for a in rows)
    assert "CANARYHOST" not in cast.client("alice").get(f"/c/demo/submissions/{dev_run.pk}/").content.decode()


# --------------------------------------------------------------------------- history, console, old runs


def test_a_rerun_keeps_the_replaced_runs_attempts_with_its_history(queued: Submission, cast: Cast) -> None:
    submission_run_claim(queued.pk, worker=CANARY_WORKER)
    submission_run_fail(queued.pk, attempt=1, reason="no such layer")
    queued.refresh_from_db()
    history = submission_rerun(submission=queued, by=cast.oscar, reason="the engine lost a layer")
    assert [(a.number, a.worker) for a in history.attempts.all()] == [(1, CANARY_WORKER)]
    submission_run_claim(queued.pk, worker="tok-b/host-b:22")  # attempt 1 of the new run: no clash
    assert [a.worker for a in attempts(queued)] == ["tok-b/host-b:22"]
    page = cast.client("oscar").get(f"/c/demo/submissions/{queued.pk}/").content.decode()
    assert "Its attempts: 1. failed by the submission on " + CANARY_WORKER in page


def test_the_console_queue_shows_how_a_retried_runs_earlier_attempts_ended(queued: Submission, cast: Cast) -> None:
    submission_run_claim(queued.pk, worker=CANARY_WORKER)
    submissions_reap(dead_workers=[CANARY_WORKER])
    page = cast.client("oscar").get("/c/demo/console/queue/").content.decode()
    assert "attempt 1: worker lost on <code>" + CANARY_WORKER in page
    listed = cast.client("oscar").get("/api/v1/challenges/demo/console/queue/").json()
    waiting = [w for q in listed["queues"] for w in q["waiting"] if w["submission"] == queued.pk]
    assert [(a["worker"], a["end"]) for a in waiting[0]["earlier_attempts"]] == [(CANARY_WORKER, "lost")]


def test_runs_from_before_the_records_get_one_derived_from_their_fields(queued: Submission) -> None:
    submission_run_claim(queued.pk, worker="tok/old-host:9")
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(exit_code=3))
    RunAttempt.objects.filter(submission=queued).delete()  # as a run finished before the migration
    migration = importlib.import_module("leaderboard.submissions.migrations.0015_run_attempts")
    migration.attempts_derive(apps, None)
    (derived,) = attempts(queued)
    assert (derived.number, derived.worker, derived.host, derived.end, derived.exit_code, derived.derived) == (
        1, "tok/old-host:9", "old-host", AttemptEnd.FAILED, 3, True)
