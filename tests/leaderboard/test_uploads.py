"""Bad uploads, through the web form and the API (token and session auth).

Each is refused with a 4xx whose message says what was wrong and where (file, dataset,
question id), never a 500, and leaves nothing behind: no Submission row, no new file in
private storage.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from pytest_django import Settings

from leaderboard.accounts.services import api_token_obtain
from leaderboard.challenges.models import Challenge
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Submission
from leaderboard.submissions.uploads import UploadError
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.uploads import CHANNELS, first_qids, post, zip_of


def stored_files() -> set[Path]:
    root = Path(settings.PRIVATE_STORAGE_ROOT) / "submissions"
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def named(content: bytes, name: str = "preds.json") -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = name
    return file


@pytest.fixture
def nothing_stored(cast: Cast) -> Iterator[None]:
    before_rows = Submission.objects.count()
    before_files = stored_files()
    yield
    assert Submission.objects.count() == before_rows
    assert stored_files() == before_files


def lying_zip() -> bytes:
    """One member whose headers claim 100 bytes while it inflates to ~300 KB."""
    preds = gold_predictions()
    raw = bytearray(zip_of({"squad.json": json.dumps(preds["squad"]) + " " * 300_000,
                            "xquad-en.json": json.dumps(preds["xquad-en"])}))
    # Local header: uncompressed size at offset 22; central directory entry: offset 24.
    struct.pack_into("<I", raw, 22, 100)
    central = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, central + 24, 100)
    return bytes(raw)


def preds_json(mutate: Callable[[dict], None] | None = None) -> bytes:
    preds = gold_predictions()
    if mutate:
        mutate(preds)
    return json.dumps(preds).encode("utf-8")


def _drop(preds: dict) -> None:
    for qid in first_qids(7):
        del preds["squad"][qid]


def _add_unknown(preds: dict) -> None:
    preds["xquad-en"]["bogus-1"] = "x"
    preds["xquad-en"]["bogus-2"] = "y"


def _non_string(preds: dict) -> None:
    preds["squad"][first_qids(3)[2]] = 42


def _unknown_dataset(preds: dict) -> None:
    preds["newsqa"] = {"q1": "an answer"}


def _twice(text: str, member: str, earlier: str) -> str:
    """``text`` with the member ``earlier`` written just before ``member``, which starts with the
    same key: json.dumps cannot write a key twice (and json.loads would keep the last)."""
    assert text.count(member) == 1
    return text.replace(member, f"{earlier}, {member}")


def _dataset_twice() -> bytes:
    return _twice(json.dumps(gold_predictions()), '"squad": {', '"squad": {}').encode()


def _question_twice() -> bytes:
    qid = first_qids(1)[0]
    return _twice(json.dumps(gold_predictions()), f'"{qid}": ', f'"{qid}": "again"').encode()


def _question_twice_in_a_member() -> bytes:
    qid = first_qids(1)[0]
    members = {f"{k}.json": json.dumps(v) for k, v in gold_predictions().items()}
    members["squad.json"] = _twice(members["squad.json"], f'"{qid}": ', f'"{qid}": "again"')
    return zip_of(members)


def _a_list_answer(preds: dict) -> None:
    preds["squad"][first_qids(1)[0]] = [{}] * 1000


# (case, bytes, file name, status, message fragments)
BAD_UPLOADS = [
    ("malformed JSON", b'{"squad": {"q1": "a",}}', "preds.json", 400,
     ["preds.json", "not valid JSON", "line 1, column 22"]),
    ("UTF-16", json.dumps(gold_predictions()).encode("utf-16"), "preds.json", 400,
     ["preds.json", "not UTF-8", "byte 0xff on line 1", "save the file as UTF-8"]),
    ("latin-1", '{\n"squad": {"q": "café"}}'.encode("latin-1"), "preds.json", 400,
     ["preds.json", "not UTF-8", "byte 0xe9 on line 2"]),
    ("missing qids", preds_json(_drop), "preds.json", 400,
     ["preds.json [squad]", "7 question(s) have no prediction", *(repr(q) for q in first_qids(5))]),
    ("unknown qids", preds_json(_add_unknown), "preds.json", 400,
     ["preds.json [xquad-en]", "2 id(s) are not questions of this dataset", "'bogus-1'", "'bogus-2'"]),
    ("unknown dataset", preds_json(_unknown_dataset), "preds.json", 400,
     ["preds.json", "unknown dataset 'newsqa'", "squad, xquad-en"]),
    ("unknown dataset in a zip", zip_of({**{f"{k}.json": json.dumps(v) for k, v in gold_predictions().items()},
                                         "newsqa.json": "{}"}), "preds.zip", 400,
     ["preds.zip", "unknown dataset 'newsqa'"]),
    ("missing dataset", json.dumps({"squad": gold_predictions()["squad"]}).encode(), "preds.json", 400,
     ["preds.json", "no predictions for dataset(s) xquad-en"]),
    ("non-string answer", preds_json(_non_string), "preds.json", 400,
     ["preds.json [squad]", f"id {first_qids(3)[2]!r}", "should be a string, found int"]),
    ("not an object", b'["a", "b"]', "preds.json", 400, ["preds.json", "expected a JSON object", "found list"]),
    ("giant integer", b'{"squad": {"q": ' + b"7" * 5000 + b"}}", "preds.json", 400,
     ["preds.json", "not usable JSON", "4300 digits"]),
    ("zip traversal", zip_of({"../evil.json": "{}", "squad.json": "{}"}), "preds.zip", 400,
     ["preds.zip", "unsafe path '../evil.json'"]),
    ("zip absolute path", zip_of({"/abs.json": "{}"}), "preds.zip", 400, ["preds.zip", "unsafe path '/abs.json'"]),
    ("zip nested traversal", zip_of({"ok/../../evil.json": "{}"}), "preds.zip", 400, ["unsafe path"]),
    ("zip whose header lies", lying_zip(), "preds.zip", 400,
     ["preds.zip", "'squad.json'", "larger than its header says"]),
    ("broken zip", b"PK\x03\x04" + b"\x00" * 64, "preds.zip", 400, ["preds.zip", "not a valid zip archive"]),
    ("zip of a non-JSON member", zip_of({"squad.txt": "x"}), "preds.zip", 400, ["'squad.txt' is not a .json file"]),
    ("zip member not UTF-8", zip_of({"squad.json": '{"q": "café"}'.encode("latin-1")}), "preds.zip", 400,
     ["preds.zip:squad.json", "not UTF-8"]),
    # Issue 17: a key twice is refused, naming it (json.loads would keep the last).
    ("dataset twice", _dataset_twice(), "preds.json", 400, ["preds.json: dataset 'squad' appears twice"]),
    ("question twice", _question_twice(), "preds.json", 400,
     ["preds.json [squad]", f"id {first_qids(1)[0]!r}: appears twice"]),
    ("question twice in a zip member", _question_twice_in_a_member(), "preds.zip", 400,
     ["preds.zip:squad.json", f"id {first_qids(1)[0]!r}: appears twice"]),
    # And a list where an answer goes is refused where it starts, before it is built.
    ("a list for an answer", preds_json(_a_list_answer), "preds.json", 400,
     ["preds.json [squad]", f"id {first_qids(1)[0]!r}", "the answer should be a string", "found list"]),
    ("a list for a dataset", b'{"squad": [{}, {}], "xquad-en": {}}', "preds.json", 400,
     ["preds.json: expected a JSON object {qid: answer} for dataset 'squad', found list"]),
]


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize(("case", "content", "name", "status", "fragments"), BAD_UPLOADS,
                         ids=[c[0] for c in BAD_UPLOADS])
def test_a_bad_upload_is_refused_with_a_message_naming_the_problem(
    cast: Cast, nothing_stored: None, channel: str, case: str, content: bytes, name: str, status: int,
    fragments: list[str],
) -> None:
    outcome = post(cast, channel, content, name=name)
    assert outcome.status == status, outcome.message[:500]
    for fragment in fragments:
        assert fragment in outcome.message, (fragment, outcome.message[:2000])


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_empty_file_is_refused(cast: Cast, nothing_stored: None, channel: str) -> None:
    outcome = post(cast, channel, b"")
    assert outcome.status == 400
    assert "The submitted file is empty" in outcome.message
    if channel != "web":
        assert outcome.message.startswith("file:")


def test_the_service_refuses_an_empty_upload_too(cast: Cast, nothing_stored: None) -> None:
    with pytest.raises(UploadError, match="preds.json: the file is empty"):
        submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(b""),
                                      limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_zip_that_expands_past_the_limit_is_413(cast: Cast, nothing_stored: None, channel: str,
                                                  settings: Settings) -> None:
    settings.MAX_PREDICTION_ARCHIVE_BYTES = 50_000
    content = zip_of({"squad.json": '{"q": "' + "a" * 100_000 + '"}', "xquad-en.json": "{}"})
    assert len(content) < 5_000
    outcome = post(cast, channel, content, name="preds.zip")
    assert outcome.status == 413
    assert "preds.zip: the archive expands to more than 50000 bytes" in outcome.message


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_file_over_the_limit_is_413_from_the_service(cast: Cast, nothing_stored: None, channel: str,
                                                       settings: Settings) -> None:
    content = preds_json()
    settings.MAX_PREDICTION_UPLOAD_BYTES = len(content) - 1
    outcome = post(cast, channel, content)
    assert outcome.status == 413
    assert f"the limit is {len(content) - 1} bytes" in outcome.message or "larger than the limit" in outcome.message
    assert "preds.json" in outcome.message


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_huge_request_is_413_before_its_body_is_read(cast: Cast, nothing_stored: None, channel: str,
                                                       settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.MAX_PREDICTION_UPLOAD_BYTES = 1_000
    content = b'{"squad": {"q": "' + b"a" * 200_000 + b'"}}'

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the body was parsed")

    # Neither Django's multipart parser nor the upload service may run for this request.
    monkeypatch.setattr("django.http.multipartparser.MultiPartParser.parse", unread)
    monkeypatch.setattr("leaderboard.submissions.intake.submission_create_predictions", unread)
    monkeypatch.setattr("leaderboard.submissions.views.submission_create_predictions", unread)
    monkeypatch.setattr("leaderboard.submissions.apis.submission_create_predictions", unread)
    if channel == "web":
        response = cast.client("alice").post("/c/demo/submit/", {"phase": cast.dev.pk, "file": named(content)})
        assert response.status_code == 413
        assert "uploads are limited to 1000 bytes" in response.content.decode()
    else:
        outcome = post(cast, channel, content)
        assert outcome.status == 413
        assert "uploads are limited to 1000 bytes" in outcome.message


# --- the phase, the kind and the team ------------------------------------------------------------


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_closed_phase_refuses_uploads(cast: Cast, nothing_stored: None, channel: str) -> None:
    cast.dev.opens_at = dt.datetime(2019, 1, 1, tzinfo=dt.UTC)
    cast.dev.closes_at = dt.datetime(2020, 6, 30, 23, 59, tzinfo=dt.UTC)
    cast.dev.save()
    outcome = post(cast, channel, preds_json())
    assert outcome.status == 400
    assert "the phase 'Dev' closed at 2020-06-30 23:59 UTC" in outcome.message


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_phase_not_yet_open_refuses_uploads(cast: Cast, nothing_stored: None, channel: str) -> None:
    cast.dev.opens_at = timezone.now() + dt.timedelta(days=3)
    cast.dev.save()
    outcome = post(cast, channel, preds_json())
    assert outcome.status == 400
    assert f"the phase 'Dev' opens at {cast.dev.opens_at:%Y-%m-%d %H:%M} UTC" in outcome.message


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_phase_that_takes_no_prediction_files_refuses_them(cast: Cast, nothing_stored: None, channel: str) -> None:
    cast.dev.allowed_kinds = ["docker_image"]
    cast.dev.save()
    outcome = post(cast, channel, preds_json())
    assert outcome.status == 400
    assert "The Dev phase takes Docker images, not prediction files." in outcome.message


@pytest.mark.parametrize("channel", ["api-token", "api-session"])
def test_a_user_without_a_team_cannot_submit_through_the_api(cast: Cast, nothing_stored: None, channel: str) -> None:
    outcome = post(cast, channel, preds_json(), user="dave")
    assert outcome.status == 400
    assert "not in a team for this challenge" in outcome.message


def test_a_user_without_a_team_is_sent_to_the_team_page_by_the_web_form(cast: Cast, nothing_stored: None) -> None:
    client = cast.client("dave")
    response = client.post("/c/demo/submit/", {"phase": cast.dev.pk, "file": named(preds_json())}, follow=True)
    assert response.redirect_chain == [("/c/demo/team/", 302)]
    assert "Create or join a team before you submit." in response.content.decode()


def test_the_anonymous_public_cannot_submit(cast: Cast, nothing_stored: None) -> None:
    response = Client().post("/c/demo/submit/", {"phase": cast.dev.pk, "file": named(preds_json())})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    api = Client().post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": named(preds_json())})
    assert api.status_code == 401
    assert api.json()["detail"] == "Authentication credentials were not provided."


def test_an_unknown_phase_is_404_in_the_api(cast: Cast, nothing_stored: None) -> None:
    outcome = post(cast, "api-token", preds_json(), phase=type("P", (), {"slug": "final"})())
    assert outcome.status == 404
    assert "no phase 'final' in this challenge" in outcome.message


def test_a_phase_of_another_challenge_is_refused_by_the_web_form(cast: Cast, nothing_stored: None) -> None:
    other = Challenge.objects.create(slug="other", title="Other", metric_suite="mrqa")
    phase = other.phases.create(slug="dev", name="Dev", kind="dev", portion="dev", opens_at=cast.dev.opens_at,
                                closes_at=cast.dev.closes_at, allowed_kinds=["predictions"])
    outcome = post(cast, "web", preds_json(), phase=phase)
    assert outcome.status == 400
    assert "Select a valid choice" in outcome.message


@pytest.mark.parametrize("channel", ["api-token", "api-session"])
def test_a_request_without_a_file_says_which_field_is_missing(cast: Cast, nothing_stored: None, channel: str) -> None:
    if channel == "api-token":
        client = Client(HTTP_AUTHORIZATION=f"Token {api_token_obtain(user=cast.alice)}")
    else:
        client = cast.client("alice")
    response = client.post("/api/v1/challenges/demo/submissions/", {"phase": "dev"})
    assert response.status_code == 400
    data = response.json()
    assert data["detail"] == "file: No file was submitted."
    assert data["errors"] == {"file": ["No file was submitted."]}


# --- and the good upload, through the same helper, so the bad ones are known to fail for their reason ---


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_good_upload_is_accepted_through_every_channel(cast: Cast, channel: str) -> None:
    before = stored_files()
    outcome = post(cast, channel, preds_json())
    assert outcome.status == (302 if channel == "web" else 201), outcome.message[:500]
    assert Submission.objects.filter(team=cast.alpha, phase=cast.dev).count() == 1
    assert len(stored_files() - before) == 1


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_good_zip_is_accepted(cast: Cast, channel: str) -> None:
    members = {f"{k}.json": json.dumps(v) for k, v in gold_predictions().items()}
    outcome = post(cast, channel, zip_of({**members, "__MACOSX/._squad.json": "junk"}), name="preds.zip")
    assert outcome.status == (302 if channel == "web" else 201), outcome.message[:500]
