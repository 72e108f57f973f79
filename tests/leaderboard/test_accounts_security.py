"""What a security review asks of the web side: redirects, secrets in error reports, deadlines,
file modes, and API tokens their owner can rotate and revoke.

The cast is conftest's: alice (team Alpha) and the others, on the small demo challenge.
"""

from __future__ import annotations

import datetime as dt
import importlib
import io
import json
import os
import re
import shutil
import socket
import stat
import time
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper
from django.http import HttpRequest
from django.test import Client, RequestFactory
from django.urls import resolve
from django.utils import timezone
from django.views.debug import ExceptionReporter
from pytest_django.live_server_helper import LiveServer
from rest_framework.test import APIRequestFactory

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import (
    API_TOKEN_LIMIT,
    api_token_create,
    api_token_digest,
    api_token_obtain,
)
from leaderboard.core.errors import ServiceError
from leaderboard.settings.base import private_dir, sqlite_database
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from tests.builders.accounts import PASSWORD, token_id
from tests.builders.cast import REPO, Cast, gold_predictions, upload
from tests.builders.responses import ClientResponse


def mode(path: str | Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# --------------------------------------------------------------------------- sign-up's next


def signup(client: Client, query: str = "", username: str = "erin") -> ClientResponse:
    return client.post(f"/accounts/signup/{query}",
                       {"username": username, "email": f"{username}@example.org", "password1": PASSWORD,
                        "password2": PASSWORD})


@pytest.mark.parametrize("target", [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example/",
    "\\\\evil.example",
    "http://testserver.evil.example/",
    "https:evil.example",
    "javascript:alert(1)",
])
def test_sign_up_refuses_to_send_a_new_user_off_site(db: None, target: str) -> None:
    response = signup(Client(), "?" + f"next={target}".replace("&", "%26"))
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_sign_up_refuses_an_off_site_next_in_the_form_too(db: None) -> None:
    response = Client().post("/accounts/signup/", {"username": "erin", "email": "erin@example.org",
                                                   "password1": PASSWORD, "password2": PASSWORD,
                                                   "next": "https://evil.example/"})
    assert response["Location"] == "/"


def test_sign_up_honours_a_path_on_this_site(cast: Cast) -> None:
    response = signup(Client(), "?next=/c/demo/board/dev/%3Fview%3Dorganizer")
    assert response.status_code == 302
    assert response["Location"] == "/c/demo/board/dev/?view=organizer"
    assert User.objects.filter(username="erin").exists()


@pytest.mark.parametrize("target", ["no-such-page", "home", "team", ""])
def test_sign_up_with_an_unknown_or_bare_next_goes_home_not_to_a_500(db: None, target: str) -> None:
    response = signup(Client(raise_request_exception=False), f"?next={target}")
    assert response.status_code == 302
    assert response["Location"] == "/"


# --------------------------------------------------------------------------- secrets in error reports


def report_of(view: Callable[[HttpRequest], object], request: HttpRequest) -> str:
    """The error report Django would mail or log for ``request`` failing in ``view``."""
    with pytest.raises(RuntimeError) as failure:
        view(request)
    reporter = ExceptionReporter(request, failure.type, failure.value, failure.tb)
    return reporter.get_traceback_text() + reporter.get_traceback_html()


def test_sign_up_passwords_never_reach_an_error_report(db: None) -> None:
    request = RequestFactory().post("/accounts/signup/", {"username": "erin-the-user", "email": "erin@example.org",
                                                          "password1": PASSWORD, "password2": PASSWORD})
    with mock.patch.object(UserCreationForm, "save", side_effect=RuntimeError("disk full")):
        text = report_of(resolve("/accounts/signup/").func, request)
    assert "disk full" in text and "erin-the-user" in text  # the report is there, with the POST data
    assert PASSWORD not in text
    assert request.sensitive_post_parameters == ("password1", "password2")  # type: ignore[attr-defined]


def test_the_login_form_marks_every_post_value_sensitive(cast: Cast) -> None:
    request = RequestFactory().post("/accounts/login/", {"username": "alice", "password": "alice-pw"})
    request.session = SessionStore()  # what SessionMiddleware would set (nothing in it)
    request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
    with mock.patch("django.contrib.auth.views.LoginView.post", side_effect=RuntimeError("boom")):
        text = report_of(resolve("/accounts/login/").func, request)
    assert request.sensitive_post_parameters == "__ALL__"  # type: ignore[attr-defined]
    assert "alice-pw" not in text


def test_the_api_password_exchange_never_puts_the_password_in_an_error_report(cast: Cast) -> None:
    request = RequestFactory().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"})
    with mock.patch("leaderboard.accounts.apis.api_token_obtain", side_effect=RuntimeError("boom")):
        text = report_of(resolve("/api/v1/auth/token/").func, request)
    assert "boom" in text and "alice" in text
    assert "alice-pw" not in text


def test_a_new_token_never_reaches_an_error_report(cast: Cast) -> None:
    """The key is a local of the view when the failure happens after it was made."""
    token, key = api_token_create(user=cast.alice, name="laptop")
    api_request = APIRequestFactory().post("/api/v1/auth/token/rotate/", HTTP_AUTHORIZATION=f"Token {key}")
    with mock.patch("leaderboard.accounts.apis._token_response", side_effect=RuntimeError("boom")):
        api_text = report_of(resolve("/api/v1/auth/token/rotate/").func, api_request)
    api_digest = ApiToken.objects.get(pk=token.pk).digest
    page_request = RequestFactory().post("/accounts/tokens/", {"action": "create", "name": "script"})
    page_request.user = cast.alice
    with mock.patch("leaderboard.accounts.views.render", side_effect=RuntimeError("boom")):
        page_text = report_of(resolve("/accounts/tokens/").func, page_request)
    assert "boom" in api_text and "boom" in page_text
    assert api_digest != token.digest and ApiToken.objects.filter(user=cast.alice, name="script").exists()
    # Neither report holds a key that works: every rb_ key in them is none of the stored ones.
    for text in (api_text, page_text):
        shown = set(re.findall(r"rb_[A-Za-z0-9_-]{40}", text))
        assert not ApiToken.objects.filter(digest__in=[api_token_digest(k) for k in shown]).exists()


# --------------------------------------------------------------------------- deadline by arrival


def close_phase(cast: Cast, *, seconds_ago: float) -> dt.datetime:
    phase = cast.dev
    phase.closes_at = timezone.now() - dt.timedelta(seconds=seconds_ago)
    phase.allowed_kinds = ["predictions", "code_bundle"]
    phase.quota_per_day = None
    phase.save()
    return phase.closes_at


def bundle() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run.py", "print('hello')\n")
    return buffer.getvalue()


def post_upload(cast: Cast, channel: str, kind: str) -> tuple[int, str]:
    """Upload to the dev phase through the web form or the API (alice's session)."""
    client = cast.client("alice")
    if kind == "predictions":
        file = io.BytesIO(json.dumps(gold_predictions("dev")).encode())
        file.name = "preds.json"
        web, api, data = "/c/demo/submit/", "/api/v1/challenges/demo/submissions/", {}
    else:
        file = io.BytesIO(bundle())
        file.name = "bundle.zip"
        web, api, data = "/c/demo/submit/system/", "/api/v1/challenges/demo/systems/", {"kind": "code_bundle"}
    if channel == "web":
        response = client.post(web, {"phase": cast.dev.pk, "file": file, **data})
        return response.status_code, response.content.decode()
    response = client.post(api, {"phase": "dev", "file": file, **data})
    return response.status_code, json.dumps(response.json())


def arriving_at(when: dt.datetime) -> mock._patch[object]:
    """Requests stamped as arriving at ``when`` by the first middleware (the rest of the clock runs on)."""
    return mock.patch("leaderboard.core.middleware.timezone", SimpleNamespace(now=lambda: when))


@pytest.mark.parametrize("channel", ["web", "api"])
@pytest.mark.parametrize("kind", ["predictions", "code_bundle"])
def test_an_upload_that_started_before_the_close_is_accepted_after_it(cast: Cast, channel: str, kind: str) -> None:
    closes_at = close_phase(cast, seconds_ago=5)
    with arriving_at(closes_at - dt.timedelta(seconds=6)):
        status, body = post_upload(cast, channel, kind)
    assert status in (201, 302), body
    assert Submission.objects.get().status in (Status.QUEUED, Status.FINISHED)


@pytest.mark.parametrize("channel", ["web", "api"])
@pytest.mark.parametrize("kind", ["predictions", "code_bundle"])
def test_an_upload_that_started_after_the_close_is_refused(cast: Cast, channel: str, kind: str) -> None:
    closes_at = close_phase(cast, seconds_ago=5)
    with arriving_at(closes_at + dt.timedelta(seconds=1)):
        status, body = post_upload(cast, channel, kind)
    assert status == 400
    assert "closed at" in body
    assert not Submission.objects.exists()


def test_an_upload_that_trickles_in_past_the_grace_is_refused(cast: Cast) -> None:
    closes_at = close_phase(cast, seconds_ago=settings.UPLOAD_DEADLINE_GRACE_S + 5)
    with pytest.raises(ServiceError, match="took more than"):
        submission_create_predictions(
            team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions("dev")),
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, now=closes_at - dt.timedelta(seconds=1),
        )


@pytest.mark.django_db(transaction=True)
def test_a_slow_upload_over_a_real_socket_is_judged_by_its_first_bytes(
    cast: Cast, live_server: LiveServer
) -> None:
    """The server stamps the request when its headers are in; the body arrives after the close."""
    token = api_token_create(user=cast.alice, name="slow upload")[1]
    boundary = uuid.uuid4().hex
    preds = json.dumps(gold_predictions("dev")).encode()
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"phase\"\r\n\r\ndev\r\n"
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"preds.json\"\r\n"
        f"Content-Type: application/json\r\n\r\n"
    ).encode() + preds + f"\r\n--{boundary}--\r\n".encode()
    host, port = live_server.url.removeprefix("http://").split(":")
    cast.dev.closes_at = timezone.now() + dt.timedelta(seconds=1.5)
    cast.dev.save()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST /api/v1/challenges/demo/submissions/ HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Token {token}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        )
        sock.sendall(body[:100])
        time.sleep(2.5)  # the phase closes while the body is on its way
        assert timezone.now() > cast.dev.closes_at
        sock.sendall(body[100:])
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line = answer.split(b"\r\n", 1)[0].decode()
    assert " 201 " in status_line, answer[-500:]
    assert Submission.objects.filter(team=cast.alpha, phase=cast.dev).count() == 1


# --------------------------------------------------------------------------- file modes


def test_private_folders_are_made_for_the_platform_user_alone(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        fresh = private_dir(tmp_path / "var" / "private")
        existing = tmp_path / "runs"
        existing.mkdir(mode=0o755)
        private_dir(existing)
    finally:
        os.umask(old)
    assert mode(fresh) == 0o700
    assert mode(existing) == 0o700  # an older deployment's folder is tightened


def test_the_settings_folders_are_private(db: None) -> None:
    for folder in (settings.VAR_DIR, settings.RUNS_DIR, settings.PRIVATE_STORAGE_ROOT):
        private_dir(Path(folder))  # the test settings move PRIVATE_STORAGE_ROOT; base made its own
        assert mode(folder) == 0o700, folder
    assert settings.FILE_UPLOAD_PERMISSIONS == 0o600
    assert settings.FILE_UPLOAD_DIRECTORY_PERMISSIONS == 0o700


def test_stored_files_are_readable_by_the_platform_user_only(db: None) -> None:
    old = os.umask(0o022)
    try:
        name = default_storage.save(f"modes-{uuid.uuid4().hex}/deeper/file.json", ContentFile(b"{}"))
    finally:
        os.umask(old)
    path = Path(default_storage.path(name))
    try:
        assert mode(path) == 0o600
        assert mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    finally:
        shutil.rmtree(path.parent.parent)


@pytest.mark.parametrize("kind", ["predictions", "code_bundle"])
def test_an_accepted_upload_is_stored_0600(cast: Cast, kind: str) -> None:
    cast.dev.allowed_kinds = ["predictions", "code_bundle"]
    cast.dev.save()
    status, body = post_upload(cast, "api", kind)
    assert status == 201, body
    assert mode(Submission.objects.get().file.path) == 0o600


def sqlite_connection(path: Path, *, alias: str) -> BaseDatabaseWrapper:
    """A connection to an SQLite file with the settings' options, whatever database the suite runs on."""
    settings_dict = {**connections["default"].settings_dict, **sqlite_database(str(path))}
    return SQLiteDatabaseWrapper(settings_dict, alias=alias)


def test_the_database_file_is_readable_by_the_platform_user_only(db: None, tmp_path: Path) -> None:
    if connection.vendor == "sqlite":  # the suite's second run is on Postgres: no file to check there
        assert mode(connection.settings_dict["NAME"]) == 0o600  # the test database, as made by Django
    # A database created anew under a permissive umask, in WAL mode like ours.
    old = os.umask(0o022)
    fresh = sqlite_connection(tmp_path / "fresh.sqlite3", alias="fresh")
    try:
        fresh.connect()
        with fresh.cursor() as cursor:
            cursor.execute("CREATE TABLE t (x INTEGER)")
            cursor.execute("INSERT INTO t VALUES (1)")
        for suffix in ("", "-wal", "-shm"):
            assert mode(tmp_path / f"fresh.sqlite3{suffix}") == 0o600, suffix
    finally:
        fresh.close()
        os.umask(old)


def test_an_existing_database_file_is_tightened_when_opened(db: None, tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    old_db = sqlite_connection(path, alias="old")
    try:
        old_db.connect()
    finally:
        old_db.close()
    assert mode(path) == 0o600


def test_the_demo_sets_a_private_umask_before_it_writes_anything() -> None:
    script = (REPO / "deploy" / "demo.sh").read_text()
    umask = script.index("\numask 077\n")
    assert umask < script.index("mkdir -p var") < script.index("manage.py migrate")


# --------------------------------------------------------------------------- API tokens: the page


def authenticates(key: str) -> bool:
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/challenges/demo/submissions/")
    assert response.status_code in (200, 401), response.content
    return response.status_code == 200


def shown_key(response: object) -> str:
    match = re.search(r'<code id="token-key">(rb_[A-Za-z0-9_-]{40})</code>', response.content.decode())  # type: ignore[attr-defined]
    assert match, response.content  # type: ignore[attr-defined]
    return match.group(1)


def test_the_token_page_is_for_logged_in_users_and_linked_from_the_header(cast: Cast) -> None:
    assert Client().get("/accounts/tokens/")["Location"].startswith("/accounts/login/?next=/accounts/tokens/")
    assert 'href="/accounts/tokens/"' in cast.client("alice").get("/").content.decode()
    assert 'href="/accounts/tokens/"' not in Client().get("/").content.decode()


def test_tokens_made_on_the_page_are_listed_by_name_and_their_keys_shown_once(cast: Cast) -> None:
    client = cast.client("alice")
    assert "You have no API token" in client.get("/accounts/tokens/").content.decode()
    created = client.post("/accounts/tokens/", {"action": "create", "name": "laptop"})
    laptop = shown_key(created)
    assert "no-store" in created["Cache-Control"]
    assert "Your new token “laptop”" in created.content.decode()
    ci = shown_key(client.post("/accounts/tokens/", {"action": "create", "name": "  CI   job "}))
    assert laptop != ci and authenticates(laptop) and authenticates(ci)
    # Only digests are stored: no column holds a key.
    stored = list(ApiToken.objects.filter(user=cast.alice).values_list("name", "digest", "prefix"))
    assert stored == [("laptop", api_token_digest(laptop), laptop[:9]), ("CI job", api_token_digest(ci), ci[:9])]
    later = client.get("/accounts/tokens/").content.decode()
    assert laptop not in later and ci not in later
    assert later.count('class="token-name"') == 2 and f"{laptop[:9]}…" in later and "CI job" in later
    # A name in use, or no name, is refused with why; nothing is made.
    again = client.post("/accounts/tokens/", {"action": "create", "name": "laptop"})
    assert again.status_code == 409 and "already have a token called &#x27;laptop&#x27;" in again.content.decode()
    empty = client.post("/accounts/tokens/", {"action": "create", "name": "  "})
    assert empty.status_code == 400 and "give the token a name" in empty.content.decode()
    assert ApiToken.objects.filter(user=cast.alice).count() == 2
    assert "2 (laptop, CI job)" in client.get("/accounts/profile/").content.decode()


def test_a_token_shows_when_it_was_last_used(cast: Cast) -> None:
    _, key = api_token_create(user=cast.alice, name="laptop")
    page = cast.client("alice").get("/accounts/tokens/").content.decode()
    assert "never" in page
    assert authenticates(key)
    used = ApiToken.objects.get(user=cast.alice).last_used_at
    assert used is not None and timezone.now() - used < dt.timedelta(minutes=1)
    assert "never" not in cast.client("alice").get("/accounts/tokens/").content.decode()
    # Within the minute a second call writes nothing (every API call would be a write).
    ApiToken.objects.filter(user=cast.alice).update(last_used_at=used - dt.timedelta(seconds=30))
    assert authenticates(key)
    assert ApiToken.objects.get(user=cast.alice).last_used_at == used - dt.timedelta(seconds=30)


def test_an_account_has_at_most_its_limit_of_tokens(cast: Cast) -> None:
    for n in range(API_TOKEN_LIMIT):
        api_token_create(user=cast.alice, name=f"t{n}")
    refused = cast.client("alice").post("/accounts/tokens/", {"action": "create", "name": "one more"})
    assert refused.status_code == 409 and "revoke one first" in refused.content.decode()
    assert ApiToken.objects.filter(user=cast.alice).count() == API_TOKEN_LIMIT


def test_rotating_on_the_page_stops_that_token_only(cast: Cast) -> None:
    _, laptop = api_token_create(user=cast.alice, name="laptop")
    _, ci = api_token_create(user=cast.alice, name="ci")
    client = cast.client("alice")
    response = client.post("/accounts/tokens/", {"action": "rotate", "token": token_id(cast.alice, "laptop")})
    new = shown_key(response)
    assert "The new key of “laptop”; its old key no longer works." in response.content.decode()
    assert new != laptop
    assert not authenticates(laptop)
    assert authenticates(new) and authenticates(ci)
    assert ApiToken.objects.filter(user=cast.alice).count() == 2


def test_revoking_on_the_page_stops_that_token_only(cast: Cast) -> None:
    _, laptop = api_token_create(user=cast.alice, name="laptop")
    _, ci = api_token_create(user=cast.alice, name="ci")
    _, bobs = api_token_create(user=cast.bob, name="laptop")
    client = cast.client("alice")
    response = client.post("/accounts/tokens/", {"action": "revoke", "token": token_id(cast.alice, "laptop")})
    assert response.status_code == 302
    assert not authenticates(laptop)
    assert authenticates(ci) and authenticates(bobs)
    # Bob's token is not Alice's to revoke or rotate: it stays as it was.
    bob_id = token_id(cast.bob, "laptop")
    client.post("/accounts/tokens/", {"action": "revoke", "token": bob_id})
    rotated = client.post("/accounts/tokens/", {"action": "rotate", "token": bob_id})
    assert rotated.status_code == 404 and 'id="token-key"' not in rotated.content.decode()
    assert authenticates(bobs)
    assert client.post("/accounts/tokens/", {"action": "revoke", "token": "x"}).status_code == 404


def test_the_token_page_needs_the_csrf_token(cast: Cast) -> None:
    token, key = api_token_create(user=cast.alice, name="laptop")
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.alice)
    assert client.post("/accounts/tokens/", {"action": "revoke", "token": token.pk}).status_code == 403
    assert client.post("/accounts/tokens/", {"action": "rotate", "token": token.pk}).status_code == 403
    assert client.post("/accounts/tokens/", {"action": "create", "name": "x"}).status_code == 403
    assert authenticates(key) and ApiToken.objects.filter(user=cast.alice).count() == 1


def test_keys_made_by_drfs_authtoken_keep_working_and_are_no_longer_kept_in_clear(db: None) -> None:
    """The migration that brought named tokens moves the old ones (one per user, stored in clear)."""
    user = User.objects.create_user("old", password="old-pw")
    old_key = "a" * 40
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamp, user_id integer)")
        try:
            cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [old_key, timezone.now(), user.pk])
            migration = importlib.import_module("leaderboard.accounts.migrations.0003_api_tokens")

            migration.tokens_from_drf(apps, SimpleNamespace(connection=connection))
            cursor.execute("SELECT count(*) FROM authtoken_token")
            assert cursor.fetchone()[0] == 0  # no key is left in clear
        finally:
            cursor.execute("DROP TABLE authtoken_token")
    moved = ApiToken.objects.get(user=user)
    assert (moved.name, moved.prefix) == ("api", "aaaaaa")
    assert Client(HTTP_AUTHORIZATION=f"Token {old_key}").get("/api/v1/auth/tokens/").json()[0]["name"] == "api"


# --------------------------------------------------------------------------- API tokens: the API


def test_the_password_exchange_gives_a_new_key_for_a_named_token(cast: Cast) -> None:
    _, laptop = api_token_create(user=cast.alice, name="laptop")
    first = Client().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"})
    assert first.status_code == 200 and "no-store" in first["Cache-Control"]
    assert first.json()["name"] == "api" and authenticates(first.json()["token"])
    # Again: a new key for the same token (keys are stored as digests, so the old one cannot be
    # given out again); the old key of that name stops, and the user's other tokens do not.
    second = Client().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"}).json()
    assert second["token"] != first.json()["token"]
    assert not authenticates(first.json()["token"]) and authenticates(second["token"]) and authenticates(laptop)
    named = Client().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw", "name": "cluster"})
    assert named.json()["name"] == "cluster" and authenticates(named.json()["token"])
    assert sorted(ApiToken.objects.filter(user=cast.alice).values_list("name", flat=True)) == ["api", "cluster", "laptop"]


def test_tokens_are_listed_created_and_revoked_through_the_api(cast: Cast) -> None:
    _, key = api_token_create(user=cast.alice, name="laptop")
    api, session = Client(HTTP_AUTHORIZATION=f"Token {key}"), cast.client("alice")
    made = session.post("/api/v1/auth/tokens/", {"name": "ci"}, content_type="application/json")
    assert made.status_code == 201 and "no-store" in made["Cache-Control"]
    body = made.json()
    assert body["name"] == "ci" and body["prefix"] == body["token"][:9] and authenticates(body["token"])
    listed = api.get("/api/v1/auth/tokens/").json()
    assert [t["name"] for t in listed] == ["laptop", "ci"]
    assert all("token" not in t and "digest" not in t for t in listed)  # never a key, nor its digest
    assert listed[0]["last_used_at"] is not None  # the call that lists uses it
    assert session.post("/api/v1/auth/tokens/", {"name": "ci"}).status_code == 409
    # Revoke by id: one's own only.
    _, bobs = api_token_create(user=cast.bob, name="laptop")
    assert session.delete(f"/api/v1/auth/tokens/{token_id(cast.bob, 'laptop')}/").status_code == 404
    assert authenticates(bobs)
    assert session.delete(f"/api/v1/auth/tokens/{body['id']}/").status_code == 204
    assert not authenticates(body["token"]) and authenticates(key)
    assert Client().get("/api/v1/auth/tokens/").status_code == 401


def test_a_key_cannot_mint_or_revoke_other_keys(cast: Cast) -> None:
    """A leaked key must not make a key that outlives its own revocation, nor lock its owner out."""
    _, key = api_token_create(user=cast.alice, name="laptop")
    _, other = api_token_create(user=cast.alice, name="ci")
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    refused = api.post("/api/v1/auth/tokens/", {"name": "backdoor"}, content_type="application/json")
    assert refused.status_code == 403 and "cannot make or revoke other tokens" in refused.json()["detail"]
    assert not ApiToken.objects.filter(name="backdoor").exists()
    assert api.delete(f"/api/v1/auth/tokens/{token_id(cast.alice, 'ci')}/").status_code == 403
    assert authenticates(other)
    # It may revoke itself, by id as by DELETE /auth/token/.
    assert api.delete(f"/api/v1/auth/tokens/{token_id(cast.alice, 'laptop')}/").status_code == 204
    assert not authenticates(key) and authenticates(other)


def test_the_password_exchange_ignores_a_stale_key_sent_with_it(cast: Cast) -> None:
    token, key = api_token_create(user=cast.alice, name="api")
    Client(HTTP_AUTHORIZATION=f"Token {key}").delete("/api/v1/auth/token/")  # revoked
    again = Client(HTTP_AUTHORIZATION=f"Token {key}").post(
        "/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"})
    assert again.status_code == 200 and authenticates(again.json()["token"])


def test_rotating_through_the_api_stops_the_token_that_asked(cast: Cast) -> None:
    _, old = api_token_create(user=cast.alice, name="laptop")
    _, other = api_token_create(user=cast.alice, name="ci")
    response = Client(HTTP_AUTHORIZATION=f"Token {old}").post("/api/v1/auth/token/rotate/")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    new = response.json()["token"]
    assert response.json()["name"] == "laptop"
    assert new != old
    assert not authenticates(old)
    assert authenticates(new) and authenticates(other)
    # The old token cannot rotate again either.
    assert Client(HTTP_AUTHORIZATION=f"Token {old}").post("/api/v1/auth/token/rotate/").status_code == 401


def test_revoking_through_the_api_stops_the_token(cast: Cast) -> None:
    _, key = api_token_create(user=cast.alice, name="laptop")
    _, other = api_token_create(user=cast.alice, name="ci")
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").delete("/api/v1/auth/token/")
    assert response.status_code == 204
    assert not authenticates(key) and authenticates(other)
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").delete("/api/v1/auth/token/").status_code == 401
    # The password still gets a token, a fresh one.
    fresh = Client().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-pw"}).json()["token"]
    assert fresh != key and authenticates(fresh)


def test_rotating_or_revoking_needs_a_credential(cast: Cast) -> None:
    assert Client().post("/api/v1/auth/token/rotate/").status_code == 401
    assert Client().delete("/api/v1/auth/token/").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Token rb_nope").delete("/api/v1/auth/token/").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Token a b").get("/api/v1/auth/tokens/").status_code == 401
    # A session names no token: it is told how to act on one, and nothing changes.
    _, key = api_token_create(user=cast.alice, name="laptop")
    said = cast.client("alice").delete("/api/v1/auth/token/")
    assert said.status_code == 400 and "/api/v1/auth/tokens/" in said.json()["detail"]
    assert authenticates(key)


def test_a_disabled_account_s_tokens_stop_working(cast: Cast) -> None:
    key = api_token_obtain(user=cast.alice)
    User.objects.filter(pk=cast.alice.pk).update(is_active=False)
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/challenges/demo/submissions/")
    assert response.status_code == 401 and response.json()["detail"] == "Invalid token."


def test_the_schema_documents_the_token_endpoints(db: None) -> None:
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert set(schema["paths"]["/api/v1/auth/token/"]) >= {"post", "delete"}
    assert "post" in schema["paths"]["/api/v1/auth/token/rotate/"]
    assert set(schema["paths"]["/api/v1/auth/tokens/"]) >= {"get", "post"}
    assert "delete" in schema["paths"]["/api/v1/auth/tokens/{id}/"]
    assert schema["components"]["securitySchemes"]["tokenAuth"]["in"] == "header"


# --------------------------------------------------------------------------- the page in a browser


