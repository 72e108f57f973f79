"""A leaderboard costs the same number of queries for 3 teams as for 30.

Each board is built through the services a real challenge goes through: teams created by their
owners (some anonymous), several scored submissions per team (``scores_write`` finishes them and
refreshes the board entry), a failed one here and there, and imported baselines (one of them a
failed run). Every endpoint that renders a board is measured for the public, a participant and an
organizer; the dev phase has two public datasets, the test phase a sealed Split III one.
"""

from __future__ import annotations

import random

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.accounts.services import team_create, team_update
from leaderboard.challenges.models import Phase, SubmissionKind
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.rankings.selectors import board_datasets
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.models import BoardEntry, Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.cast import Cast

ENDPOINTS = ("board", "board-json", "board-csv", "board-chart", "api-leaderboard")
VIEWERS = (None, "alice", "oscar")  # the public, a participant (Alpha, anonymous), an organizer
SUBMISSIONS_PER_TEAM = 3


def scored_submission(*, team, phase: Phase, rng: random.Random, fail: bool = False) -> Submission:  # type: ignore[no-untyped-def]
    submission = Submission.objects.create(
        team=team, phase=phase, kind=SubmissionKind.PREDICTIONS, status=Status.SCORING
    )
    if fail:
        submission.status = Status.FAILED
        submission.failure_reason = "dataset squad: 3 questions have no answer"
        submission.save(update_fields=["status", "failure_reason"])
        return submission
    results = {}
    for ds in board_datasets(phase=phase):
        f1 = round(rng.uniform(20, 95), 2)
        results[ds] = DatasetResult(metrics={"f1": f1, "em": round(f1 - rng.uniform(0, 15), 2)}, per_example=[])
    scores_write(submission=submission, results=results)
    return submission


def populate(phase: Phase, *, first: int, last: int, rng: random.Random) -> None:
    """Participant teams number first..last-1: every third anonymous, every fifth with a failed try too."""
    for n in range(first, last):
        owner = User.objects.create_user(f"owner{n:03d}")
        team = team_create(
            challenge=phase.challenge, owner=owner, name=f"Team {n:03d}", is_anonymous=n % 3 == 0,
            affiliation=f"Lab {n % 7}",
        )
        for _ in range(SUBMISSIONS_PER_TEAM):
            scored_submission(team=team, phase=phase, rng=rng)
        if n % 5 == 0:
            scored_submission(team=team, phase=phase, rng=rng, fail=True)


def baselines(phase: Phase, *, prefix: str) -> None:
    slugs = [ds.slug for ds in board_datasets(phase=phase)]
    results_import(
        phase=phase,
        entries=[
            ImportedEntry(name=f"{prefix} BiDAF", scores={s: {"f1": 60.0, "em": 50.0} for s in slugs},
                          affiliation="AI2", reference="https://arxiv.org/abs/1611.01603"),
            ImportedEntry(name=f"{prefix} crashed", scores={s: {"f1": None, "em": None} for s in slugs},
                          failure="out of memory on the hidden set"),
        ],
    )


def query_counts(cast: Cast, phase: Phase) -> dict[tuple[str, str], int]:
    counts = {}
    for viewer in VIEWERS:
        client = cast.client(viewer)
        for name in ENDPOINTS:
            url = reverse(name, kwargs={"slug": cast.challenge.slug, "phase_slug": phase.slug})
            assert client.get(url).status_code == 200, url  # warm per-process caches first
            with CaptureQueriesContext(connection) as ctx:
                response = client.get(url)
            assert response.status_code == 200, url
            counts[(name, viewer or "public")] = len(ctx.captured_queries)
    return counts


@pytest.mark.parametrize("phase_slug", ["dev", "test"])
def test_every_board_endpoint_costs_the_same_queries_for_3_and_30_teams(cast: Cast, phase_slug: str) -> None:
    phase = cast.challenge.phases.get(slug=phase_slug)
    rng = random.Random(7)
    team_update(team=cast.alpha, actor=cast.alice, is_anonymous=True)
    scored_submission(team=cast.alpha, phase=phase, rng=rng)
    scored_submission(team=cast.charlies, phase=phase, rng=rng)
    baselines(phase, prefix="Small")
    populate(phase, first=0, last=1, rng=rng)
    assert BoardEntry.objects.filter(phase=phase, team__kind="participant").count() == 3
    small = query_counts(cast, phase)

    populate(phase, first=1, last=28, rng=rng)
    baselines(phase, prefix="Large")
    assert BoardEntry.objects.filter(phase=phase, team__kind="participant").count() == 30
    large = query_counts(cast, phase)

    print(f"\n{phase_slug}: queries per request (3 teams -> 30 teams, plus baselines)")
    for key in small:
        print(f"  {key[0]:<16} {key[1]:<7} {small[key]:>3} -> {large[key]:>3}")
    assert large == small


def test_the_participant_sees_the_large_board_it_was_measured_on(cast: Cast) -> None:
    """A sanity check that the measured pages hold the rows: names hidden, own team shown, baselines in."""
    rng = random.Random(3)
    team_update(team=cast.alpha, actor=cast.alice, is_anonymous=True)
    scored_submission(team=cast.alpha, phase=cast.dev, rng=rng)
    populate(cast.dev, first=0, last=29, rng=rng)
    baselines(cast.dev, prefix="Large")
    url = reverse("board-json", kwargs={"slug": cast.challenge.slug, "phase_slug": "dev"})

    rows = cast.client("alice").get(url).json()["rows"]
    teams = [r["team"] for r in rows]
    assert len(rows) == 32  # 30 participant teams and 2 baselines
    assert "Alpha" in teams and teams.count("Anonymous") == 10  # Team 000, 003, ..., 027
    assert {"Large BiDAF", "Large crashed"} <= set(teams)
    public = [r["team"] for r in cast.client(None).get(url).json()["rows"]]
    assert "Alpha" not in public and public.count("Anonymous") == 11


# What a read served from the snapshot costs, by viewer: the board's phase and its challenge (two
# statements compiled once; the organizer view: and the staff check), its version, the snapshot's row
# or page; for a logged-in viewer, their session, user and team (with a row on this board or not, one
# statement), and on the page, whether their address awaits confirmation.  A 304 reads no rendering.
# Raised by one, any of these is a query more on every board request.
READ_QUERIES = {
    ("board", "public"): 5, ("board", "alice"): 9, ("board", "oscar"): 9,
    ("board-organizer", "oscar"): 10,
    **{(name, "public"): 4 for name in ("board-json", "board-csv", "board-chart", "api-leaderboard")},
    **{(name, viewer): 7 for name in ("board-json", "board-csv", "board-chart", "api-leaderboard")
       for viewer in ("alice", "oscar")},
    **{(name, "oscar"): 8 for name in ("board-organizer-json", "board-organizer-csv", "board-organizer-chart")},
}
UNCHANGED_QUERIES = {"public": 3, "alice": 6, "oscar": 6}


def test_a_board_read_from_its_snapshot_costs_a_few_queries_per_viewer(cast: Cast) -> None:
    rng = random.Random(11)
    team_update(team=cast.alpha, actor=cast.alice, is_anonymous=True)  # alice's row is named to her alone
    scored_submission(team=cast.alpha, phase=cast.test, rng=rng)
    scored_submission(team=cast.charlies, phase=cast.test, rng=rng)
    populate(cast.test, first=0, last=3, rng=rng)
    counts, unchanged = {}, {}
    for name, viewer in READ_QUERIES:
        client = cast.client(None if viewer == "public" else viewer)
        url = reverse(name, kwargs={"slug": cast.challenge.slug, "phase_slug": cast.test.slug})
        first = client.get(url)  # builds the snapshot
        assert first.status_code == 200, url
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200, url
        counts[name, viewer] = len(ctx.captured_queries)
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url, headers={"If-None-Match": first["ETag"]}).status_code == 304, url
        unchanged[name, viewer] = len(ctx.captured_queries)
    assert counts == READ_QUERIES
    assert unchanged == {(name, viewer): UNCHANGED_QUERIES[viewer] + (name.startswith("board-organizer"))
                         for name, viewer in READ_QUERIES}
