"""The organizer console's reads and actions, without a browser: what each action changes, what it
keeps, what the team and the public then see, and what the audit log says.

Who may do them at all is in test_console_permissions.py; the whole walk in a browser is in
test_console_browser.py.
"""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.accounts.services import api_token_create
from leaderboard.challenges.models import AuditEntry, TeamPhaseOverride
from leaderboard.console import services
from leaderboard.console.selectors import dataset_reveal_preview, queue_report, team_notices
from leaderboard.core.errors import Conflict, NotFound, QuotaExceeded, ServiceError
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import (
    submission_check_can_submit,
    submission_create_predictions,
    submission_create_system,
)
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import Score, ScoreHistory, Status, Submission
from leaderboard.submissions.rerun import submission_rerun
from leaderboard.submissions.selectors import quota_usage
from tests.builders.cast import gold_predictions, upload
from tests.builders.console import FAILED_LOG, ConsoleWorld, bundle, run_as_worker

pytestmark = pytest.mark.django_db


def board(w: ConsoleWorld, phase: str = "test", view: str = "") -> dict:
    url = f"/api/v1/challenges/demo/phases/{phase}/leaderboard/" + ("?view=organizer" if view else "")
    answer: dict = w.client("oscar" if view else "anonymous").get(url).json()
    return answer


def rows_by_team(w: ConsoleWorld, phase: str = "test", view: str = "") -> dict[str, dict]:
    return {r["team"]: r for r in board(w, phase, view)["rows"]}


def page(w: ConsoleWorld, role: str, url: str) -> str:
    response = w.client(role).get(url)
    assert response.status_code == 200, (url, response.status_code)
    return html.unescape(response.content.decode())


# --- re-run and re-score -----------------------------------------------------------------------


def test_a_prediction_file_scored_again_keeps_its_old_scores_in_its_history(
    console_world: ConsoleWorld, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks  # noqa: F811
) -> None:
    w = console_world
    before = dict(Score.objects.filter(submission=w.alpha_dev).values_list("metric", "value").filter(dataset=None))
    with django_capture_on_commit_callbacks(execute=True):  # eager: scored right after the commit
        history = submission_rerun(submission=w.alpha_dev, by=w.cast.oscar, reason="scorer fix 1.2 deployed")
    w.alpha_dev.refresh_from_db()
    assert w.alpha_dev.status == Status.FINISHED and w.alpha_dev.attempts == 1
    assert history.reason.startswith("scored again by oscar: scorer fix 1.2 deployed")
    assert history.primary_score == before["macro_f1"] and history.scoring_version
    kept = {(r["dataset"], r["metric"]): r for r in history.scores}
    assert kept[("squad", "f1")]["gold_sha256"] and kept[(None, "macro_f1")]["value"] == before["macro_f1"]
    # The board reads the newest scores: the same file scores the same.
    assert rows_by_team(w, "dev")["Alpha"]["Macro F1"] == pytest.approx(before["macro_f1"])
    entry = AuditEntry.objects.get(action="submission.rerun")
    assert entry.actor == w.cast.oscar and entry.reason == "scorer fix 1.2 deployed"
    assert entry.details["previous"]["status"] == "finished" and entry.details["history_id"] == history.pk
    # Organizers read the history on the submission's page; the team does not.
    assert "scorer fix 1.2 deployed" in page(w, "oscar", f"/c/demo/submissions/{w.alpha_dev.pk}/")
    assert "scorer fix 1.2 deployed" not in page(w, "alice", f"/c/demo/submissions/{w.alpha_dev.pk}/")


def test_a_failed_system_run_again_keeps_the_failure_and_the_board_takes_the_new_result(
    console_world: ConsoleWorld, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks  # noqa: F811
) -> None:
    w = console_world
    assert "Charlie's" not in rows_by_team(w)  # a failed participant run has no row
    with django_capture_on_commit_callbacks(execute=True):
        submission_rerun(submission=w.charlie_run, by=w.cast.oscar, reason="the engine lost the disk")
    run = Submission.objects.get(pk=w.charlie_run.pk)
    # Queued from scratch (eager mode cannot run a system: it waits for a worker).
    assert run.status == Status.QUEUED and run.attempts == 0 and run.log == "" and run.verdict == ""
    history = ScoreHistory.objects.get(submission=run)
    assert history.scores == [] and "it had failed (crashed): exited with code 3" in history.reason
    # What ran and how, and its whole log: the history keeps them (the audit keeps a tail).
    assert history.log == FAILED_LOG and history.run["exit_code"] == 3 and history.run["verdict"] == "crashed"
    assert ("image_id" in history.run) != ("bundle_sha256" in history.run)
    entry = AuditEntry.objects.get(action="submission.rerun")
    assert entry.details["previous"]["log_tail"] == FAILED_LOG and entry.details["previous"]["exit_code"] == 3

    run_as_worker(run, worker="systems@host-b:7")
    assert run.status == Status.FINISHED and run.attempts == 1
    assert rows_by_team(w)["Charlie's"]["XQuAD-en F1"] == pytest.approx(100)
    shown = page(w, "oscar", f"/c/demo/submissions/{run.pk}/")
    assert "Earlier scores" in shown and "exited with code 3" in shown and "ran fine" in shown
    assert "exit code 3" in shown and "Its log (" in shown


def test_a_submission_being_evaluated_or_imported_cannot_be_run_again(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    queued = submission_create_predictions(team=w.cast.charlies, phase=w.cast.dev, user=w.cast.charlie,
                                           upload=upload(gold_predictions()),
                                           limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    with pytest.raises(Conflict, match="only a finished or failed submission"):
        submission_rerun(submission=queued, by=w.cast.oscar, reason="why not")
    with pytest.raises(ServiceError, match="reason"):
        submission_rerun(submission=w.alpha_dev, by=w.cast.oscar, reason="   ")
    with pytest.raises(NotFound):
        submission_rerun(submission=w.alpha_dev, by=w.olga, reason="not mine")
    assert not AuditEntry.objects.exists() and not ScoreHistory.objects.exists()


# --- hide and disqualify -----------------------------------------------------------------------


def test_a_hidden_submission_leaves_the_public_board_and_its_team_reads_why(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    services.submission_hide(submission=w.alpha_test, actor=w.cast.oscar, reason="submitted by mistake, per the team")
    assert "Alpha" not in rows_by_team(w)
    # It represents its team nowhere (Alpha has no other test submission); the console lists it, hidden.
    assert "Alpha" not in rows_by_team(w, view="organizer")
    assert "submitted by mistake" in page(w, "oscar", "/c/demo/console/submissions/?phase=test")
    shown = page(w, "bob", f"/c/demo/submissions/{w.alpha_test.pk}/")
    assert "took it off the public boards: submitted by mistake, per the team" in shown
    services.submission_unhide(submission=w.alpha_test, actor=w.cast.oscar, reason="the team asked again")
    assert rows_by_team(w)["Alpha"]["rank"] == 1
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["submission.unhide", "submission.hide"]


def test_a_disqualified_submission_gives_way_to_the_teams_other_ones(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    services.submission_disqualify(submission=w.alpha_test, actor=w.cast.oscar, reason="used the test answers")
    # Alpha's only test submission: shown unranked, with the reason, to everyone.
    row = rows_by_team(w)["Alpha"]
    assert row["rank"] is None and row["excluded"] == "disqualified: used the test answers"
    assert "disqualified: used the test answers" in page(w, "alice", f"/c/demo/submissions/{w.alpha_test.pk}/")
    # With another finished submission, that one represents the team.
    other = submission_create_predictions(team=w.cast.alpha, phase=w.cast.test, user=w.cast.alice,
                                          upload=upload(gold_predictions("test", wrong_every=2)),
                                          limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)

    submission_evaluate(other.pk)
    row = rows_by_team(w)["Alpha"]
    assert row["rank"] == 1 and not row["excluded"]
    assert Submission.objects.get(board_entries__phase=w.cast.test, team=w.cast.alpha).pk == other.pk


def test_a_disqualified_team_stays_unranked_with_the_reason_and_a_hidden_one_leaves(
    console_world: ConsoleWorld,  # noqa: F811
) -> None:
    w = console_world
    services.team_disqualify(team=w.cast.alpha, actor=w.cast.oscar, reason="two accounts, one person")
    for phase in ("dev", "test"):
        row = rows_by_team(w, phase)["Alpha"]
        assert row["rank"] is None and row["excluded"] == "disqualified: two accounts, one person"
    assert "The organizers disqualified your team: two accounts, one person" in page(w, "alice", "/c/demo/team/")
    services.team_requalify(team=w.cast.alpha, actor=w.cast.oscar, reason="appeal upheld")
    assert rows_by_team(w)["Alpha"]["rank"] == 1

    services.team_hide(team=w.cast.alpha, actor=w.cast.oscar, reason="a test team of ours")
    assert "Alpha" not in rows_by_team(w) and "Alpha" not in rows_by_team(w, "dev")
    for url in ("/c/demo/board/test/", "/c/demo/board/test/export.csv", "/c/demo/board/dev/export.json"):
        assert "Alpha" not in page(w, "anonymous", url), url
    assert "Alpha" in rows_by_team(w, view="organizer")
    assert team_notices(team=w.cast.alpha) == ["The organizers hid your team from the public boards: a test team of ours."]
    assert "a test team of ours" in page(w, "bob", "/c/demo/team/")
    assert "a test team of ours" not in page(w, "charlie", "/c/demo/team/")


# --- extensions --------------------------------------------------------------------------------


def test_an_extension_moves_one_teams_deadline_and_quota(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    dev = w.cast.dev
    dev.closes_at = timezone.now() - dt.timedelta(hours=1)
    dev.quota_per_day = 1
    dev.save()
    with pytest.raises(ServiceError, match="closed"):
        submission_check_can_submit(team=w.cast.alpha, phase=dev, user=w.cast.alice, kind="predictions")
    with pytest.raises(ServiceError, match="must end later"):
        services.team_phase_extend(team=w.cast.alpha, phase=dev, actor=w.cast.oscar, reason="x",
                                   closes_at=dev.closes_at - dt.timedelta(days=1))
    until = timezone.now() + dt.timedelta(days=2)
    services.team_phase_extend(team=w.cast.alpha, phase=dev, actor=w.cast.oscar, reason="power cut at their lab",
                               closes_at=until, quota_per_day=3)
    submission_check_can_submit(team=w.cast.alpha, phase=dev, user=w.cast.alice, kind="predictions")
    with pytest.raises(ServiceError, match="closed"):  # the other teams keep the phase's deadline
        submission_check_can_submit(team=w.cast.charlies, phase=dev, user=w.cast.charlie, kind="predictions")
    usage = quota_usage(team=w.cast.alpha, phase=dev)
    assert usage.per_day == 3 and usage.used_today == 1 and usage.closes_at == until
    assert quota_usage(team=w.cast.charlies, phase=dev).per_day == 1
    for _ in range(2):
        submission_create_predictions(team=w.cast.alpha, phase=dev, user=w.cast.alice, upload=upload(gold_predictions()),
                                      limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, allow_duplicate=True)
    with pytest.raises(QuotaExceeded, match="3 of 3"):
        submission_create_predictions(team=w.cast.alpha, phase=dev, user=w.cast.alice, upload=upload(gold_predictions()),
                                      limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, allow_duplicate=True)
    assert f"until {until:%Y-%m-%d %H:%M} UTC" in page(w, "alice", "/c/demo/submit/")
    # All fields empty: the extension is removed.
    services.team_phase_extend(team=w.cast.alpha, phase=dev, actor=w.cast.oscar, reason="over")
    assert not TeamPhaseOverride.objects.exists()
    assert [e.action for e in AuditEntry.objects.order_by("id")] == ["team.extend", "team.extend_remove"]


# --- reveal and seal again ---------------------------------------------------------------------


def test_the_reveal_preview_lists_what_becomes_public_and_changes_nothing(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    preview = dataset_reveal_preview(dataset=w.coqa)
    assert w.coqa.revealed_at is None and not type(w.coqa).objects.filter(revealed_at__isnull=False).exists()
    assert preview.alias == "Hidden-07" and preview.submissions_scored == 1
    (test_board,) = preview.boards
    (alpha,) = test_board.rows
    newly = dict(alpha.newly_shown)
    # Its own scores, and the averages that were sealed because a CoQA score followed from them.
    assert newly["CoQA F1"] == 67.8912 and newly["CoQA EM"] == 61.2345
    assert newly["Macro F1"] == pytest.approx((81.25 + 67.8912) / 2) and "Split III F1" in newly
    assert "XQuAD-en F1" not in newly  # public already
    assert "CoQA" not in page(w, "anonymous", "/c/demo/board/test/")


def test_reveal_then_seal_again_and_the_board_follows(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    services.dataset_reveal_audited(dataset=w.coqa, actor=w.cast.oscar, reason="the challenge ended")
    assert rows_by_team(w)["Alpha"]["CoQA F1"] == 67.8912
    services.dataset_unreveal_audited(dataset=w.coqa, actor=w.cast.root, reason="too early: the workshop is next week")
    row = rows_by_team(w)["Alpha"]
    assert "CoQA F1" not in row and row["Hidden-07 F1"] is None and row["Macro F1"] is None
    assert [(e.action, e.actor and e.actor.username) for e in AuditEntry.objects.order_by("id")] == [
        ("dataset.reveal", "oscar"), ("dataset.unreveal", "root")]
    # The log reads in the buttons' words, the recorded key on hover.
    audit = page(w, "oscar", "/c/demo/console/audit/")
    cells = re.findall(r'<td data-label="Action" title="([^"]+)">([^<]+)</td>', audit)
    assert cells == [("dataset.unreveal", "Seal again"), ("dataset.reveal", "Reveal")]


def test_the_seal_does_not_change_under_a_running_system(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world

    running = submission_create_system(team=w.cast.charlies, phase=w.cast.test, user=w.cast.charlie,
                                       upload=bundle(), kind="code_bundle")
    assert submission_run_claim(running.pk, worker="systems@h:1") is not None
    with pytest.raises(Conflict, match="1 system run"):
        services.dataset_reveal_audited(dataset=w.coqa, actor=w.cast.oscar, reason="now")
    assert not AuditEntry.objects.exists()


# --- announcements, queue ----------------------------------------------------------------------


def test_an_announcement_is_on_the_challenge_page_until_withdrawn(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    note = services.announcement_create(challenge=w.cast.challenge, actor=w.cast.oscar,
                                        text="Test phase extended by a day.", reason="server outage")
    assert "Test phase extended by a day." in page(w, "anonymous", "/c/demo/")
    services.announcement_withdraw(announcement=note, actor=w.cast.oscar, reason="over")
    assert "Test phase extended by a day." not in page(w, "anonymous", "/c/demo/")


def test_the_queue_report_orders_each_queue_and_derives_heartbeats(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world

    first = submission_create_system(team=w.cast.charlies, phase=w.cast.test, user=w.cast.charlie, upload=bundle(),
                                     kind="code_bundle")
    second = submission_create_system(team=w.cast.alpha, phase=w.cast.test, user=w.cast.alice, upload=bundle(),
                                      kind="code_bundle")
    third = submission_create_system(team=w.cast.alpha, phase=w.cast.test, user=w.cast.bob, upload=bundle(),
                                     kind="code_bundle")
    file = submission_create_predictions(team=w.cast.charlies, phase=w.cast.dev, user=w.cast.charlie,
                                         upload=upload(gold_predictions()),
                                         limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_run_claim(first.pk, worker="systems@host-a:1")
    report = queue_report(challenge=w.cast.challenge)
    queues = {q.key: q for q in report.queues}
    assert [(x.position, x.submission.pk) for x in queues["systems"].waiting] == [(1, second.pk), (2, third.pk)]
    assert [x.submission.pk for x in queues["files"].waiting] == [file.pk]
    (worker,) = report.workers
    first.refresh_from_db()
    assert worker.name == "systems@host-a:1" and worker.running[0].submission == first
    assert first.lease_expires_at is not None
    assert worker.last_heartbeat == first.lease_expires_at - dt.timedelta(seconds=settings.RUN_LEASE_S)
    lease_age_s = worker.running[0].lease_age_s
    assert lease_age_s is not None and 0 <= lease_age_s < 30
    # Another challenge's run shows as busy, nothing of it named.
    other = queue_report(challenge=w.other)
    assert other.workers[0].running[0].submission is None and other.queues[0].total == 2
    assert other.queues[0].waiting == []


def test_the_console_pages_show_every_teams_submissions_filtered_and_paged(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    shown = page(w, "oscar", "/c/demo/console/submissions/?status=failed")
    assert f"/c/demo/submissions/{w.charlie_run.pk}/" in shown and "exited with code 3" in shown
    assert f"/c/demo/submissions/{w.alpha_dev.pk}/" not in shown and "systems@host-a:101" in shown
    response = w.client("oscar").get("/c/demo/console/submissions/?status=finshed")
    assert response.status_code == 400 and "status must be one of" in html.unescape(response.content.decode())
    api = w.client("oscar").get(f"/api/v1/challenges/demo/console/submissions/?team={w.cast.alpha.pk}").json()
    assert api["count"] == 2 and {s["team"] for s in api["results"]} == {"Alpha"}
    assert w.client("oscar").get("/api/v1/challenges/demo/console/submissions/?phase=nope").status_code == 400
    for i in range(55):
        Submission.objects.create(team=w.cast.charlies, phase=w.cast.dev, kind="predictions", status="cancelled",
                                  description=f"filler {i}")
    first = w.client("oscar").get("/api/v1/challenges/demo/console/submissions/").json()
    assert first["count"] == 58 and first["pages"] == 2 and len(first["results"]) == 50
    shown = page(w, "oscar", "/c/demo/console/submissions/?status=cancelled&page=2")
    assert "page 2 of 2" in shown and "status=cancelled&page=1" in shown


def test_the_api_schema_documents_the_console() -> None:
    schema = Client().get("/api/schema/").content.decode()
    for path in ("/console/submissions/", "/console/queue/", "/console/audit/", "/console/teams/",
                 "/console/announcements/", "/console/{target}/{key}/{action}/"):
        assert path in schema, path


def test_a_script_extends_a_deadline_and_reads_the_reveal_preview(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    api = Client(HTTP_AUTHORIZATION=f"Token {api_token_create(user=w.cast.oscar, name='script')[1]}")
    base = "/api/v1/challenges/demo/console"
    said = api.get(f"{base}/teams/{w.cast.alpha.pk}/extend/").json()
    assert said["fields"] == ["phase", "closes_at", "quota_per_day", "quota_total", "reason"]
    done = api.post(f"{base}/teams/{w.cast.alpha.pk}/extend/",
                    {"phase": "test", "closes_at": "2099-03-01T12:00:00Z", "reason": "power cut"})
    assert done.status_code == 200, done.content
    assert done.json()["result"]["extensions"][0]["closes_at"].startswith("2099-03-01T12:00:00")
    assert done.json()["audit"]["action"] == "team.extend"
    preview = api.get(f"{base}/datasets/coqa/reveal/").json()["preview"]
    assert preview["public_name_now"] == "Hidden-07" and preview["public_name_after"] == "CoQA"
    assert preview["boards"][0]["rows"][0]["becomes_public"]["CoQA F1"] == 67.8912
    refused = api.post(f"{base}/datasets/xquad-en/reveal/", {"reason": "oops"})
    assert refused.status_code == 409 and "never sealed" in refused.json()["detail"]
    assert api.get(f"{base}/datasets/nope/reveal/").status_code == 404
    assert api.get(f"{base}/datasets/coqa/explode/").status_code == 404


def test_a_team_with_a_later_deadline_is_still_invited_to_submit_on_the_challenge_page(
    console_world: ConsoleWorld,  # noqa: F811
) -> None:
    w = console_world
    past = timezone.now() - dt.timedelta(hours=1)
    w.cast.challenge.phases.update(closes_at=past)
    w.cast.test.refresh_from_db()
    assert "This challenge is closed" in page(w, "alice", "/c/demo/")
    services.team_phase_extend(team=w.cast.alpha, phase=w.cast.test, actor=w.cast.oscar, reason="late start",
                               closes_at=timezone.now() + dt.timedelta(days=1))
    shown = page(w, "alice", "/c/demo/")
    assert "This challenge is closed" not in shown and "/c/demo/submit/" in shown
    assert "This challenge is closed" in page(w, "charlie", "/c/demo/")


def test_the_overview_counts_platform_errors_apart_from_the_teams_failures(console_world: ConsoleWorld) -> None:  # noqa: F811
    w = console_world
    before = Submission.objects.filter(phase__challenge=w.cast.challenge, status=Status.FAILED).count()
    for i in range(8):
        Submission.objects.create(team=w.cast.charlies, phase=w.cast.dev, kind="code_bundle", status="failed",
                                  failure_cause="platform", failure_reason="the platform could not run it",
                                  description=f"engine down {i}")
    shown = page(w, "oscar", "/c/demo/console/")
    counts = dict(re.findall(r'<li data-count="(\w+)">.*?<strong>(\d+)</strong>', shown))
    # The eight are the platform's, in words; the teams' own failures are counted on their own.
    assert counts["platform"] == "8" and counts["failed"] == str(before)
    assert "platform errors (not the teams' fault, not counted)" in shown
    assert "failed (the submission's fault)" in shown
    listed = page(w, "oscar", "/c/demo/console/submissions/?status=failed&cause=platform")
    assert "8 submissions" in listed and f"/c/demo/submissions/{w.charlie_run.pk}/" not in listed
    own = page(w, "oscar", "/c/demo/console/submissions/?status=failed&cause=participant")
    assert f"/c/demo/submissions/{w.charlie_run.pk}/" in own and "engine down" not in own
    refused = w.client("oscar").get("/c/demo/console/submissions/?cause=weather")
    assert refused.status_code == 400 and "cause must be one of" in html.unescape(refused.content.decode())
