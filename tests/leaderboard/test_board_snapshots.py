"""Boards are served from snapshots: built once per change, never stale once a change committed,
answered 304 when the client holds the current version, and each viewer's own row still theirs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from leaderboard.accounts.services import team_rename, team_update
from leaderboard.challenges.models import BoardChange, BoardVersion, Dataset
from leaderboard.challenges.versions import board_changed, board_changes_fold, board_version_get
from leaderboard.console.services import dataset_reveal_audited, team_disqualify
from leaderboard.rankings.models import BoardSignificance, BoardSnapshot
from leaderboard.rankings.services import board_significance_refresh
from leaderboard.rankings.snapshots import (
    board_access_get,
    board_snapshot_build,
    board_snapshots_rebuild,
)
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.lifecycle import submission_fail
from leaderboard.submissions.models import BoardEntry, FailureCause, Status
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import SPEC, Cast, gold_predictions, upload

URLS = ("board", "board-csv", "board-json", "board-chart")


def url(name: str, phase: str = "dev") -> str:
    return reverse(name, kwargs={"slug": "demo", "phase_slug": phase})


def api_url(phase: str = "dev") -> str:
    return reverse("api-leaderboard", kwargs={"slug": "demo", "phase_slug": phase})


def submit(cast: Cast, who: str, *, wrong_every: int = 0, portion: str = "dev") -> None:
    team = cast.alpha if who == "alice" else cast.charlies
    phase = cast.dev if portion == "dev" else cast.test
    submission = submission_create_predictions(
        team=team, phase=phase, user=getattr(cast, who), upload=upload(gold_predictions(portion, wrong_every=wrong_every)),
        limit_bytes=10 * 1024 * 1024)
    submission_evaluate(submission.pk)  # what the worker does once the upload commits


@pytest.fixture
def scored(cast: Cast) -> Cast:
    submit(cast, "alice", wrong_every=3)
    submit(cast, "charlie", wrong_every=2)
    return cast


@pytest.fixture
def no_build() -> Iterator[mock.MagicMock]:
    """Fails the test if a request builds a board instead of reading its snapshot."""
    with mock.patch("leaderboard.rankings.snapshots.board_build", side_effect=AssertionError("built")) as built:
        yield built


def page(client: Client, phase: str = "dev") -> str:
    response = client.get(url("board", phase))
    assert response.status_code == 200
    return response.content.decode()


def test_a_second_read_of_every_rendering_comes_from_the_snapshot(scored: Cast) -> None:
    client = Client()
    first = {name: client.get(url(name)).content for name in URLS}
    assert BoardSnapshot.objects.filter(phase=scored.dev, view="public").count() == 1
    with mock.patch("leaderboard.rankings.snapshots.board_build", side_effect=AssertionError("built")):
        again = {name: client.get(url(name)).content for name in URLS}
        api = client.get(api_url())
    # The page carries a CSRF token of its own each time; its board is the same.
    assert again["board-csv"] == first["board-csv"] and again["board-json"] == first["board-json"]
    assert again["board-chart"] == first["board-chart"]
    assert api.json() == client.get(url("board-json")).json()
    assert "Charlie&#x27;s" in again["board"].decode()


@pytest.mark.parametrize("change", ["score", "rename", "anonymous", "disqualify", "setting", "significance"])
def test_the_board_is_built_again_after_each_kind_of_change_and_never_served_stale(
    scored: Cast, change: str, tmp_path: Path
) -> None:
    client = Client()
    before = page(client)
    version = board_version_get(challenge_id=scored.challenge.pk)
    if change == "score":
        submit(scored, "alice")  # all right: Alpha now leads with 100
        expect: tuple[str, ...] = ("100.00",)
    elif change == "rename":
        team_rename(team=scored.charlies, actor=scored.charlie, name="Charlie Renamed")
        expect = ("Charlie Renamed",)
    elif change == "anonymous":
        team_update(team=scored.alpha, actor=scored.alice, is_anonymous=True)
        expect = ("Anonymous",)
    elif change == "disqualify":
        team_disqualify(team=scored.charlies, actor=scored.oscar, reason="copied the gold answers")
        expect = ("copied the gold answers",)
    elif change == "setting":
        spec = tmp_path / "demo.yaml"
        spec.write_text(SPEC.replace("title: Demo MRQA", "title: Demo MRQA renamed"))
        challenge_load(spec_path=spec)
        expect = ("Demo MRQA renamed",)
    else:
        board_significance_refresh(scored.dev.pk)
        expect = ("tied #", "95% CI") if "tied #" in page(Client()) else ("95% CI",)
    assert board_version_get(challenge_id=scored.challenge.pk) > version
    after = page(client)
    assert after != before
    for text in expect:
        assert text in after, text
    # Every rendering follows, not only the page.
    if change in ("rename", "score"):
        text = "100.0" if change == "score" else expect[0]  # the exports hold the whole float
        assert text in client.get(url("board-csv")).content.decode()
        assert text in client.get(api_url()).content.decode()


def test_a_reveal_is_on_the_test_board_at_once(scored: Cast) -> None:
    submit(scored, "alice", portion="test")
    client = Client()
    assert "CoQA" not in page(client, "test") and "Hidden-07" in page(client, "test")
    dataset_reveal_audited(dataset=Dataset.objects.get(slug="coqa"), actor=scored.oscar, reason="the workshop")
    assert "CoQA" in page(client, "test")


@pytest.mark.parametrize("name", [*URLS, "api"])
def test_an_unchanged_board_is_answered_304_and_a_changed_one_is_not(scored: Cast, name: str) -> None:
    client = Client()
    address = api_url() if name == "api" else url(name)
    first = client.get(address)
    assert first.status_code == 200 and first.has_header("ETag") and not first.has_header("Last-Modified")
    # Private to the caller, and asked again each time (no browser heuristics on a stale board).
    assert "private" in first["Cache-Control"] and "no-cache" in first["Cache-Control"]
    assert "Cookie" in first["Vary"]
    with mock.patch("leaderboard.rankings.snapshots.board_build", side_effect=AssertionError("built")):
        again = client.get(address, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""
    team_rename(team=scored.charlies, actor=scored.charlie, name="Charlie Renamed")
    changed = client.get(address, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]


def test_each_viewer_gets_an_etag_of_their_own(scored: Cast) -> None:
    """A 304 must never hand one viewer's page (their own row marked) to another."""
    public = Client().get(url("board"))
    alice = scored.client("alice").get(url("board"))
    charlie = scored.client("charlie").get(url("board"))
    assert len({public["ETag"], alice["ETag"], charlie["ETag"]}) == 3
    assert scored.client("charlie").get(url("board"), HTTP_IF_NONE_MATCH=alice["ETag"]).status_code == 200


def test_a_team_sees_its_own_anonymous_row_named_and_no_one_else_does(scored: Cast) -> None:
    team_update(team=scored.alpha, actor=scored.alice, is_anonymous=True)
    page(Client())  # the snapshot, as the public sees it
    for who in ("alice", "bob"):
        mine = page(scored.client(who))
        assert 'class="own"' in mine and ">Alpha<" in mine, who
        assert "Alpha" in scored.client(who).get(url("board-csv")).content.decode()
        assert any(r["team"] == "Alpha" for r in scored.client(who).get(url("board-json")).json()["rows"])
    for client in (Client(), scored.client("charlie"), scored.client("dave")):
        theirs = page(client)
        assert ">Alpha<" not in theirs and "Anonymous" in theirs
        assert "Alpha" not in client.get(url("board-csv")).content.decode()
        assert "Alpha" not in client.get(api_url()).content.decode()


def test_the_organizer_view_has_a_snapshot_of_its_own(scored: Cast) -> None:
    team_update(team=scored.alpha, actor=scored.alice, is_anonymous=True)
    organizer = scored.client("oscar").get(reverse("board-organizer", kwargs={"slug": "demo", "phase_slug": "dev"}))
    assert organizer.status_code == 200 and "Alpha" in organizer.content.decode()
    assert "no-store" in organizer["Cache-Control"]
    assert BoardSnapshot.objects.filter(phase=scored.dev, view="organizer").exists()
    # Its address stays 404 to anyone else, snapshot or not.
    for who in (None, "alice", "charlie"):
        assert scored.client(who).get(
            reverse("board-organizer", kwargs={"slug": "demo", "phase_slug": "dev"})).status_code == 404
    assert "Alpha" not in page(Client())


def test_the_background_rebuild_builds_what_is_stale_once(scored: Cast) -> None:
    page(Client())
    team_rename(team=scored.charlies, actor=scored.charlie, name="Charlie Renamed")
    built = board_snapshots_rebuild(scored.challenge.pk)
    assert built == 4  # the public and the organizer view of both phases
    assert board_snapshots_rebuild(scored.challenge.pk) == 0  # safe twice
    version = board_version_get(challenge_id=scored.challenge.pk)
    assert set(BoardSnapshot.objects.values_list("version", flat=True)) == {version}
    with mock.patch("leaderboard.rankings.snapshots.board_build", side_effect=AssertionError("built")):
        assert "Charlie Renamed" in page(Client())


def test_an_older_build_never_replaces_a_newer_snapshot(scored: Cast) -> None:
    access = board_access_get(slug="demo", phase_slug="dev", viewer=scored.dave)
    board_snapshot_build(phase=scored.dev, view="public", version=access.version + 5)
    board_snapshot_build(phase=scored.dev, view="public", version=access.version)
    assert BoardSnapshot.objects.get(phase=scored.dev, view="public").version == access.version + 5


def test_each_committed_change_counts_once_and_folding_keeps_the_version(scored: Cast) -> None:
    start = board_version_get(challenge_id=scored.challenge.pk)
    for _ in range(3):
        board_changed(challenge_id=scored.challenge.pk)
    assert board_version_get(challenge_id=scored.challenge.pk) == start + 3
    # A change only adds a row: no shared counter row is written (that row lock deadlocked).
    assert not BoardVersion.objects.filter(pk=scored.challenge.pk).exists()
    board_changes_fold(challenge_id=scored.challenge.pk)
    assert not BoardChange.objects.filter(challenge_id=scored.challenge.pk).exists()
    assert board_version_get(challenge_id=scored.challenge.pk) == start + 3
    board_changed(challenge_id=scored.challenge.pk)
    assert board_version_get(challenge_id=scored.challenge.pk) == start + 4


def test_an_edit_in_the_django_admin_is_on_the_board_at_once(scored: Cast) -> None:
    page(Client())
    admin = scored.client("root")
    response = admin.post(f"/admin/accounts/team/{scored.charlies.pk}/change/", {
        "challenge": scored.challenge.pk, "name": "Charlie's", "kind": "participant", "affiliation": "",
        "is_anonymous": "on", "reference": "", "disqualified_reason": "",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000",
    })
    assert response.status_code == 302, response.content.decode()[:3000]
    assert "Charlie&#x27;s" not in page(Client()) and "Charlie" not in Client().get(url("board-csv")).content.decode()


def test_a_snapshot_of_another_format_or_that_no_longer_loads_is_built_again(scored: Cast) -> None:
    page(Client(), "dev")
    BoardSnapshot.objects.filter(phase=scored.dev).update(format=0)  # as a deploy with a new renderer finds it
    with mock.patch("leaderboard.rankings.snapshots.board_build", side_effect=AssertionError("built")):
        with pytest.raises(AssertionError, match="built"):
            Client().get(url("board"))
    assert page(Client())
    # A board pickled by code that changed since: a team member's answer builds it again, no error.
    BoardSnapshot.objects.filter(phase=scored.dev).update(board=b"not a pickle")
    assert 'class="own"' in page(scored.client("alice"))


def test_a_bootstrap_request_old_enough_to_be_lost_is_asked_again_by_the_next_reader(scored: Cast) -> None:
    assert "being computed" in page(Client())
    snapshot = BoardSnapshot.objects.get(phase=scored.dev, view="public")
    assert snapshot.significance_pending
    long_ago = timezone.now() - dt.timedelta(hours=2)
    BoardSnapshot.objects.filter(pk=snapshot.pk).update(built_at=long_ago)
    BoardSignificance.objects.filter(phase=scored.dev).update(requested_at=long_ago)
    with mock.patch("leaderboard.rankings.board_significance.enqueue_on_commit") as sent:
        page(Client())
    assert sent.called  # the request was sent again
    assert BoardSnapshot.objects.get(phase=scored.dev, view="public").built_at > long_ago


def test_a_failed_run_that_a_board_row_points_at_is_on_the_board(scored: Cast) -> None:
    entry = BoardEntry.objects.get(phase=scored.dev, team=scored.charlies)
    version = board_version_get(challenge_id=scored.challenge.pk)
    submission_fail(entry.submission_id, reason="x", cause=FailureCause.PLATFORM, from_statuses=[Status.FINISHED])
    assert board_version_get(challenge_id=scored.challenge.pk) == version + 1


def test_an_export_read_again_is_the_bytes_read_before_until_its_snapshot_is_rebuilt(scored: Cast) -> None:
    client, member = Client(), scored.client("alice")
    first = {name: client.get(url(name)).content for name in ("board-json", "board-csv", "board-chart")}
    mine = member.get(url("board-json")).content
    with CaptureQueriesContext(connection) as ctx:
        assert {name: client.get(url(name)).content for name in first} == first
        assert member.get(url("board-json")).content == mine
    copied = [q["sql"] for q in ctx.captured_queries if any(c in q["sql"] for c in ("payload_json", "records_csv",
                                                                                      "chart_svg"))]
    assert copied == []  # each rendering came from this process's copy of that build
    team_rename(team=scored.charlies, actor=scored.charlie, name="Charlie Renamed")
    for name in first:
        assert b"Charlie Renamed" in client.get(url(name)).content, name
    assert b"Charlie Renamed" in member.get(url("board-json")).content
    # A build at the same version (the bootstrap's result came in) is another build too.
    stored = BoardSnapshot.objects.get(phase=scored.dev, view="public")
    BoardSnapshot.objects.filter(pk=stored.pk).update(payload_json=b'{"rows": []}',
                                                      built_at=stored.built_at + dt.timedelta(microseconds=1))
    assert client.get(url("board-json")).content == b'{"rows": []}'
