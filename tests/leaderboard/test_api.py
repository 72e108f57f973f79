"""The REST API as a team's script uses it: a token, an upload, then the submission's scores.

Every error answers JSON ``{"detail": ...}`` with a 4xx status.
"""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
import yaml
from django.test import Client
from drf_spectacular.validation import validate_schema
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_digest
from leaderboard.challenges.models import TeamPhaseOverride
from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast, gold_predictions

SUBMISSIONS = "/api/v1/challenges/demo/submissions/"


def named(content: bytes | dict, name: str = "preds.json") -> io.BytesIO:
    if isinstance(content, dict):
        content = json.dumps(content).encode()
    file = io.BytesIO(content)
    file.name = name
    return file


def token_client(cast: Cast, username: str) -> Client:
    response = Client().post("/api/v1/auth/token/", {"username": username, "password": f"{username}-pw"})
    assert response.status_code == 200, response.content
    return Client(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")


def test_a_token_is_issued_for_a_username_and_password(cast: Cast) -> None:
    response = Client().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"})
    assert response.status_code == 200
    key = response.json()["token"]
    assert response.json() == {"token": key, "name": "api"}
    assert ApiToken.objects.get(user=cast.alice).digest == api_token_digest(key)


def test_a_wrong_password_gets_no_token(cast: Cast) -> None:
    response = Client().post("/api/v1/auth/token/", {"username": "alice", "password": "nope"})
    assert response.status_code == 400
    assert response.json()["detail"] == "Unable to log in with provided credentials."
    assert not ApiToken.objects.filter(user=cast.alice).exists()


def test_submitting_returns_201_with_status_and_queue_position_then_scores(
    cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    alice = token_client(cast, "alice")
    charlie = token_client(cast, "charlie")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        first = charlie.post(SUBMISSIONS, {"phase": "dev", "file": named(gold_predictions(wrong_every=2))})
        response = alice.post(SUBMISSIONS, {"phase": "dev", "file": named(gold_predictions()),
                                            "description": "gold answers"})
        assert first.status_code == 201
        assert response.status_code == 201, response.content
        created = response.json()
        # Charlie's upload is ahead in the queue: the worker has not run yet (it runs on commit).
        assert created["status"] == Status.QUEUED
        assert created["queue_position"] == 2
        assert first.json()["queue_position"] == 1
        assert created["team"] == "Alpha" and created["phase"] == "dev" and created["description"] == "gold answers"
        assert created["scores"] == [] and created["primary_score"] is None
    assert len(callbacks) == 2

    detail = alice.get(f"/api/v1/submissions/{created['id']}/")
    assert detail.status_code == 200
    data = detail.json()
    assert data["status"] == Status.FINISHED
    assert data["queue_position"] is None
    assert data["primary_score"] == pytest.approx(100.0)
    scores = {(s["dataset"], s["metric"]): s["value"] for s in data["scores"]}
    assert scores[("SQuAD", "f1")] == pytest.approx(100.0)
    assert scores[("XQuAD-en", "em")] == pytest.approx(100.0)
    assert scores[("Overall", "macro_f1")] == pytest.approx(100.0)
    assert not any(s["sealed"] for s in data["scores"])
    # The list shows the team's submissions, newest first, with the same payload.
    listed = alice.get(SUBMISSIONS).json()
    assert [s["id"] for s in listed] == [created["id"]]
    assert listed[0]["scores"] == data["scores"]
    # And the leaderboard ranks it.
    board = Client().get("/api/v1/challenges/demo/phases/dev/leaderboard/").json()
    assert [(r["rank"], r["team"]) for r in board["rows"]] == [(1, "Alpha"), (2, "Charlie's")]
    assert board["rows"][0]["Macro F1"] == pytest.approx(100.0)


def test_a_failed_submission_says_why_in_the_api(
    cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    alice = token_client(cast, "alice")
    with django_capture_on_commit_callbacks(execute=True):
        created = alice.post(SUBMISSIONS, {"phase": "dev", "file": named(gold_predictions())}).json()
        # The stored file goes missing before the worker reads it: the platform's fault, not the team's.
        submission = Submission.objects.get(pk=created["id"])
        assert submission.file.name is not None
        submission.file.storage.delete(submission.file.name)
    data = alice.get(f"/api/v1/submissions/{created['id']}/").json()
    assert data["status"] == Status.FAILED
    assert data["failure_cause"] == "platform"
    assert "does not count against your quota" in data["failure_reason"]


def test_the_challenge_and_its_leaderboard_are_public(cast: Cast) -> None:
    client = Client()
    assert client.get("/api/v1/challenges/").json() == [
        {"slug": "demo", "title": "Demo MRQA", "metric_suite": "mrqa"}
    ]
    response = client.get("/api/v1/challenges/demo/")
    # "visible_to_you" depends on the caller: no shared cache may answer for another.
    assert "private" in response["Cache-Control"]
    assert {"Authorization", "Cookie"} <= {v.strip() for v in response["Vary"].split(",")}
    detail = response.json()
    assert [p["slug"] for p in detail["phases"]] == ["dev", "test"]
    assert detail["phases"][0]["quota"] == {"per_day": 5, "total": None, "concurrent": None}
    assert [(d["name"], d["split"], d["state"], d["visible_to_you"]) for d in detail["datasets"]] == [
        ("SQuAD", "I", "public", True), ("XQuAD-en", "II", "public", True), ("Hidden-07", "III", "sealed", False),
    ]
    board = client.get("/api/v1/challenges/demo/phases/test/leaderboard/").json()
    method = board.pop("significance")
    assert method["status"] == "none" and "paired bootstrap" in method["method"]  # no rows to compare
    # A sealed dataset in the phase: by default (sealed_aggregates: all) the public board ranks on the
    # datasets it shows, and says so.
    assert board == {"challenge": "demo", "phase": "test", "view": "public", "ranked_by": "macro_f1",
                     "ranking": "Macro F1 over the datasets shown", "withheld": {}, "rows": [],
                     "ranking_note": "Ranked by Macro F1 over the datasets shown: sealed datasets are left out of "
                                     "the average until the organizers reveal them (their scores must not follow "
                                     "from it, nor from the order of the rows); equal scores share a rank."}


def test_the_challenge_says_what_quota_the_callers_team_has_left(
    cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    """What the command-line client's ``challenges`` shows: per phase, the caller's team's quota as the
    intake counts it (the dev phase allows 5 a day), and the team's name; nothing for anyone else."""
    alice = token_client(cast, "alice")
    with django_capture_on_commit_callbacks(execute=True):
        assert alice.post(SUBMISSIONS, {"phase": "dev", "file": named(gold_predictions())}).status_code == 201
    detail = alice.get("/api/v1/challenges/demo/").json()
    assert detail["your_team"] == "Alpha"
    dev, test = detail["phases"]
    assert dev["your_quota"] == {"used_today": 1, "used_total": 1, "active": 0, "per_day": 5, "total": None,
                                 "concurrent": None, "left_today": 4, "left_total": None, "refusal": "",
                                 "closes_at": None}
    assert test["your_quota"]["used_total"] == 0 and test["your_quota"]["left_today"] is None
    # Bob is on the same team: the same count; Charlie's team has used nothing.
    assert token_client(cast, "bob").get("/api/v1/challenges/demo/").json()["phases"][0]["your_quota"]["left_today"] == 4
    assert token_client(cast, "charlie").get("/api/v1/challenges/demo/").json()["phases"][0]["your_quota"]["used_today"] == 0
    # An extension for the team raises its limit and says until when it may submit.
    TeamPhaseOverride.objects.create(team=cast.alpha, phase=cast.dev, quota_per_day=7,
                                     closes_at=dt.datetime(2099, 6, 1, tzinfo=dt.UTC))
    dev = alice.get("/api/v1/challenges/demo/").json()["phases"][0]
    assert (dev["your_quota"]["left_today"], dev["your_quota"]["closes_at"]) == (6, "2099-06-01T00:00:00Z")
    for outsider in (token_client(cast, "dave"), Client()):
        detail = outsider.get("/api/v1/challenges/demo/").json()
        assert detail["your_team"] is None and [p["your_quota"] for p in detail["phases"]] == [None, None]


def test_a_used_up_daily_quota_is_said_as_the_intake_refuses_it(cast: Cast) -> None:
    for _ in range(5):
        Submission.objects.create(team=cast.alpha, phase=cast.dev, status=Status.FINISHED)
    quota = token_client(cast, "alice").get("/api/v1/challenges/demo/").json()["phases"][0]["your_quota"]
    assert quota["left_today"] == 0
    assert quota["refusal"] == "daily quota reached: 5 of 5 submissions in the last 24 hours"


# --- the OpenAPI schema ------------------------------------------------------------------------------


def test_the_openapi_schema_is_valid_and_lists_the_submission_endpoints(cast: Cast) -> None:
    response = Client().get("/api/schema/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
    schema = yaml.safe_load(response.content)
    validate_schema(schema)  # against the OpenAPI 3 JSON schema bundled with drf-spectacular
    as_json = Client().get("/api/schema/?format=json")
    assert as_json.status_code == 200
    assert json.loads(as_json.content) == schema

    paths = schema["paths"]
    assert schema["openapi"].startswith("3.")
    assert set(paths["/api/v1/challenges/{slug}/submissions/"]) >= {"get", "post"}
    assert "get" in paths["/api/v1/submissions/{id}/"]
    assert "post" in paths["/api/v1/auth/token/"]
    assert "get" in paths["/api/v1/challenges/{slug}/phases/{phase_slug}/leaderboard/"]
    # The challenge's answer is described field by field, the caller's quota included.
    phase = schema["components"]["schemas"]["PhaseOutput"]["properties"]
    assert {"allowed_kinds", "protocol", "quota", "your_quota", "closes_at"} <= set(phase)
    quota = schema["components"]["schemas"]["TeamQuotaOutput"]["properties"]
    assert {"left_today", "left_total", "refusal", "closes_at"} <= set(quota)
    detail = paths["/api/v1/challenges/{slug}/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert detail == {"$ref": "#/components/schemas/ChallengeDetailOutput"}
    post = paths["/api/v1/challenges/{slug}/submissions/"]["post"]
    assert "201" in post["responses"]
    assert "multipart/form-data" in post["requestBody"]["content"]
    security = {k for item in post.get("security", []) for k in item}
    assert {"tokenAuth", "cookieAuth"} <= security


# --- errors are JSON {"detail": ...} with a 4xx --------------------------------------------------------


def error_cases(cast: Cast) -> list[tuple[str, Client, str, str, dict | str | None, int, str]]:
    alice = token_client(cast, "alice")
    dave = token_client(cast, "dave")
    return [
        ("no credentials", Client(), "get", SUBMISSIONS, None, 401, "Authentication credentials were not provided."),
        ("bad token", Client(HTTP_AUTHORIZATION="Token 0123456789abcdef"), "get", SUBMISSIONS, None, 401,
         "Invalid token."),
        ("unknown challenge", alice, "get", "/api/v1/challenges/nope/", None, 404, "No Challenge matches"),
        ("unknown board", alice, "get", "/api/v1/challenges/demo/phases/nope/leaderboard/", None, 404,
         "No Phase matches"),
        ("unknown submission", alice, "get", "/api/v1/submissions/999999/", None, 404, "No such submission"),
        ("method not allowed", alice, "delete", "/api/v1/submissions/1/", None, 405,
         'Method "DELETE" not allowed.'),
        ("JSON body to a file upload", alice, "post", SUBMISSIONS, json.dumps({"phase": "dev"}), 415,
         'Unsupported media type "application/json"'),
        ("no phase", alice, "post", SUBMISSIONS, {"file": named(gold_predictions())}, 400,
         "phase: This field is required."),
        ("unknown phase", alice, "post", SUBMISSIONS, {"phase": "final", "file": named(gold_predictions())}, 404,
         "no phase 'final' in this challenge"),
        ("no team", dave, "post", SUBMISSIONS, {"phase": "dev", "file": named(gold_predictions())}, 400,
         "you are not in a team for this challenge; create or join one first"),
        ("bad upload", alice, "post", SUBMISSIONS, {"phase": "dev", "file": named(b"{oops")}, 400,
         "preds.json: not valid JSON"),
    ]


CASE_NAMES = ["no credentials", "bad token", "unknown challenge", "unknown board", "unknown submission",
              "method not allowed", "JSON body to a file upload", "no phase", "unknown phase", "no team", "bad upload"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_errors_are_json_detail_with_a_4xx(cast: Cast, case: str) -> None:
    cases = {c[0]: c for c in error_cases(cast)}
    _, client, method, url, data, status, fragment = cases[case]
    if method == "get":
        response = client.get(url)
    elif method == "delete":
        response = client.delete(url)
    elif isinstance(data, str):
        response = client.post(url, data, content_type="application/json")
    else:
        response = client.post(url, data)
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["detail"], str) and fragment in body["detail"], body
    assert Submission.objects.count() == 0


def test_every_answer_to_a_caller_with_credentials_is_private_to_that_caller(cast: Cast) -> None:
    """A shared cache must never hand one team's answer to another: the team's submission list, the
    Data listing and the starting kit depend on who asks (the audit found them without headers)."""
    alice = token_client(cast, "alice")
    session = cast.client("alice")
    for client, url in ((alice, "/api/v1/challenges/demo/submissions/"), (alice, "/api/v1/challenges/demo/data/"),
                        (session, "/c/demo/data/"), (session, "/c/demo/"), (alice, "/api/v1/challenges/")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "private" in response["Cache-Control"], url
        assert {"Authorization", "Cookie"} <= {v.strip() for v in response["Vary"].split(",")}, url
    # The organizer view keeps its no-store.
    assert "no-store" in cast.client("oscar").get("/c/demo/board/test/organizer/")["Cache-Control"]
    # An anonymous page read by no one in particular may be cached.
    assert "private" not in Client().get("/c/demo/").get("Cache-Control", "")
