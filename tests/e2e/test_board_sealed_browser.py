"""A board with withheld aggregates in a real browser, as the public and in the organizer view.

The demo cast's test phase has XQuAD-en (Split II) and the sealed CoQA (Split III, "Hidden-07"):
its macro averages and Split III average would give CoQA's scores away, so the public board
shows them as sealed with a note, while the organizer view shows every number under a banner.
Screenshots at 1366 and 400 px wide go to the temporary directory (readerboard-sealed-*.png).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import SubmissionKind
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.browser import board_rows, sign_in
from tests.builders.cast import Cast

SHOTS = Path(tempfile.gettempdir())
WIDTHS = (1366, 400)

pytestmark = pytest.mark.django_db(transaction=True)


def scored(cast: Cast, team: Team, scores: dict[str, dict[str, float | None]]) -> Submission:
    submission = Submission.objects.create(team=team, phase=cast.test, kind=SubmissionKind.PREDICTIONS,
                                           status=Status.SCORING)
    datasets = {d.slug: d for d in cast.challenge.datasets.all()}
    scores_write(submission=submission, results={
        datasets[slug]: DatasetResult(metrics=m, per_example=[]) for slug, m in scores.items()
    })
    return submission


def shoot(driver, name: str) -> list[Path]:  # type: ignore[no-untyped-def]
    paths = []
    for width in WIDTHS:
        driver.set_window_size(width, 1100)
        path = SHOTS / f"readerboard-sealed-{name}-{width}.png"
        driver.save_screenshot(str(path))
        paths.append(path)
    driver.set_window_size(1366, 1100)
    return paths


def test_withheld_aggregates_read_sealed_with_a_note_and_the_organizer_view_shows_them(
    cast: Cast, live_server: LiveServer, browser: Any  # noqa: F811
) -> None:
    # The layout of "isolating" (the default before issue 22): the full average ranks, withheld where sealed.
    type(cast.challenge).objects.filter(pk=cast.challenge.pk).update(sealed_aggregates="isolating")
    scored(cast, cast.alpha, {"xquad-en": {"f1": 81.25, "em": 70.5}, "coqa": {"f1": 67.8912, "em": 61.2345}})
    scored(cast, cast.charlies, {"xquad-en": {"f1": 77.75, "em": 66.0}, "coqa": {"f1": 64.5678, "em": 62.3456}})
    results_import(phase=cast.test, entries=[
        ImportedEntry(name="BiDAF baseline", affiliation="AI2", reference="https://arxiv.org/abs/1611.01603",
                      scores={"xquad-en": {"f1": 60.1, "em": 48.2}, "coqa": {"f1": 40.3, "em": 31.7}}),
    ])
    late_team = team_create(challenge=cast.challenge, owner=cast.dave, name="Dave's Lab")
    late = scored(cast, late_team, {"xquad-en": {"f1": 90.0, "em": 80.0}, "coqa": {"f1": 70.0, "em": 60.0}})
    Submission.objects.filter(pk=late.pk).update(excluded_reason="submitted after the deadline (by e-mail)")

    driver = browser
    base = live_server.url
    url = f"{base}/c/{cast.challenge.slug}/board/{cast.test.slug}/"

    driver.get(url)
    note = driver.find_element(By.ID, "withheld-note").text
    assert "Macro F1, Macro EM, Split III F1" in note and "sealed until the organizers reveal it" in note
    rows = board_rows(driver)
    assert [r[0] for r in rows] == ["1", "2", "3", "—"]
    assert [r[1].split(" (")[0].split("\n")[0] for r in rows][:3] == ["Alpha", "Charlie's", "BiDAF baseline"]
    assert rows[0][2] == "sealed" and rows[0][4] == "81.25"  # Macro F1 withheld, Split II F1 shown
    assert "submitted after the deadline" in rows[3][1]
    assert "CoQA" not in driver.page_source and "67.89" not in driver.page_source
    public_shots = shoot(driver, "public")

    sign_in(driver, base, cast.oscar)
    driver.get(url)  # the public address: the public view, for an organizer too
    assert driver.find_element(By.ID, "withheld-note") and "CoQA" not in driver.page_source
    driver.get(f"{url}organizer/")
    banner = driver.find_element(By.ID, "organizer-banner").text
    assert "Organizer view: do not share this page or its exports." in banner
    assert "Macro F1, Macro EM, Split III F1" in banner
    rows = board_rows(driver)
    assert rows[0][2] == f"{(81.25 + 67.8912) / 2:.2f}" and "67.89" in driver.page_source
    organizer_shots = shoot(driver, "organizer")
    for path in (*public_shots, *organizer_shots):
        assert path.stat().st_size > 10_000, path
