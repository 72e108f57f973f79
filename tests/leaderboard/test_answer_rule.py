"""Issue 22, section 1: what a team can cause is its fault, counted; what the platform fails is free, so
it shows nothing and is bounded.

* One rule (``answers_json.answer_refusal``) decides what an answer may be on every path: each oddity
  (a lone surrogate, NUL, an over-long answer, a non-string, nesting) is refused as the team's fault,
  counted, in the same words on both channels (a prediction file, a system's output), on dev and test.
* A platform failure while finishing a run (here a store that raises, which no team can cause) keeps
  its traceback for the organizers, and on hidden data its team sees no figure of that run.
* More of a team's hidden runs failed by the platform in a day than the challenge allows hold its
  next hidden run for an organizer's look, visibly, until one releases it.

The same oddities through real containers are in tests/sandbox/test_answer_oddities.py.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from leaderboard.challenges.models import AuditEntry, DatasetFile, Phase
from leaderboard.challenges.selectors import phase_prediction_targets
from leaderboard.sandbox.answers_json import ANSWER_MAX_CHARS, answer_refusal
from leaderboard.sandbox.contract import RunPlan, SystemSettings
from leaderboard.submissions import evaluation
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import DialogAnswers, FailureCause, Status, Submission, Verdict
from leaderboard.submissions.selectors import quota_usage, run_queue_order
from leaderboard.submissions.uploads import UploadError
from leaderboard.submissions.worker_api import submission_run_claim_next
from tests.builders import dialogs
from tests.builders.cast import Cast
from tests.builders.runs import bundle, outcome
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db

# Each oddity, the answer that carries it, the verdict of a system run that writes it, and words of
# the reason (which names the code point or the kind, never the answer's text).
ODDITIES: dict[str, tuple[Any, str, str]] = {
    "surrogate": ("\ud800", Verdict.ANSWER_REFUSED, "holds a lone surrogate (not a character: UTF-8 cannot encode "
                                                    "it), U+D800, at character 1"),
    "nul": ("a\x00b", Verdict.ANSWER_REFUSED, "holds NUL, U+0000, at character 2"),
    "control": ("ok\x1b[2J", Verdict.ANSWER_REFUSED, "holds a control character, U+001B, at character 3"),
    "over_long": ("x" * (ANSWER_MAX_CHARS + 1), Verdict.ANSWER_REFUSED,
                  f"is {ANSWER_MAX_CHARS + 1} characters long; an answer is at most {ANSWER_MAX_CHARS} characters"),
    "non_string": (5, Verdict.OUTPUT_WRONG_SHAPE, "the answer should be a string, found int"),
    "nested": ({"answer": [[["x"]]]}, Verdict.OUTPUT_WRONG_SHAPE, "field 'answer' nests lists more than two deep"),
}
_AFTER_ID = re.compile(r"id '[^']*': (.*)")


@pytest.mark.parametrize("oddity", ["surrogate", "nul", "control", "over_long", "non_string"])
def test_the_rule_refuses_each_oddity_naming_no_byte_of_it(oddity: str) -> None:
    answer, _, words = ODDITIES[oddity]
    problem = answer_refusal(answer)
    assert problem is not None and words in problem
    if isinstance(answer, str) and len(answer) > 3:
        assert answer not in problem


def test_the_rule_takes_text_with_tabs_line_breaks_and_any_script() -> None:
    for answer in ("1475", "tab\tand\nlines\r\n", "中文 ünïcödé 😀", "", {"answer": "x", "yesno": "y"},
                   {"answers": ["a", "b"], "entity_answers": [["a"]], "yesno_answers": []}):
        assert answer_refusal(answer) is None, answer
    assert "NaN" in (answer_refusal({"answers": [float("nan")]}) or "")
    assert "U+0085" in (answer_refusal({"answers": ["ok", "\x85"]}) or "")


def _system_outputs(plan: RunPlan, *, oddity: Any) -> dict[str, bytes]:
    """Every question of every dataset of the run answered "x" under the ids the system read, but the
    first question of the first dataset, answered ``oddity`` (json.dumps escapes it as a system would)."""
    out = {}
    for n, ds in enumerate(plan.datasets):
        qids = DatasetFile.objects.get(dataset__challenge__slug=plan.challenge, dataset__slug=ds.slug,
                                       portion=plan.portion).qids
        answers: dict[str, Any] = {system_qid: "x" for system_qid in ds.qids_for_system(list(qids))}
        if n == 0:
            answers[next(iter(answers))] = oddity
        out[ds.slug] = json.dumps(answers).encode()
    return out


def _upload(phase: Phase, *, oddity: Any) -> bytes:
    content: dict[str, dict[str, Any]] = {}
    for n, (ds, f) in enumerate(phase_prediction_targets(phase=phase)):
        content[ds.slug] = {qid: "x" for qid in f.qids}
        if n == 0:
            content[ds.slug][f.qids[0]] = oddity
    return json.dumps(content).encode()


def _problem(reason: str) -> str:
    """A reason without where (file, dataset, qid): what both channels must say alike."""
    match = _AFTER_ID.search(reason)
    assert match is not None, reason
    return match.group(1)


@pytest.mark.parametrize("phase_name", ["dev", "test"])
@pytest.mark.parametrize("oddity", list(ODDITIES))
def test_each_oddity_is_the_teams_counted_fault_in_the_same_words_on_both_channels(
    cast: Cast, oddity: str, phase_name: str,
) -> None:
    system_phases(cast)
    phase = cast.dev if phase_name == "dev" else cast.test
    answer, verdict, words = ODDITIES[oddity]
    # A prediction file: refused at the upload, naming the file and the question.
    with pytest.raises(UploadError) as refused:
        submission_create_predictions(team=cast.alpha, phase=phase, user=cast.alice, limit_bytes=10**8,
                                      upload=SimpleUploadedFile("preds.json", _upload(phase, oddity=answer)))
    upload_reason = refused.value.message
    assert upload_reason.startswith("preds.json [") and words in upload_reason, upload_reason

    # A system's output: the run fails as the team's fault, counted, for the same reason.
    before = quota_usage(team=cast.alpha, phase=phase).used_today
    queued = submission_create_system(team=cast.alpha, phase=phase, user=cast.alice, upload=bundle(),
                                      kind="code_bundle")
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    submission_run_finish(queued.pk, attempt=plan.attempt,
                          outcome=outcome(outputs=_system_outputs(plan, oddity=answer)))
    run = Submission.objects.get(pk=queued.pk)
    assert (run.status, run.failure_cause, run.verdict) == (Status.FAILED, FailureCause.PARTICIPANT, verdict), \
        run.failure_reason
    assert run.failure_reason.startswith("invalid output: /output/")
    assert _problem(run.failure_reason) == _problem(upload_reason)
    # Counted: the quota moved by this run (a platform failure gives it back; this one does not).
    assert quota_usage(team=cast.alpha, phase=phase).used_today == before + 1

    team = cast.client("alice").get(f"/api/v1/submissions/{run.pk}/").json()
    if phase_name == "test":
        # Hidden data: the verdict's fixed words only, neither the code point nor the id.
        assert team["failure_reason"].startswith(Verdict(verdict).label[0].upper() + Verdict(verdict).label[1:])
        assert "U+" not in team["failure_reason"] and "id '" not in team["failure_reason"]
        assert "quota" not in team["failure_reason"]
    else:
        assert words in team["failure_reason"]


def _fail_by_the_platform_while_finishing(cast: Cast, phase: Phase, monkeypatch: pytest.MonkeyPatch) -> Submission:
    """A run whose system exited cleanly with good answers, failed by a store that raises (a disk
    error no team causes), after it set a run time and a peak memory of its choosing."""
    queued = submission_create_system(team=cast.alpha, phase=phase, user=cast.alice, upload=bundle(),
                                      kind="code_bundle")
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None

    def store_fails(**_: object) -> str:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(evaluation, "run_answers_store", store_fails)
    submission_run_finish(queued.pk, attempt=plan.attempt, outcome=outcome(
        outputs=_system_outputs(plan, oddity="x"), duration_s=7.3, peak_memory_bytes=77 * 2**20, exit_code=0))
    return Submission.objects.get(pk=queued.pk)


def test_a_platform_failure_of_a_hidden_run_shows_its_team_no_figure_and_its_organizers_the_traceback(
    cast: Cast, monkeypatch: pytest.MonkeyPatch,
) -> None:
    system_phases(cast)
    run = _fail_by_the_platform_while_finishing(cast, cast.test, monkeypatch)
    assert (run.status, run.failure_cause, run.verdict) == (Status.FAILED, FailureCause.PLATFORM, Verdict.PLATFORM)
    assert run.run_seconds == 7.3 and run.peak_memory_mb == 77  # recorded, for the organizers
    assert quota_usage(team=cast.alpha, phase=cast.test).used_today == 0  # the platform's: not counted

    alice = cast.client("alice")
    api = alice.get(f"/api/v1/submissions/{run.pk}/").json()
    assert (api["run_seconds"], api["peak_memory_mb"], api["exit"]) == (None, None, "")
    assert api["started_at"] is None and api["finished_at"] is None
    assert api["failure_reason"] == "Platform error (the platform's fault: not counted against your quota)."
    listed = next(s for s in alice.get("/api/v1/challenges/demo/submissions/").json() if s["id"] == run.pk)
    assert (listed["run_seconds"], listed["peak_memory_mb"], listed["started_at"]) == (None, None, None)
    page = alice.get(f"/c/demo/submissions/{run.pk}/").content.decode()
    assert "platform error" in page and "7 s" not in page and "77 MiB" not in page
    assert "Traceback" not in page and "OSError" not in page

    organizer = cast.client("oscar").get(f"/c/demo/submissions/{run.pk}/").content.decode()
    assert 'id="failure-detail"' in organizer and "Traceback" in organizer and "Input/output error" in organizer
    assert "7.3 s" in organizer and "77 MiB" in organizer


def test_a_platform_failure_of_a_dev_run_keeps_its_figures_for_the_team(
    cast: Cast, monkeypatch: pytest.MonkeyPatch,
) -> None:
    system_phases(cast)
    run = _fail_by_the_platform_while_finishing(cast, cast.dev, monkeypatch)
    api = cast.client("alice").get(f"/api/v1/submissions/{run.pk}/").json()
    assert (api["run_seconds"], api["peak_memory_mb"]) == (7.3, 77)
    assert "Traceback" not in json.dumps(api)


def test_a_hidden_runs_figures_wait_until_the_run_is_charged_to_its_team(cast: Cast) -> None:
    """Figures shown while a run is scoring (or queued again after a lost lease) would be free if the
    platform then failed it: on hidden data they appear only once the run is scored or the team's fault,
    and how many attempts the platform stopped is not shown either."""
    system_phases(cast)
    run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    alice = cast.client("alice")
    for status, cause in ((Status.SCORING, FailureCause.NONE), (Status.QUEUED, FailureCause.NONE),
                          (Status.FINISHED, FailureCause.NONE), (Status.FAILED, FailureCause.PARTICIPANT)):
        Submission.objects.filter(pk=run.pk).update(
            status=status, failure_cause=cause, attempts=2, run_seconds=7.3, peak_memory_mb=77, exit_code=0,
            started_at=timezone.now(), finished_at=timezone.now())
        api = alice.get(f"/api/v1/submissions/{run.pk}/").json()
        page = alice.get(f"/c/demo/submissions/{run.pk}/").content.decode()
        assert api["attempts"] == 1 and "attempt 2" not in page, status
        charged = status in (Status.FINISHED, Status.FAILED)
        assert (api["run_seconds"], api["peak_memory_mb"]) == ((7, 77) if charged else (None, None)), status
        assert (api["started_at"] is None) is not charged, status
        assert ("77 MiB" in page) is charged, status
    # Organizers see every figure and attempt, and a dev run keeps them for its team.
    organizer = cast.client("oscar").get(f"/api/v1/submissions/{run.pk}/").json()
    assert (organizer["attempts"], organizer["run_seconds"]) == (2, 7.3)
    dev = submission_create_system(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    Submission.objects.filter(pk=dev.pk).update(status=Status.SCORING, attempts=2, run_seconds=7.3,
                                                peak_memory_mb=77)
    assert alice.get(f"/api/v1/submissions/{dev.pk}/").json()["run_seconds"] == 7.3


def _platform_failed(cast: Cast, phase: Phase, n: int, *, hours_ago: float = 1) -> None:
    for _ in range(n):
        s = submission_create_system(team=cast.alpha, phase=phase, user=cast.alice, upload=bundle(),
                                     kind="code_bundle")
        Submission.objects.filter(pk=s.pk).update(
            status=Status.FAILED, failure_cause=FailureCause.PLATFORM, verdict=Verdict.PLATFORM, attempts=2,
            finished_at=timezone.now() - dt.timedelta(hours=hours_ago))


def test_more_platform_failures_in_a_day_than_allowed_hold_the_next_hidden_run_until_released(cast: Cast) -> None:
    system_phases(cast)
    _platform_failed(cast, cast.test, 3)
    _platform_failed(cast, cast.test, 5, hours_ago=30)  # yesterday's do not count
    first = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                     kind="code_bundle")
    assert not any(r.held_for_review for r in run_queue_order(queue="cpu"))  # 3 allowed (the default)
    Submission.objects.filter(pk=first.pk).delete()

    _platform_failed(cast, cast.test, 1)  # the fourth today
    held = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")
    dev = submission_create_system(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    order = {r.submission_id: r for r in run_queue_order(queue="cpu")}
    assert order[held.pk].held_for_review and not order[dev.pk].held_for_review  # dev data is public
    # No worker takes it, by the queue or by its id, and its message is not sent round meanwhile.
    assert submission_run_claim(held.pk, worker="host:1") is None
    claim = submission_run_claim_next(queue="cpu", worker="host:2")
    assert claim.plan is not None and claim.plan.submission_id == dev.pk
    again = submission_run_claim_next(queue="cpu", worker="host:2")
    assert again.plan is None and not again.held_back
    assert Submission.objects.get(pk=held.pk).status == Status.QUEUED

    # Visibly: the team's page and API say it is held; the organizers' queue shows it, with a release.
    alice = cast.client("alice")
    assert 'id="held-for-review">Held for the organizers' in alice.get(f"/c/demo/submissions/{held.pk}/").content.decode()
    assert "review" in alice.get(f"/api/v1/submissions/{held.pk}/").json()["held_for_review"]
    assert alice.get("/c/demo/submissions/").content.decode().count(">held for review</span>") == 1
    oscar = cast.client("oscar")
    queue_page = oscar.get("/c/demo/console/queue/").content.decode()
    assert "held for review" in queue_page and f"/submissions/{held.pk}/release/" in queue_page

    refused = alice.post(f"/api/v1/challenges/demo/console/submissions/{held.pk}/release/", {"reason": "me"})
    assert refused.status_code in (403, 404)
    done = oscar.post(f"/api/v1/challenges/demo/console/submissions/{held.pk}/release/",
                      {"reason": "looked at the failures: the disk, not the team"})
    assert done.status_code == 200, done.content
    assert AuditEntry.objects.filter(action="submission.hold_release").count() == 1
    assert alice.get(f"/api/v1/submissions/{held.pk}/").json()["held_for_review"] == ""
    plan = submission_run_claim(held.pk, worker="host:1")
    assert plan is not None and plan.submission_id == held.pk


def test_the_days_allowance_is_a_spec_setting(cast: Cast) -> None:
    assert SystemSettings().platform_failures_per_day == 3
    assert SystemSettings.from_json({"platform_failures_per_day": 0}).platform_failures_per_day == 0
    with pytest.raises(ValueError, match="platform_failures_per_day must be a whole number"):
        SystemSettings.from_json({"platform_failures_per_day": -1})
    system_phases(cast)
    cast.challenge.system_settings = {**cast.challenge.system_settings, "platform_failures_per_day": 0}
    cast.challenge.save()
    _platform_failed(cast, cast.test, 1)
    held = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")
    assert submission_run_claim(held.pk, worker="host:1") is None


@pytest.mark.parametrize("oddity", ["surrogate", "nul", "control", "over_long"])
def test_the_trusted_side_of_the_interactive_protocol_refuses_an_answer_by_the_same_rule(
    dialog_run: tuple[Any, str, Submission], oddity: str,
) -> None:
    """Stored in a JSON column, a NUL or a lone surrogate is refused by Postgres (a 500, were it let
    through): refused here first, 409 with the rule's words, nothing recorded."""
    client, url, _ = dialog_run
    text, _, words = ODDITIES[oddity]
    response = dialogs.post(client, url, mode="gold", dataset=0, dialog=0, turn=0, answer=dialogs.answer(text))
    assert response.status_code == 409 and words in response.json()["detail"], response.content[:300]
    assert not DialogAnswers.objects.exists()
