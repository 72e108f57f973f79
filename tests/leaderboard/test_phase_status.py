"""Where a phase stands (upcoming, open with the time left, closed), and what the challenge page says."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from leaderboard.challenges.models import Phase
from leaderboard.challenges.selectors import PhaseState, duration_text, phase_status
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import REPO, Cast

OPENS = dt.datetime(2019, 7, 29, tzinfo=dt.UTC)
CLOSES = dt.datetime(2019, 8, 12, 23, 59, 59, tzinfo=dt.UTC)


def phase() -> Phase:
    return Phase(slug="test", name="Test", opens_at=OPENS, closes_at=CLOSES)


def test_a_phase_is_upcoming_until_it_opens_and_says_when() -> None:
    status = phase_status(phase(), now=OPENS - dt.timedelta(days=2, hours=5, minutes=59))
    assert (status.state, status.at) == (PhaseState.UPCOMING, OPENS)
    assert status.text == "opens in 2 days 5 h"


def test_a_phase_opens_at_its_opening_time_and_says_how_long_is_left() -> None:
    status = phase_status(phase(), now=OPENS)
    assert (status.state, status.at) == (PhaseState.OPEN, CLOSES)
    assert status.left == CLOSES - OPENS
    assert status.text == "open, 14 days left"
    assert phase_status(phase(), now=CLOSES - dt.timedelta(hours=3, minutes=7, seconds=1)).text == "open, 3 h 7 min left"


def test_a_phase_is_closed_from_its_closing_time_as_the_submission_check_has_it() -> None:
    assert phase_status(phase(), now=CLOSES - dt.timedelta(seconds=1)).state == PhaseState.OPEN
    status = phase_status(phase(), now=CLOSES)
    assert (status.state, status.at, status.left, status.text) == (PhaseState.CLOSED, CLOSES, None, "closed")


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (dt.timedelta(days=400, hours=5), "400 days"),
        (dt.timedelta(days=1234), "1,234 days"),
        (dt.timedelta(days=3, hours=4, minutes=59), "3 days 4 h"),
        (dt.timedelta(days=2), "2 days"),
        (dt.timedelta(days=1, hours=1), "1 day 1 h"),
        (dt.timedelta(hours=5, minutes=1, seconds=59), "5 h 1 min"),
        (dt.timedelta(hours=2), "2 h"),
        (dt.timedelta(minutes=12, seconds=59), "12 min"),
        (dt.timedelta(seconds=59), "less than a minute"),
        (dt.timedelta(seconds=-5), "less than a minute"),
    ],
)
def test_time_left_is_rounded_down(delta: dt.timedelta, text: str) -> None:
    assert duration_text(delta) == text


def test_the_archive_page_says_it_is_closed_without_inviting_anyone_in(db: None, client: Client) -> None:
    User.objects.create_user("organizer")
    challenge_load(spec_path=REPO / "deploy" / "demo" / "mrqa2019-archive.yaml")
    page = client.get("/c/mrqa2019/").content.decode()
    assert "This challenge is closed" in page and "closed on\n  2019-08-12 23:59 UTC" in page
    assert "to take part" not in page and "Create or join a team" not in page
    assert "unlimited" not in page and "/24 h" not in page  # no quota line
    assert '<tr class="phase-closed"><td>Hidden test (2019)</td><td class="phase-state">closed</td>' in page
    assert "/c/mrqa2019/board/test/" in page  # the board is still there


def test_an_open_phase_shows_the_time_left_and_an_upcoming_one_when_it_opens(cast: Cast) -> None:
    now = timezone.now()
    Phase.objects.filter(pk=cast.dev.pk).update(closes_at=now + dt.timedelta(days=3, hours=4, minutes=30))
    Phase.objects.filter(pk=cast.test.pk).update(opens_at=now + dt.timedelta(days=20, hours=2))
    page = cast.client(None).get(f"/c/{cast.challenge.slug}/").content.decode()
    assert '<td class="phase-state">open, 3 days 4 h left</td>' in page
    assert '<td class="phase-state">opens in 20 days</td>' in page
    assert "to take part" in page and "5/24 h" in page

    # A member sees the submit link while a phase is open, and not once every phase is upcoming.
    alice = cast.client("alice")
    assert "Submit predictions" in alice.get(f"/c/{cast.challenge.slug}/").content.decode()
    Phase.objects.filter(pk=cast.dev.pk).update(opens_at=now + dt.timedelta(days=1))
    page = alice.get(f"/c/{cast.challenge.slug}/").content.decode()
    assert "Submit predictions" not in page and "Your submissions" in page


def test_a_member_of_a_closed_challenge_keeps_the_links_to_their_submissions(cast: Cast) -> None:
    Phase.objects.filter(challenge=cast.challenge).update(closes_at=timezone.now() - dt.timedelta(minutes=1))
    page = cast.client("alice").get(f"/c/{cast.challenge.slug}/").content.decode()
    assert "This challenge is closed" in page
    assert "Your submissions" in page and "Submit predictions" not in page


@pytest.mark.parametrize(
    ("before", "opens_before", "text"),
    [
        # Far off, a count of days says less than the date; a placeholder close (2099) is no date at all.
        (dt.timedelta(days=90), dt.timedelta(days=-1), "opens on 2019-07-29"),
        (dt.timedelta(days=61), dt.timedelta(days=61), "open until 2019-08-12"),
        (dt.timedelta(days=59, hours=1), dt.timedelta(days=61), "open, 59 days left"),
        (dt.timedelta(days=26_327), dt.timedelta(days=26_328), "open, no closing date set"),
    ],
)
def test_a_far_deadline_reads_as_a_date_or_as_none(before: dt.timedelta, opens_before: dt.timedelta,
                                                   text: str) -> None:
    # ``opens_before``: how long before the close the phase opens (negative: it opens at OPENS).
    opens = OPENS if opens_before < dt.timedelta() else CLOSES - opens_before
    status = phase_status(Phase(slug="t", name="T", opens_at=opens, closes_at=CLOSES), now=CLOSES - before)
    assert status.text == text


def test_the_home_page_shows_each_challenges_status_and_next_deadline(cast: Cast) -> None:
    now = timezone.now()
    slug = cast.challenge.slug
    # Two open phases: the next deadline is the one that closes first, by the phase table's rule.
    Phase.objects.filter(pk=cast.dev.pk).update(closes_at=now + dt.timedelta(days=3, hours=4, minutes=30))
    Phase.objects.filter(pk=cast.test.pk).update(opens_at=now - dt.timedelta(days=1),
                                                 closes_at=now + dt.timedelta(days=9))
    home = cast.client(None).get("/").content.decode()
    assert f'<a href="/c/{slug}/"><strong>' in home
    assert '<div class="challenge-status phase-open">Dev: open, 3 days 4 h left</div>' in home
    # The cast's own placeholder close (2099) reads as no date, never "26,327 days left".
    Phase.objects.filter(pk=cast.dev.pk).update(closes_at=dt.datetime(2099, 1, 1, tzinfo=dt.UTC))
    Phase.objects.filter(pk=cast.test.pk).update(closes_at=dt.datetime(2099, 1, 1, tzinfo=dt.UTC))
    home = cast.client(None).get("/").content.decode()
    assert "Dev: open, no closing date set" in home and "days left" not in home
    challenge_page = cast.client(None).get(f"/c/{slug}/").content.decode()
    assert "open, no closing date set" in challenge_page and "2099-01-01 00:00</td>" not in challenge_page
    assert "none set</span>" in challenge_page
    Phase.objects.filter(challenge=cast.challenge).update(opens_at=now + dt.timedelta(days=2, hours=1, minutes=5))
    assert "Dev: opens in 2 days 1 h" in cast.client(None).get("/").content.decode()
    Phase.objects.filter(challenge=cast.challenge).update(opens_at=now - dt.timedelta(days=30),
                                                          closes_at=dt.datetime(2026, 1, 5, tzinfo=dt.UTC))
    assert '<div class="challenge-status phase-closed">closed on 2026-01-05</div>' in cast.client(None).get("/").content.decode()
