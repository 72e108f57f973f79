"""The run lifecycle's state machine, without an engine: claims, leases, the reaper, verdicts, quotas.

The services are what a worker calls; here they are called directly with outcomes a run could have,
so every transition and refusal is checked quickly.  The real runs are in tests/workers.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import re

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from pytest_django import Settings

from leaderboard.challenges.models import Dataset, DatasetFile
from leaderboard.challenges.services import dataset_reveal
from leaderboard.sandbox.contract import RunEnd, RunPlan, outcome_as_json
from leaderboard.submissions import worker_api
from leaderboard.submissions.evaluation import submission_evaluate, submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import (
    submission_run_claim,
    submission_run_heartbeat,
    submission_run_platform_failure,
    submissions_lost_in_queue,
    submissions_reap,
)
from leaderboard.submissions.models import FailureCause, Score, Status, Submission
from leaderboard.submissions.reload import dataset_gold_replace
from leaderboard.submissions.selectors import quota_usage, submission_run_plan, system_run_plan
from leaderboard.submissions.worker_api import run_ticket_build
from tests.builders.cast import DEMO_DATA, Cast, gold_predictions, mrqa_gold, upload
from tests.builders.runs import GOLD_FILES, bundle, gold_outputs, outcome
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(cast: Cast) -> Submission:
    system_phases(cast)
    return submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")


def test_a_claim_is_taken_once(queued: Submission) -> None:
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None and plan.attempt == 1
    assert [d.label for d in plan.datasets] == ["XQuAD-en", "Hidden-07"]  # the sealed one by its alias only
    assert [d.sealed for d in plan.datasets] == [False, True]  # and under re-keyed ids
    assert submission_run_claim(queued.pk, worker="host:2") is None
    queued.refresh_from_db()
    assert queued.status == Status.RUNNING and queued.worker == "host:1" and queued.lease_expires_at is not None


def test_a_clean_run_is_scored_and_its_log_kept(queued: Submission) -> None:
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(outputs=gold_outputs()))
    queued.refresh_from_db()
    assert queued.status == Status.FINISHED and queued.log == "the log" and queued.run_seconds == 1.5
    assert Score.objects.get(submission=queued, dataset__isnull=True, metric="macro_f1").value == pytest.approx(100)


@pytest.mark.parametrize(("changes", "reason"), [
    ({"timed_out": True, "exit_code": None}, "timed out: still running after 20 s (the time limit)"),
    ({"oom_killed": True, "exit_code": 137}, "ran out of memory: it used more than 256 MiB"),
    ({"output_too_large": True}, "wrote more than 16 MiB to /output (the output limit)"),
    ({"exit_code": 3}, "exited with code 3"),
    ({"exit_code": 139}, "exited with code 139"),  # its own SIGSEGV; a bare 137 is the platform's (below)
    ({"output_errors": {"coqa": "output missing: expected /output/hidden-07.json"}},
     "invalid output: dataset Hidden-07: output missing: expected /output/hidden-07.json"),
    ({"outputs": {"xquad-en": b"{not json", "coqa": b"{}"}}, "invalid output: /output/xquad-en.json"),
])
def test_a_failed_run_says_why_keeps_its_log_and_counts(queued: Submission, cast: Cast, changes: dict,
                                                         reason: str) -> None:
    submission_run_claim(queued.pk, worker="host:1")
    if "outputs" not in changes and "output_errors" in changes:
        changes = {**changes, "outputs": {"xquad-en": gold_outputs()["xquad-en"]}}
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(**changes))
    queued.refresh_from_db()
    assert queued.status == Status.FAILED
    assert reason in queued.failure_reason
    assert "CoQA" not in queued.failure_reason  # a sealed dataset is named by its alias
    assert queued.failure_cause == FailureCause.PARTICIPANT and queued.log == "the log"
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 1


@pytest.mark.parametrize("changes", [{"exit_code": 137}, {"exit_code": 143},
                                     {"exit_code": 137, "end": RunEnd.KILLED_OUTSIDE},
                                     {"exit_code": 137, "peak_memory_bytes": 5 * 2**20}])
def test_a_kill_from_outside_is_the_platforms_run_again_not_counted(queued: Submission, cast: Cast,
                                                                     changes: dict) -> None:
    submission_run_claim(queued.pk, worker="host:1")
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(logs=f"printed {CANARY}", duration_s=7.123456,
                                                                outputs=gold_outputs(), **changes))
    queued.refresh_from_db()
    assert queued.status == Status.QUEUED and queued.attempts == 1 and queued.worker == ""
    assert not Score.objects.filter(submission=queued).exists()
    # Nothing of the run is kept for the team to read: no log, exit code, time or memory.
    assert queued.log == "" and queued.exit_code is None and queued.run_seconds is None
    # The last attempt killed so too: failed as the platform's, with the reason code, not counted.
    submission_run_claim(queued.pk, worker="host:2")
    submission_run_finish(queued.pk, attempt=2, outcome=outcome(**changes))
    queued.refresh_from_db()
    assert queued.status == Status.FAILED and queued.failure_cause == FailureCause.PLATFORM
    assert "RUN_KILLED_OUTSIDE" in queued.failure_reason and "137" not in queued.failure_reason
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 0
    team_sees, _ = team_and_organizer_views(cast, queued.pk)
    assert CANARY not in team_sees and "7.12" not in without_times(team_sees)


def test_a_stale_attempt_cannot_finish_or_renew(queued: Submission) -> None:
    submission_run_claim(queued.pk, worker="host:1")
    reaped = submissions_reap(dead_workers=["host:1"])
    assert reaped.requeued == [queued.pk]
    assert not submission_run_heartbeat(queued.pk, attempt=1)
    submission_run_claim(queued.pk, worker="host:2")
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(exit_code=9))  # the old worker, late
    queued.refresh_from_db()
    assert queued.status == Status.RUNNING and queued.attempts == 2


def test_an_expired_lease_is_requeued_once_then_failed_without_counting(queued: Submission, cast: Cast) -> None:
    later = timezone.now() + dt.timedelta(hours=1)
    submission_run_claim(queued.pk, worker="host:1")
    assert submission_run_heartbeat(queued.pk, attempt=1)
    assert submissions_reap(now=later).requeued == [queued.pk]
    submission_run_claim(queued.pk, worker="host:2")
    assert submissions_reap(now=later).failed == [queued.pk]
    queued.refresh_from_db()
    assert queued.status == Status.FAILED and queued.failure_cause == FailureCause.PLATFORM
    assert "does not count against your quota" in queued.failure_reason
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 0


def test_a_platform_failure_is_retried_once_then_not_counted(queued: Submission, cast: Cast) -> None:
    submission_run_claim(queued.pk, worker="host:1")
    assert submission_run_platform_failure(queued.pk, attempt=1, reason="engine down")
    submission_run_claim(queued.pk, worker="host:1")
    assert not submission_run_platform_failure(queued.pk, attempt=2, reason="engine down")
    queued.refresh_from_db()
    assert queued.status == Status.FAILED and "engine down" in queued.failure_reason
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 0


def test_a_cancelled_run_stops_its_heartbeat(queued: Submission) -> None:
    submission_run_claim(queued.pk, worker="host:1")
    Submission.objects.filter(pk=queued.pk).update(status=Status.CANCELLED)
    assert not submission_run_heartbeat(queued.pk, attempt=1)


def test_a_queued_system_has_no_message_to_lose(queued: Submission, settings: Settings) -> None:
    """Its row is the run queue (compute workers claim over the internal API): nothing to send again."""
    settings.REDISPATCH_AFTER_S = 0
    later = timezone.now() + dt.timedelta(seconds=5)
    assert submissions_lost_in_queue(queues={"celery", "control", "cpu"}, now=later) == []
    assert Submission.objects.get(pk=queued.pk).status == Status.QUEUED


# --------------------------------------------------------------------------- what a team sees of a run

CANARY = "CANARY-7f3a9c"


def without_times(text: str) -> str:
    """Timestamps carry microseconds (the upload's), which may spell a run time's digits by chance."""
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z?", "<time>", text)


def team_and_organizer_views(cast: Cast, pk: int) -> tuple[str, str]:
    """Everything the team can read about the submission, and the organizer's page."""
    alice = cast.client("alice")
    team_sees = "\n".join([
        alice.get(f"/c/demo/submissions/{pk}/").content.decode(),
        alice.get("/c/demo/submissions/").content.decode(),
        alice.get(f"/api/v1/submissions/{pk}/").content.decode(),
        alice.get(f"/api/v1/submissions/{pk}/log/").content.decode(),
        alice.get("/api/v1/challenges/demo/submissions/").content.decode(),
    ])
    return team_sees, cast.client("oscar").get(f"/c/demo/submissions/{pk}/").content.decode()


@pytest.mark.parametrize(("changes", "verdict", "sentence"), [
    # Unknown ids that carry text the system read from the hidden inputs.
    ({"extra": {f"LEAK{i} {CANARY} q=When was it opened?": "x" for i in range(5)}}, "unknown_ids",
     "Unknown ids present for dataset XQuAD-en."),
    ({"outputs": {"xquad-en": b"{}", "coqa": b"{}"}}, "answers_missing", "Answers missing for dataset XQuAD-en."),
    ({"outputs": {"xquad-en": b'{"a": "b", ' + b" " * 77 + b"CANARY", "coqa": b"{}"}}, "output_not_json",
     "Output not valid JSON for dataset XQuAD-en."),
    ({"outputs": {"xquad-en": json.dumps([CANARY]).encode(), "coqa": b"{}"}}, "output_wrong_shape",
     "Output of the wrong shape for dataset XQuAD-en."),
    ({"output_errors": {"xquad-en": "output missing: expected /output/xquad-en.json"}}, "output_missing",
     "Output missing for dataset XQuAD-en."),
    ({"exit_code": 42}, "crashed", "Crashed."),
    ({"timed_out": True, "exit_code": None}, "time_limit", "Time limit reached."),
    ({"oom_killed": True, "exit_code": 137}, "memory_limit", "Memory limit reached."),
])
def test_on_hidden_data_a_team_sees_only_the_fixed_vocabulary(
    queued: Submission, cast: Cast, changes: dict, verdict: str, sentence: str
) -> None:
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    run = {"logs": f"the system printed {CANARY}", "duration_s": 7.123456, "peak_memory_bytes": 150 * 2**20 + 1}
    if "extra" in changes:
        run["outputs"] = gold_outputs(plan, extra=changes["extra"])
    elif "outputs" not in changes:
        run["outputs"] = gold_outputs(plan)
    run.update({k: v for k, v in changes.items() if k != "extra"})
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(**run))
    queued.refresh_from_db()
    assert queued.status == Status.FAILED and queued.verdict == verdict
    team_sees, organizer_sees = team_and_organizer_views(cast, queued.pk)
    assert sentence in team_sees
    team_text = without_times(team_sees)
    for secret in (CANARY, "LEAK0", "7.12", "line 1", "column", "/output/", "q=When"):
        assert secret not in team_text, secret
    detail = cast.client("alice").get(f"/api/v1/submissions/{queued.pk}/").json()
    assert detail["run_seconds"] == 7 and detail["peak_memory_mb"] == 151
    assert detail["exit"] in ("zero", "non-zero", "killed") and "exit_code" not in detail
    # Nor do the run's start and end tell the run time to the microsecond.
    assert queued.finished_at is not None and queued.started_at is not None
    for field in ("started_at", "finished_at"):
        assert "." not in detail[field], detail[field]
    listed = cast.client("alice").get("/api/v1/challenges/demo/submissions/").json()
    assert all("." not in (row["finished_at"] or "") for row in listed)
    # The organizer reads the full reason the platform built, and the log.
    assert queued.failure_reason.split(":")[0].lower()[:6] in organizer_sees.lower()
    assert CANARY in organizer_sees


def test_on_public_dev_data_a_team_keeps_the_precise_reason_and_log(cast: Cast) -> None:
    system_phases(cast)
    dev_run = submission_create_system(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=bundle(),
                                       kind="code_bundle")
    submission_run_claim(dev_run.pk, worker="host:1")
    submission_run_finish(dev_run.pk, attempt=1, outcome=outcome(exit_code=3, logs="Traceback: KeyError 'x'"))
    team_sees, _ = team_and_organizer_views(cast, dev_run.pk)
    assert "exited with code 3" in team_sees and "Traceback: KeyError" in team_sees


def test_one_not_found_answer_for_missing_foreign_and_other_challenge_submissions(
    queued: Submission, cast: Cast
) -> None:
    charlie = cast.client("charlie")
    answers = {
        "foreign page": charlie.get(f"/c/demo/submissions/{queued.pk}/"),
        "missing page": charlie.get("/c/demo/submissions/999999/"),
        "foreign api": charlie.get(f"/api/v1/submissions/{queued.pk}/"),
        "missing api": charlie.get("/api/v1/submissions/999999/"),
        "foreign log": charlie.get(f"/api/v1/submissions/{queued.pk}/log/"),
    }
    assert {r.status_code for r in answers.values()} == {404}
    def page(response: object) -> str:  # the CSRF token is masked afresh on every response
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())  # type: ignore[attr-defined]

    assert page(answers["foreign page"]) == page(answers["missing page"])
    assert answers["foreign api"].json() == answers["missing api"].json() == answers["foreign log"].json()
    # The owner asking under another challenge's address learns nothing either.
    other = cast.client("alice").get(f"/c/other/submissions/{queued.pk}/")
    assert other.status_code == 404


def test_organizers_open_submissions_of_a_challenge_not_public_yet_and_teams_do_not(cast: Cast) -> None:
    """The console lists a private challenge's submissions and links their pages: they must open for
    its organizers (they were 404 to everyone), and stay one 404 to everyone else."""
    submission = Submission.objects.create(team=cast.alpha, phase=cast.dev, kind="predictions", status="failed")
    cast.challenge.is_public = False
    cast.challenge.save()
    url = f"/c/{cast.challenge.slug}/submissions/{submission.pk}/"
    assert cast.client("oscar").get(url).status_code == 200
    assert cast.client("alice").get(url).status_code == 404
    assert cast.client(None).get(url).status_code == 302  # to the login page, as for any submission


def test_a_prediction_file_is_scored_by_a_named_worker(cast: Cast) -> None:
    """The console's queue page names what scores a prediction file, as it names compute workers."""

    submission = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                               upload=upload(gold_predictions()),
                                               limit_bytes=django_settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED and re.fullmatch(r"scoring@.+:\d+", submission.worker)


def test_a_run_whose_data_an_organizer_replaced_meanwhile_runs_again_as_the_platforms_fault(
    queued: Submission, cast: Cast,
) -> None:
    """Issue 16: its answers are to the old questions; checked against the new ones they read as
    the team's unknown ids or missing answers, counted.  Now it runs again, not counted."""

    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    queued.refresh_from_db()
    assert set(queued.run_gold) == {str(f.dataset_id) for f in DatasetFile.objects.filter(portion="test")}
    outputs = gold_outputs(plan)
    xquad = DatasetFile.objects.get(dataset__slug="xquad-en", portion="test")
    lines = gzip.decompress(open(xquad.gold.path, "rb").read()).decode().splitlines()
    dataset_gold_replace(dataset=xquad.dataset, portion="test", filename="XQuAD-en.test.jsonl.gz",
                         content=gzip.compress(("\n".join(lines[:-1]) + "\n").encode(), mtime=0))  # a question fewer
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(outputs=outputs))
    queued.refresh_from_db()
    assert queued.status == Status.QUEUED and queued.verdict == "", queued.failure_reason
    assert queued.failure_cause != FailureCause.PARTICIPANT  # queued again after the platform's back-off
    # The next attempt reads the new data and is stamped with it.
    plan = submission_run_claim(queued.pk, worker="host:2")
    queued.refresh_from_db()
    current = DatasetFile.objects.get(dataset_id=xquad.dataset_id, portion="test")
    assert plan is not None and queued.run_gold[str(xquad.dataset_id)] == current.sha256 != xquad.sha256


# --------------------------------------------------------------------------- the plan, once per attempt


def test_the_claim_keeps_its_plan_on_the_attempt_and_it_names_no_gold(queued: Submission) -> None:
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    queued.refresh_from_db()
    assert queued.run_plan == plan.as_json() and RunPlan.from_json(queued.run_plan) == plan
    assert submission_run_plan(submission=queued) == plan
    # Organizer and platform data only: datasets, answer-free inputs, keys; no gold file, no answer.
    kept = json.dumps(queued.run_plan)
    for gold_file in DatasetFile.objects.filter(portion="test"):
        assert gold_file.gold.name is not None
        assert gold_file.gold.path not in kept and gold_file.gold.name not in kept
        answers = mrqa_gold(DEMO_DATA / "mrqa" / GOLD_FILES[gold_file.dataset.slug])
        assert not any(f'"{answer[0]}"' in kept for answer in answers.values())


def test_a_dataset_revealed_while_a_run_runs_changes_nothing_the_run_is_scored_with(queued: Submission) -> None:
    """The system read the sealed dataset under its alias and re-keyed ids, and wrote its output under
    the alias: a reveal meanwhile must not rename the output or drop the key that maps the ids back."""
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    ticket = run_ticket_build(plan)
    outputs = gold_outputs(plan)
    sealed = next(ds for ds in plan.datasets if ds.sealed)
    dataset_reveal(dataset=Dataset.objects.get(slug=sealed.slug))
    queued.refresh_from_db()
    assert system_run_plan(submission=queued) != plan  # a plan derived now would differ
    assert submission_run_plan(submission=queued) == plan
    # The inputs a worker fetches are those its ticket hashed.
    index = plan.datasets.index(sealed)
    served = worker_api.run_input_path(submission=queued, index=index)
    assert served is not None and hashlib.sha256(served.read_bytes()).hexdigest() == ticket.inputs[index].sha256
    # The outputs, named as the ticket named them, are taken, and scored under the ids the system read.
    by_name = {ds.output_name: outputs[ds.slug] for ds in plan.datasets}
    assert sealed.output_name in ticket.output_names and sealed.output_name in by_name
    worker_api.submission_run_result_store(
        submission=queued, outcome=outcome_as_json(outcome()),
        outputs={name: SimpleUploadedFile(name, data) for name, data in by_name.items()})
    worker_api.submission_run_result_score(queued.pk)
    queued.refresh_from_db()
    assert queued.status == Status.FINISHED, queued.failure_reason
    assert Score.objects.get(submission=queued, dataset__isnull=True, metric="macro_f1").value == pytest.approx(100)


def test_a_run_claimed_before_plans_were_kept_is_finished_with_the_plan_derived_now(queued: Submission) -> None:
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    Submission.objects.filter(pk=queued.pk).update(run_plan=None)
    queued.refresh_from_db()
    assert submission_run_plan(submission=queued) == plan == system_run_plan(submission=queued)
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(outputs=gold_outputs(plan)))
    queued.refresh_from_db()
    assert queued.status == Status.FINISHED, queued.failure_reason
