"""A submission's page says where it stands on its board (the public board's own rank) and links to it;
it never says more than that board: no rank where the board is not public, none for a hidden row."""

from __future__ import annotations

import html
import re

from leaderboard.challenges.models import Phase
from leaderboard.challenges.versions import board_changed
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast, gold_predictions, upload


def scored(cast: Cast, *, team: str, wrong_every: int, phase: str = "dev") -> Submission:
    owner = cast.alpha if team == "alpha" else cast.charlies
    submission = submission_create_predictions(
        team=owner, phase=cast.dev if phase == "dev" else cast.test, user=cast.alice if team == "alpha" else cast.charlie,
        upload=upload(gold_predictions(phase, wrong_every=wrong_every)), limit_bytes=10 * 1024 * 1024)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def place(cast: Cast, who: str, submission: Submission) -> str:
    page = html.unescape(cast.client(who).get(f"/c/demo/submissions/{submission.pk}/").content.decode())
    found = re.search(r'<dd id="board-place">(.*?)</dd>', page)
    assert found, "no board line on the submission page"
    return re.sub(r"<[^>]+>", "", found.group(1))


def board_ranks(cast: Cast, phase: str) -> dict[str, int | None]:
    rows = cast.client(None).get(f"/api/v1/challenges/demo/phases/{phase}/leaderboard/").json()["rows"]
    return {r["team"]: r["rank"] for r in rows}


def test_the_page_shows_the_rank_the_board_shows_and_links_to_the_board(cast: Cast) -> None:
    weaker = scored(cast, team="alpha", wrong_every=2)
    stronger = scored(cast, team="charlies", wrong_every=5)
    ranks = board_ranks(cast, "dev")
    assert ranks["Alpha"] == 2 and ranks[cast.charlies.name] == 1, ranks
    assert place(cast, "alice", weaker) == "rank 2 of 2 on the Dev board"
    assert place(cast, "charlie", stronger) == "rank 1 of 2 on the Dev board"
    page = cast.client("alice").get(f"/c/demo/submissions/{weaker.pk}/").content.decode()
    assert '<a href="/c/demo/board/dev/">Dev board</a>' in page
    # The team's earlier submission is not its board row: the page says so rather than a stale rank.
    newer = scored(cast, team="alpha", wrong_every=7)
    assert place(cast, "alice", weaker).startswith("not on the Dev board")
    assert place(cast, "alice", newer) == "rank 1 of 2 on the Dev board"


def test_no_rank_where_the_board_is_not_public_or_the_row_is_hidden(cast: Cast) -> None:
    submission = scored(cast, team="alpha", wrong_every=3)
    Phase.objects.filter(pk=cast.dev.pk).update(board_public=False)
    assert place(cast, "alice", submission) == "the Dev board is not public yet"
    assert "/c/demo/board/dev/" not in cast.client("alice").get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    Phase.objects.filter(pk=cast.dev.pk).update(board_public=True)
    assert place(cast, "alice", submission) == "rank 1 of 1 on the Dev board"
    Submission.objects.filter(pk=submission.pk).update(hidden_reason="copied from another team")
    board_changed(challenge_id=cast.challenge.pk)
    assert place(cast, "alice", submission) == "not on the public board: the organizers took it off"


def test_a_disqualified_row_is_on_the_board_unranked_with_its_reason(cast: Cast) -> None:
    submission = scored(cast, team="alpha", wrong_every=3)
    Submission.objects.filter(pk=submission.pk).update(excluded_reason="disqualified: used the test answers")
    board_changed(challenge_id=cast.challenge.pk)
    assert board_ranks(cast, "dev") == {"Alpha": None}
    assert place(cast, "alice", submission) == "on the Dev board, not ranked: disqualified: used the test answers"


def test_on_a_board_ranked_over_the_shown_datasets_the_page_gives_the_public_rank(cast: Cast) -> None:
    # The test phase ranks on the sealed CoQA too: its public board ranks over the datasets it shows.
    weaker = scored(cast, team="alpha", wrong_every=2, phase="test")
    stronger = scored(cast, team="charlies", wrong_every=9, phase="test")
    ranks = board_ranks(cast, "test")
    assert place(cast, "alice", weaker) == f"rank {ranks['Alpha']} of 2 on the Test board"
    assert place(cast, "charlie", stronger) == f"rank {ranks[cast.charlies.name]} of 2 on the Test board"
    assert {ranks["Alpha"], ranks[cast.charlies.name]} == {1, 2}
