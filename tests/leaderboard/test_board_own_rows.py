"""A member of a team with a row is served the snapshot's stored answers with their own parts put in,
and what they get is byte for byte what the whole board rebuilt with their row marked gives: on every
page of a paginated board, for a named row and an anonymous one (named to its members in the row, the
tag table, the chart and the exports), in the public view and the organizer view."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from django.test import Client

from leaderboard.accounts.services import team_update
from leaderboard.challenges.models import Dataset
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.challenges.versions import board_changed
from leaderboard.rankings.charts import board_chart_svg
from leaderboard.rankings.pages import board_content_html
from leaderboard.rankings.selectors import ORGANIZER, PUBLIC, board_datasets, board_payload
from leaderboard.rankings.snapshots import (
    BoardAccess,
    _csv_bytes,
    board_access_get,
    board_chart_for,
    board_csv_for,
    board_for,
    board_json_for,
    board_page_for,
)
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.boards import thousand_row_phase
from tests.builders.cast import Cast

pytestmark = pytest.mark.django_db

ROWS = 250  # three pages of a hundred rows
PAGES = ("1", "2", "3", None, "x", "0", "99")
# Team 0001 scores 94.95: alpha's row ranks 2nd (in the chart), the charlies' 141st (page 2).
SCORE = {"alice": 94.97, "charlie": 88.0}


def _score(cast: Cast, who: str) -> None:
    team = cast.alpha if who == "alice" else cast.charlies
    submission = Submission.objects.create(team=team, phase=cast.dev, kind="predictions", status=Status.SCORING)
    scores_write(submission=submission, results={
        ds: DatasetResult(metrics={"f1": SCORE[who], "em": 60.0}, per_example=[])
        for ds in board_datasets(phase=cast.dev)
    })


@pytest.fixture
def board(cast: Cast) -> Cast:
    thousand_row_phase(cast.dev, rows=ROWS)
    _score(cast, "alice")
    _score(cast, "charlie")
    team_update(team=cast.alpha, actor=cast.alice, is_anonymous=True)
    # Tags on the datasets: the page's tag table names each row of the page.
    Dataset.objects.filter(challenge=cast.challenge, slug="squad").update(tags={"source": "Wikipedia"})
    Dataset.objects.filter(challenge=cast.challenge, slug="xquad-en").update(tags={"source": "web"})
    board_changed(challenge_id=cast.challenge.pk)
    return cast


def _access(cast: Cast, who: str, view: str) -> BoardAccess:
    access = board_access_get(slug="demo", phase_slug="dev", viewer=getattr(cast, who), view=view)
    assert access.own_team is not None
    return access


def _rebuilt(access: BoardAccess) -> dict[str, object]:
    """What the slow path gives: the whole board unpickled, their row changed, everything rendered."""
    board = board_for(access)
    return {
        "pages": {n: board_content_html(board, n) for n in PAGES},
        "json": board_payload(board),
        "csv": _csv_bytes(board),
        "chart": board_chart_svg(board).encode(),
    }


@pytest.mark.parametrize("view", [PUBLIC, ORGANIZER])
@pytest.mark.parametrize("who", ["alice", "charlie"])
def test_a_team_members_answers_are_the_stored_ones_with_their_row_spliced_in(board: Cast, who: str,
                                                                              view: str) -> None:
    if view == ORGANIZER:
        board.challenge.staff.add(getattr(board, who))  # an organizer whose team has a row
    access = _access(board, who, view)
    board_page_for(access, 1)  # builds the snapshot
    expected = _rebuilt(access)
    with mock.patch("leaderboard.rankings.snapshots.board_for", side_effect=AssertionError("rebuilt")):
        pages = {n: board_page_for(access, n) for n in PAGES}
        json_bytes, csv_bytes, chart = board_json_for(access), board_csv_for(access), board_chart_for(access)
    assert pages == expected["pages"]
    assert json.loads(json_bytes) == expected["json"]
    assert csv_bytes == expected["csv"]
    assert chart == expected["chart"]


def test_the_anonymous_row_is_named_to_its_members_only(board: Cast) -> None:
    alpha = board.alpha.name
    mine = board.client("alice").get("/c/demo/board/dev/").content.decode()
    theirs = board.client("charlie").get("/c/demo/board/dev/").content.decode()
    public = Client().get("/c/demo/board/dev/").content.decode()
    assert mine.count(alpha) >= 3  # the row, the tag table, the chart
    assert alpha not in theirs and alpha not in public
    assert '<tr class="own' in mine and '<tr class="own' not in public
    assert 'id="own-row-link"' in theirs and "(rank 141) is on page 2" in theirs
    assert alpha.encode() in board.client("alice").get("/c/demo/board/dev/export.json").content
    assert alpha.encode() in board.client("alice").get("/c/demo/board/dev/export.csv").content
    assert alpha.encode() in board.client("alice").get("/c/demo/board/dev/chart.svg").content
    assert alpha.encode() not in Client().get("/c/demo/board/dev/export.csv").content


@pytest.mark.parametrize("who", ["alice", "charlie", "oscar", None])
@pytest.mark.parametrize("path", ["", "?page=2", "export.json", "export.csv", "chart.svg", "organizer/",
                                  "organizer/export.json", "api"])
def test_every_viewer_gets_a_304_for_the_version_they_hold(board: Cast, who: str | None, path: str) -> None:
    if path.startswith("organizer/") and who != "oscar":
        return
    address = ("/api/v1/challenges/demo/phases/dev/leaderboard/" if path == "api"
               else f"/c/demo/board/dev/{path}")
    client = board.client(who)
    first = client.get(address)
    assert first.status_code == 200
    assert client.get(address, headers={"If-None-Match": first["ETag"]}).status_code == 304
    board_changed(challenge_id=board.challenge.pk)
    assert client.get(address, headers={"If-None-Match": first["ETag"]}).status_code == 200
