"""Budget tracks: the spec's limits, the upload a track refuses, the track board, the frontier, the page.

Runs are driven through the services a worker calls (claim with its hardware class, finish with its
figures), on the demo-like cast; the pages are read through Django's test client as a team and as an
organizer read them.  A real container run over a memory budget is in tests/sandbox/test_budget_runs.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaderboard.challenges.budget_tracks import AXES, BudgetTrack, budget_tracks_parse
from leaderboard.core.errors import ServiceError
from leaderboard.rankings.budget_boards import RunFigures, budget_chart_svg, pareto_frontier, track_board
from leaderboard.rankings.selectors import BoardRow
from leaderboard.submissions.models import RunAttempt, Submission
from tests.builders.budget_runs import budget_run
from tests.builders.cast import Cast
from tests.builders.runs import bundle
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db

MEMORY_TRACK = {"name": "Small memory", "peak_memory_mib": 100}
SIZE_TRACK = {"name": "Tiny image", "image_mib": 0.0001}  # ~100 bytes: no real bundle fits


def test_a_track_needs_a_name_and_known_limits() -> None:
    assert budget_tracks_parse([{"name": " 6 GiB ", "image_mib": 6144}], where="w") == [
        {"name": "6 GiB", "image_mib": 6144.0}]
    cases = {
        "expected a list": {"name": "x"},
        "a track needs at least one limit": [{"name": "x"}],
        "unknown key 'memory'": [{"name": "x", "memory": 5}],
        "expected a number, 0 or more": [{"name": "x", "gpus": -1}],
        "two tracks are named 'x'": [{"name": "x", "gpus": 1}, {"name": "x", "gpus": 2}],
        "w[0].name": [{"gpus": 1}],
    }
    for message, raw in cases.items():
        with pytest.raises(ServiceError, match=re.escape(message)):
            budget_tracks_parse(raw, where="w")


@pytest.fixture
def tracked(cast: Cast) -> Cast:
    system_phases(cast)
    for phase in (cast.dev, cast.test):
        phase.budget_tracks = budget_tracks_parse([SIZE_TRACK, MEMORY_TRACK, {"name": "Roomy", "image_mib": 500}],
                                                  where="test")
        phase.save()
    return cast


def upload(cast: Cast, **data: object) -> tuple[int, dict]:
    response = cast.client("alice").post(f"/api/v1/challenges/{cast.challenge.slug}/systems/", {
        "phase": "dev", "kind": "code_bundle", "file": bundle(), **data})
    return response.status_code, response.json()


def test_an_upload_naming_a_track_its_size_is_over_is_refused_with_the_figures(tracked: Cast) -> None:
    status, body = upload(tracked, track="Tiny image")
    assert status == 400, body
    text = str(body)
    size = Submission.objects.count()
    assert size == 0, "nothing stored, no quota spent"
    assert "over the 'Tiny image' track's limit" in text and "MiB" in text and "bytes" in text, text
    status, body = upload(tracked, track="Tiny")
    assert status == 400 and "has no budget track 'Tiny'" in str(body) and "Roomy" in str(body), body
    # Named for a track it fits, or not named at all: taken (it is then on every track, marked where over).
    assert upload(tracked, track="Roomy")[0] == 201
    assert upload(tracked)[0] == 201


def test_the_upload_page_offers_the_track_field_only_where_a_phase_has_tracks(cast: Cast) -> None:
    system_phases(cast)
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/submit/system/")
    assert page.status_code == 200 and 'name="track"' not in page.content.decode()
    cast.test.budget_tracks = [MEMORY_TRACK]
    cast.test.save()
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/submit/system/")
    assert 'name="track"' in page.content.decode()


def _entry(name: str, score: float | None, **figures: float | None) -> RunFigures:
    row = BoardRow(rank=1, tied=False, team_id=1, team_name=name, affiliation="", is_baseline=False,
                   is_anonymous=False, is_own=False, submission_id=1, status="finished", failure_reason="",
                   submitted_at=None)
    return RunFigures(row=row, score=score, figures=figures, withheld={}, image_digest="sha256:abc",
                      hardware_class="box")


def test_the_frontier_of_a_small_fixed_case() -> None:
    # (cost, score): 0 and 2 and 4 are best for their cost; 1 is beaten by 0 (cheaper, better), 3 by 2
    # (as cheap, better), 5 ties 4 exactly (neither beats the other), 6 costs more than 4 for less.
    points = [(1.0, 50.0), (2.0, 40.0), (3.0, 70.0), (3.0, 60.0), (10.0, 80.0), (10.0, 80.0), (12.0, 79.0)]
    assert pareto_frontier(points) == {0, 2, 4, 5}
    assert pareto_frontier([]) == set()
    assert pareto_frontier([(5.0, 1.0)]) == {0}


def test_a_track_ranks_the_runs_within_and_lists_the_others_over_budget() -> None:
    track = BudgetTrack("6 GiB", {"peak_memory_mib": 6144.0, "image_mib": 500.0})
    board = track_board(track, [
        _entry("big", 90.0, peak_memory_mib=8000.0, image_mib=100.0),
        _entry("small", 70.0, peak_memory_mib=1000.0, image_mib=50.0),
        _entry("same", 70.0, peak_memory_mib=2000.0, image_mib=60.0),
        _entry("unmeasured", 60.0, peak_memory_mib=None, image_mib=10.0),
    ])
    assert [(r.entry.row.team_name, r.rank, dict(r.over)) for r in board.rows] == [
        ("small", 1, {}), ("same", 1, {}), ("unmeasured", 3, {}), ("big", None, {"peak_memory_mib": 8000.0})]
    assert board.rows[2].unknown == ("peak_memory_mib",)


def test_the_chart_marks_the_frontier_and_carries_digest_and_hardware() -> None:
    axis = next(a for a in AXES if a.key == "peak_memory_mib")
    svg = budget_chart_svg([_entry("a<b", 50.0, peak_memory_mib=100.0), _entry("c", 40.0, peak_memory_mib=200.0),
                            _entry("d", 60.0, peak_memory_mib=300.0)], axis=axis, score_label="F1")
    assert svg.count('class="point frontier-point"') == 2 and svg.count('class="point"') == 1
    assert "a&lt;b" in svg and "sha256:abc" in svg and "box" in svg and 'class="frontier"' in svg


def test_a_run_over_a_memory_budget_is_marked_with_its_figure_on_the_track_board(tracked: Cast, tmp_path: Path) -> None:
    submission = budget_run(phase=tracked.dev, team_name="Lab", tmp=tmp_path, peak_mib=300, seconds=12.34)
    assert RunAttempt.objects.get(submission=submission).hardware_class == "test box, 2 vCPU"
    page = tracked.client("bob").get(f"/c/{tracked.challenge.slug}/board/dev/budgets/")
    assert page.status_code == 200
    html = page.content.decode()
    memory = html[html.index("Small memory"):html.index("Roomy")]
    assert "over budget" in memory and "peak memory 300 MiB" in memory, memory
    roomy = html[html.index("<h2>Roomy"):html.index("Cost against score")]
    assert "over budget" not in roomy and ">1<" in roomy
    assert (submission.image_digest or submission.sha256)[:19] in html
    assert "test box, 2 vCPU" in html and 'class="point frontier-point"' in html
    # The board links to the page.
    assert f"/c/{tracked.challenge.slug}/board/dev/budgets/" in tracked.client("bob").get(
        f"/c/{tracked.challenge.slug}/board/dev/").content.decode()


def test_on_hidden_data_a_team_reads_the_figures_its_run_page_shows_and_no_more(tracked: Cast, tmp_path: Path) -> None:
    budget_run(phase=tracked.test, team_name="Lab", tmp=tmp_path, peak_mib=120, seconds=12.6)
    slug = tracked.challenge.slug
    team = tracked.client("alice").get(f"/c/{slug}/board/test/budgets/").content.decode()
    organizer = tracked.client("oscar").get(f"/c/{slug}/board/test/organizer/budgets/")
    assert organizer.status_code == 200
    organizer_html = organizer.content.decode()
    # The test portion reads a sealed dataset: its size, and so the time per 1,000 questions, is the organizers'.
    figures = team[team.index('id="budget-figures"'):]
    assert "withheld" in figures and "sealed dataset" in figures
    per_1000 = re.findall(r'<td class="num">([0-9.,]+) s</td>', organizer_html[organizer_html.index('id="budget-figures"'):])
    assert per_1000, "the organizer reads the time per 1,000 questions"
    assert "over budget" in organizer_html and "peak memory 120 MiB" in organizer_html
    assert tracked.client("bob").get(f"/c/{slug}/board/test/organizer/budgets/").status_code == 404
