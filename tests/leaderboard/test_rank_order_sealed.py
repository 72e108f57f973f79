"""The order of a public board's rows must not bound a sealed score (issue 22, section 4).

Under ``sealed_aggregates: isolating`` rows rank on the full average, sealed datasets included, so two
rows with the same visible scores rank apart and a team bisects a sealed score with probe
submissions.  With a sealed dataset in the phase ``all`` is the default: the public board ranks on
the datasets it shows, and its header and its API answer say so.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import AnonymousUser, User
from django.test import Client

from leaderboard.challenges.models import Challenge, SealedAggregates
from leaderboard.rankings.selectors import ORGANIZER, board_build
from leaderboard.submissions.reload import challenge_load
from tests.builders.staged import SPEC, system_row

# Alpha and Beta show the same (XQuAD-en 80); their sealed scores differ by 80 points.
ROWS = {"alpha": {"xquad-en": 80.0, "coqa": 90.0, "drop": 90.0},
        "beta": {"xquad-en": 80.0, "coqa": 10.0, "drop": 10.0},
        "gamma": {"xquad-en": 70.0, "coqa": 100.0, "drop": 100.0}}


def _load(tmp_path: Path, sealing: str) -> Challenge:
    User.objects.get_or_create(username="oscar")
    spec = tmp_path / "order.yaml"
    spec.write_text(SPEC.format(coqa="", drop="", sealing=sealing), encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    for name, f1 in ROWS.items():
        system_row(challenge.phases.get(slug="test"), name, f1)
    return challenge


def _ranks(challenge: Challenge, **view: str) -> list[tuple[str, int | None]]:
    viewer = User.objects.get(username="oscar") if view else AnonymousUser()
    board = board_build(phase=challenge.phases.get(slug="test"), viewer=viewer, **view)  # type: ignore[arg-type]
    return [(row.team_name, row.rank) for row in board.rows]


def test_by_default_rows_with_the_same_visible_scores_share_a_rank(db: None, tmp_path: Path) -> None:
    challenge = _load(tmp_path, sealing="")
    assert challenge.sealed_aggregates == SealedAggregates.ALL
    public = _ranks(challenge)
    assert sorted(public)[:2] == [("alpha", 1), ("beta", 1)] and ("gamma", 3) in public
    # The organizers still see the full ranking.
    assert _ranks(challenge, view=ORGANIZER) == [("gamma", 1), ("alpha", 2), ("beta", 3)]
    # The board says what it ranks on: the page's header line and the API's note, the same sentence.
    note = ("Ranked by Macro F1 over the datasets shown: sealed datasets are left out of the average until "
            "the organizers reveal them")
    assert note in Client().get("/c/staged/board/test/").content.decode()
    answer = Client().get("/api/v1/challenges/staged/phases/test/leaderboard/").json()
    assert answer["ranking_note"].startswith(note)


def test_isolating_when_the_spec_asks_for_it_ranks_on_the_full_average(db: None, tmp_path: Path) -> None:
    """The old default, still available: the same visible scores rank 1 and 3 (what the default closes)."""
    challenge = _load(tmp_path, sealing="sealed_aggregates: isolating")
    assert _ranks(challenge) == [("gamma", 1), ("alpha", 2), ("beta", 3)]
    answer = Client().get("/api/v1/challenges/staged/phases/test/leaderboard/").json()
    assert answer["ranking_note"] == "Ranked by Macro F1 over every dataset of this phase; equal scores share a rank."
