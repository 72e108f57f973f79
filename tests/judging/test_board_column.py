"""The board's Human column: nothing of a round before it is published (board pages, exports, the
API, team and submission pages); after it, each judged system's human score with n and interval."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.judging.models import Round
from leaderboard.judging.results import round_human_scores
from leaderboard.judging.services import round_close, round_publish
from leaderboard.rankings.selectors import HUMAN_GROUP
from tests.builders.judging import MrcWorld, judged_round

MARKERS = ("Human evaluation", "human_n", "human-detail", '"human"')


def everything_a_team_or_the_public_reads(world: MrcWorld) -> list[str]:
    slug, phase = world.challenge.slug, world.dev.slug
    out = []
    for who in (None, "alice", "jane"):
        client = world.client(who)
        for name in ("board", "board-csv", "board-json"):
            out.append(client.get(reverse(name, args=[slug, phase])).content.decode())
        out.append(client.get(f"/api/v1/challenges/{slug}/phases/{phase}/leaderboard/").content.decode())
        out.append(client.get(reverse("challenge", args=[slug])).content.decode())
    alice = world.client("alice")
    out.append(alice.get(reverse("team", args=[slug])).content.decode())
    out.append(alice.get(reverse("submission-detail", args=[slug, world.systems["gold"].pk])).content.decode())
    return out


def shown_means(round: Round) -> list[str]:
    return [f"{s.mean:.2f}" for s in round_human_scores(round=round).values()]


def test_nothing_of_an_open_or_closed_round_reaches_a_board_export_api_or_team_page(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    for stage in ("open", "closed"):
        if stage == "closed":
            round_close(round=round, by=mrc_world.organizer)
        for text in everything_a_team_or_the_public_reads(mrc_world):
            for marker in MARKERS:
                assert marker not in text, (stage, marker)
    organizer_board = mrc_world.client("organizer").get(
        reverse("board-organizer", args=[mrc_world.challenge.slug, mrc_world.dev.slug])).content.decode()
    assert HUMAN_GROUP not in organizer_board  # not even the organizers' board before publication


def test_a_published_round_puts_a_human_column_with_n_and_interval_on_the_board(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    round_close(round=round, by=mrc_world.organizer)
    round_publish(round=round, by=mrc_world.organizer)
    scores = round_human_scores(round=round)
    slug, phase = mrc_world.challenge.slug, mrc_world.dev.slug
    page = mrc_world.client(None).get(reverse("board", args=[slug, phase])).content.decode()
    assert HUMAN_GROUP in page and page.count('class="num human"') == 3
    for score in scores.values():
        assert f"{score.mean:.2f}" in page and f"n {score.n}" in page
    rows = {r["team"]: r for r in mrc_world.client(None).get(reverse("board-json", args=[slug, phase])).json()["rows"]}
    gold = scores[mrc_world.systems["gold"].pk]
    assert rows["Alpha"]["human"] == pytest.approx(gold.mean) and rows["Alpha"]["human_n"] == 20
    assert rows["Alpha"]["human_ci95_low"] == pytest.approx(gold.low)
    assert rows["Alpha"]["human_ci95_high"] == pytest.approx(gold.high)
    csv_text = mrc_world.client(None).get(reverse("board-csv", args=[slug, phase])).content.decode()
    assert "human_n" in csv_text.splitlines()[0]
    api = mrc_world.client(None).get(f"/api/v1/challenges/{slug}/phases/{phase}/leaderboard/").json()
    assert any(r.get("human_n") == 20 for r in api["rows"])
