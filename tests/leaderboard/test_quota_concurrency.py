"""Quotas under load: 20 uploads at once from one team with a daily quota of 5 accept exactly 5.

Done for real: a live HTTP server (one thread per request, each with its own database
connection), 20 client threads released together by a barrier.  SQLite's IMMEDIATE
transactions (Postgres: the team row's SELECT FOR UPDATE) serialise count-then-insert.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from leaderboard.accounts.services import api_token_create
from leaderboard.challenges.models import SubmissionKind
from leaderboard.core.errors import QuotaExceeded
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.lifecycle import submission_cancel
from leaderboard.submissions.models import FailureCause, Status, Submission
from leaderboard.submissions.selectors import quota_usage
from tests.builders.cast import Cast, gold_predictions, upload

N_THREADS = 20
QUOTA = 5  # the dev phase's per_day quota in the cast


def stored_files() -> set[Path]:
    root = Path(settings.PRIVATE_STORAGE_ROOT) / "submissions"
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def run_together(n: int, work: Callable[[int], tuple[int, str]]) -> list[tuple[int, str]]:
    """Run ``work(i)`` in n threads released at the same instant; re-raise any thread's error."""
    barrier = threading.Barrier(n)
    results: list[tuple[int, str] | None] = [None] * n
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as exc:  # noqa: B036 (reported to the main thread)
            errors.append(exc)
        finally:
            connection.close()  # this thread's own connection, if it opened one

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread is still running"
    assert not errors, errors
    return [r for r in results if r is not None]


def assert_exactly_quota_accepted(cast: Cast, outcomes: list[tuple[int, str]], *, accepted: int,
                                  files_before: set[Path]) -> None:
    statuses = Counter(status for status, _ in outcomes)
    assert statuses == {accepted: QUOTA, 429: N_THREADS - QUOTA}, outcomes
    for status, message in outcomes:
        if status == 429:
            assert f"daily quota reached: {QUOTA} of {QUOTA} submissions in the last 24 hours" in message, message
    assert Submission.objects.filter(team=cast.alpha, phase=cast.dev).count() == QUOTA
    assert len(stored_files() - files_before) == QUOTA


@pytest.mark.django_db(transaction=True)
def test_twenty_api_uploads_at_once_accept_exactly_the_quota(cast: Cast, live_server: LiveServer) -> None:
    payload = json.dumps(gold_predictions()).encode()
    tokens = [api_token_create(user=cast.alice, name="t")[1], api_token_create(user=cast.bob, name="t")[1]]  # both upload
    url = f"{live_server.url}/api/v1/challenges/demo/submissions/"
    before = stored_files()

    def work(i: int) -> tuple[int, str]:
        response = requests.post(
            url,
            headers={"Authorization": f"Token {tokens[i % 2]}"},
            # The same file twenty times: confirmed, so that only the quota decides (duplicate_refuse).
            data={"phase": "dev", "description": f"thread {i}", "allow_duplicate": "true"},
            files={"file": (f"preds-{i}.json", payload, "application/json")},
            timeout=120,
        )
        body = response.json()
        return response.status_code, body.get("detail", "") if response.status_code != 201 else body["status"]

    outcomes = run_together(N_THREADS, work)
    assert_exactly_quota_accepted(cast, outcomes, accepted=201, files_before=before)
    # The accepted ones were scored (eagerly, after their commit) and finished.
    assert set(Submission.objects.filter(team=cast.alpha).values_list("status", flat=True)) == {Status.FINISHED}


@pytest.mark.django_db(transaction=True)
def test_twenty_web_form_uploads_at_once_accept_exactly_the_quota(cast: Cast, live_server: LiveServer) -> None:
    payload = json.dumps(gold_predictions()).encode()
    # A logged-in browser session (cookie) and its CSRF token, as a browser would hold them.
    client = Client()
    client.force_login(cast.alice)
    session_id = client.cookies[settings.SESSION_COOKIE_NAME].value
    first = requests.get(f"{live_server.url}/c/demo/submit/", cookies={settings.SESSION_COOKIE_NAME: session_id},
                         timeout=30)
    assert first.status_code == 200
    csrf = first.cookies[settings.CSRF_COOKIE_NAME]
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', first.text)
    assert csrf is not None and found is not None
    form_token = found.group(1)
    before = stored_files()

    def work(i: int) -> tuple[int, str]:
        response = requests.post(
            f"{live_server.url}/c/demo/submit/",
            cookies={settings.SESSION_COOKIE_NAME: session_id, settings.CSRF_COOKIE_NAME: csrf},
            headers={"Referer": f"{live_server.url}/c/demo/submit/"},
            data={"phase": str(cast.dev.pk), "description": f"thread {i}", "csrfmiddlewaretoken": form_token,
                  "allow_duplicate": "on"},
            files={"file": (f"preds-{i}.json", payload, "application/json")},
            allow_redirects=False,
            timeout=120,
        )
        return response.status_code, response.text

    outcomes = run_together(N_THREADS, work)
    assert_exactly_quota_accepted(cast, outcomes, accepted=302, files_before=before)


@pytest.mark.django_db(transaction=True)
def test_twenty_service_calls_in_threads_accept_exactly_the_quota(cast: Cast) -> None:
    """The same race without HTTP: each thread calls the service on its own database connection."""
    payload = json.dumps(gold_predictions()).encode()
    before = stored_files()

    def work(i: int) -> tuple[int, str]:
        try:
            submission_create_predictions(
                team=cast.alpha, phase=cast.dev, user=cast.bob if i % 2 else cast.alice,
                upload=upload(payload, name=f"preds-{i}.json"), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
                allow_duplicate=True,
            )
        except QuotaExceeded as exc:
            return 429, exc.message
        return 201, ""

    outcomes = run_together(N_THREADS, work)
    assert_exactly_quota_accepted(cast, outcomes, accepted=201, files_before=before)


# --- what counts against a quota -------------------------------------------------------------------


def _row(cast: Cast, status: str, cause: str = "", *, hours_ago: float = 0) -> Submission:
    submission = Submission.objects.create(
        team=cast.alpha, phase=cast.dev, submitted_by=cast.alice, kind=SubmissionKind.PREDICTIONS,
        status=status, failure_cause=cause,
    )
    if hours_ago:
        Submission.objects.filter(pk=submission.pk).update(created_at=timezone.now() - dt.timedelta(hours=hours_ago))
    return submission


def test_platform_failures_and_cancelled_submissions_do_not_count(cast: Cast) -> None:
    for _ in range(3):
        _row(cast, Status.FAILED, FailureCause.PLATFORM)
    for _ in range(4):
        _row(cast, Status.CANCELLED)
    usage = quota_usage(team=cast.alpha, phase=cast.dev)
    assert (usage.used_today, usage.used_total, usage.active) == (0, 0, 0)
    assert usage.refusal() is None


def test_participant_failures_finished_and_active_submissions_count(cast: Cast) -> None:
    _row(cast, Status.FAILED, FailureCause.PARTICIPANT)
    _row(cast, Status.FINISHED)
    _row(cast, Status.QUEUED)
    _row(cast, Status.RUNNING)
    _row(cast, Status.FAILED, FailureCause.PLATFORM)
    _row(cast, Status.CANCELLED)
    usage = quota_usage(team=cast.alpha, phase=cast.dev)
    assert (usage.used_today, usage.used_total, usage.active) == (4, 4, 2)
    _row(cast, Status.SCORING)
    assert quota_usage(team=cast.alpha, phase=cast.dev).refusal() == (
        "daily quota reached: 5 of 5 submissions in the last 24 hours"
    )


def test_the_daily_window_is_the_last_24_hours(cast: Cast) -> None:
    for _ in range(5):
        _row(cast, Status.FINISHED, hours_ago=24.5)
    _row(cast, Status.FINISHED, hours_ago=23.5)
    usage = quota_usage(team=cast.alpha, phase=cast.dev)
    assert (usage.used_today, usage.used_total) == (1, 6)
    assert usage.refusal() is None


def test_other_teams_and_phases_do_not_count(cast: Cast) -> None:
    for _ in range(5):
        Submission.objects.create(team=cast.charlies, phase=cast.dev, kind=SubmissionKind.PREDICTIONS,
                                  status=Status.FINISHED)
        Submission.objects.create(team=cast.alpha, phase=cast.test, kind=SubmissionKind.PREDICTIONS,
                                  status=Status.FINISHED)
    assert quota_usage(team=cast.alpha, phase=cast.dev).used_today == 0


def test_total_and_concurrent_quotas_refuse_with_their_own_message(cast: Cast) -> None:
    cast.dev.quota_per_day = None
    cast.dev.quota_total = 2
    cast.dev.save()
    _row(cast, Status.FINISHED, hours_ago=48)
    _row(cast, Status.FINISHED, hours_ago=30)
    assert quota_usage(team=cast.alpha, phase=cast.dev).refusal() == (
        "total quota reached: 2 of 2 submissions in this phase"
    )
    cast.dev.quota_total = None
    cast.dev.quota_concurrent = 1
    cast.dev.save()
    _row(cast, Status.QUEUED)
    assert quota_usage(team=cast.alpha, phase=cast.dev).refusal() == (
        "1 submission(s) still being evaluated; at most 1 at once"
    )


def test_a_cancelled_upload_frees_its_place_in_the_quota(cast: Cast) -> None:
    submissions = [
        submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                      upload=upload(gold_predictions()), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
                                      allow_duplicate=True)
        for _ in range(QUOTA)
    ]
    with pytest.raises(QuotaExceeded):
        submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                      upload=upload(gold_predictions()), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
                                      allow_duplicate=True)
    submission_cancel(submission=submissions[0], user=cast.bob)
    Submission.objects.filter(pk=submissions[1].pk).update(status=Status.FAILED, failure_cause=FailureCause.PLATFORM)
    for _ in range(2):
        submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                      upload=upload(gold_predictions()), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
                                      allow_duplicate=True)
    with pytest.raises(QuotaExceeded, match="5 of 5"):
        submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                      upload=upload(gold_predictions()), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
                                      allow_duplicate=True)


def test_the_quota_answer_is_429_with_the_reason_on_web_and_api(cast: Cast) -> None:
    for _ in range(QUOTA):
        _row(cast, Status.FINISHED)
    preds = json.dumps(gold_predictions()).encode()
    web = cast.client("bob").post("/c/demo/submit/", {"phase": cast.dev.pk, "file": _named(preds)})
    assert web.status_code == 429
    assert "daily quota reached: 5 of 5" in web.content.decode()
    api = cast.client("bob").post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": _named(preds)})
    assert api.status_code == 429
    assert api.json() == {"detail": "daily quota reached: 5 of 5 submissions in the last 24 hours"}
    assert Submission.objects.count() == QUOTA


def _named(content: bytes) -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = "preds.json"
    return file
