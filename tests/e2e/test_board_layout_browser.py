"""Wide and long boards in a real browser, at 1366 px (a laptop) and 400 px (a phone).

- The MRQA demo board with all eight of its datasets and a dozen rows, public and organizer view,
  and the real MRQA 2019 board (twelve datasets): the table box is scrolled to its right end
  (``scrollLeft``), and the Rank and System cells of every row, and of the header, must still be
  inside the box and the window (getBoundingClientRect), side by side; each team's line stays
  one line (a long name is cut, not wrapped); the page itself never scrolls sideways; no text
  of the chart sticks out of it, and the rotated dataset names stay clear of the legend.
- A board of a thousand rows: page 1 holds ranks 1-100 and page 10 ranks 901-1000, readable and
  usable at both widths with the same sticky columns.
- The challenge page's phase table: each phase's status in UTC.

Screenshots go to ``$TMPDIR/readerboard-board-layout/``.  Needs Debian's ``chromium`` and
``chromium-driver`` (skipped without them, except in CI).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from pytest_django import Settings
from pytest_django.live_server_helper import LiveServer
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.challenges.models import Phase
from leaderboard.submissions.imports import load_results_file, results_import
from leaderboard.submissions.reload import challenge_load
from tests.builders.boards import WIDE_TEAMS, thousand_row_phase, wide_board_phase
from tests.builders.browser import sign_in
from tests.builders.cast import REPO, Cast
from tests.builders.chromium import WAIT_SECONDS, chromium_driver

SHOTS = Path(tempfile.gettempdir()) / "readerboard-board-layout"
WIDTHS = (1366, 400)
HEIGHT = 900

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def driver() -> Iterator[Any]:
    with chromium_driver(width=1366, height=HEIGHT) as d:
        yield d


def shot(driver: Any, name: str) -> Path:
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 10_000, path
    return path


LAYOUT = """
var box = document.getElementById('board-scroll'), b = box.getBoundingClientRect();
var rows = [];
document.querySelectorAll('#board tr').forEach(function (tr) {
  var rank = tr.querySelector('.rank'), system = tr.querySelector('.system');
  if (!rank || !system) return;  // the header's second row holds metric names only
  var r = rank.getBoundingClientRect(), s = system.getBoundingClientRect();
  rows.push({text: rank.textContent, rank: [r.left, r.right], system: [s.left, s.right]});
});
var lines = Array.prototype.map.call(document.querySelectorAll('#board .system-line'), function (l) {
  var who = l.querySelector('.who');
  return {text: who.textContent, height: l.getBoundingClientRect().height, cut: who.scrollWidth > who.clientWidth};
});
var last = document.querySelector('#board tbody tr td:last-child').getBoundingClientRect();
return {box: [b.left, b.right], scrolled: box.scrollLeft, scrollable: box.scrollWidth - box.clientWidth,
        window: document.documentElement.clientWidth, page: document.documentElement.scrollWidth,
        rows: rows, lines: lines, last: [last.left, last.right]};
"""


def scroll_table(driver: Any, *, left: int | None = None, top: int = 0) -> None:
    """Scroll the table's box (to its right end by default) and bring it into the window."""
    driver.execute_script(
        "var box = document.getElementById('board-scroll');"
        "box.scrollLeft = arguments[0] === null ? box.scrollWidth : arguments[0]; box.scrollTop = arguments[1];"
        "window.scrollTo(0, box.getBoundingClientRect().top + window.scrollY - 8);", left, top,
    )


def assert_sticky_columns_in_view(driver: Any, where: str, *, scrolled_right: bool = True) -> dict[str, Any]:
    layout: dict[str, Any] = driver.execute_script(LAYOUT)
    box_left, box_right = layout["box"]
    assert layout["page"] <= layout["window"], f"{where}: the page scrolls sideways ({layout['page']} px)"
    if scrolled_right and layout["scrollable"] > 0:
        assert layout["scrolled"] >= layout["scrollable"] - 1, f"{where}: the table did not scroll"
        # The last column is in view beside the sticky ones: the table really scrolled to its end.
        assert layout["last"][1] <= box_right + 1, where
    assert len(layout["rows"]) >= 2, where
    for row in layout["rows"]:
        (rank_left, rank_right), (system_left, system_right) = row["rank"], row["system"]
        label = f"{where}, row {row['text']!r}"
        assert box_left - 1 <= rank_left <= box_left + 1, f"{label}: rank at {rank_left}, the box at {box_left}"
        assert 0 <= rank_left and system_right <= layout["window"], f"{label}: out of the window"
        assert system_right <= box_right + 1, f"{label}: the system cell leaves the box"
        assert abs(system_left - rank_right) <= 1, f"{label}: rank ends at {rank_right}, system starts {system_left}"
    # A team's line is one line; on a phone a name with tags leaves them the next one, no more.
    for line in layout["lines"]:
        assert line["height"] <= (26 if layout["window"] > 600 else 44), \
            f"{where}: {line['text']!r} wraps ({line['height']} px high)"
    return layout


def assert_chart_fits(driver: Any, where: str) -> None:
    bad, labels_bottom, legend_top = driver.execute_script("""
      var svg = document.querySelector('.chart svg'), b = svg.getBoundingClientRect(), bad = [];
      svg.querySelectorAll('text').forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.left < b.left - .5 || r.right > b.right + .5 || r.top < b.top - .5 || r.bottom > b.bottom + .5)
          bad.push(t.textContent);
      });
      var bottoms = Array.prototype.map.call(svg.querySelectorAll('text.dataset'),
                                             function (t) { return t.getBoundingClientRect().bottom; });
      return [bad, Math.max.apply(null, bottoms), svg.querySelector('g.legend').getBoundingClientRect().top];
    """)
    assert bad == [], f"{where}: chart text cut off: {bad}"
    assert labels_bottom < legend_top, f"{where}: dataset names run into the legend"


def test_a_wide_board_keeps_rank_and_system_in_view_when_scrolled_right(
    live_server: LiveServer, driver: Any, tmp_path: Path
) -> None:
    phase = wide_board_phase(tmp_path)
    base = live_server.url
    url = f"{base}/c/{phase.challenge.slug}/board/{phase.slug}/"
    long_name = WIDE_TEAMS[3][0]

    for view, address in (("public", url), ("organizer", f"{url}organizer/")):
        if view == "organizer":
            sign_in(driver, base, User.objects.get(username="organizer"))
        for width in WIDTHS:
            driver.set_window_size(width, HEIGHT)
            driver.get(address)
            assert "Boards:" in driver.find_element("id", "board-phases").text
            layout = assert_sticky_columns_in_view(driver, f"{view} at {width}", scrolled_right=False)
            assert len(layout["rows"]) == 13  # the header and a dozen rows
            shot(driver, f"wide-{view}-{width}")
            scroll_table(driver)
            layout = assert_sticky_columns_in_view(driver, f"{view} at {width}, scrolled right")
            assert layout["scrolled"] > 0, f"{view} at {width}: a board of eight datasets fits?"
            assert any(line["cut"] for line in layout["lines"] if line["text"].startswith(long_name))
            shot(driver, f"wide-{view}-{width}-scrolled-right")
            # Halfway down the table too: the header stays in view, and the sticky cells.
            driver.execute_script("document.querySelector('.chart').scrollIntoView()")
            assert_chart_fits(driver, f"{view} at {width}")
            shot(driver, f"wide-{view}-{width}-chart")


def test_the_mrqa_2019_board_of_twelve_datasets_keeps_its_columns_and_chart_in_view(
    live_server: LiveServer, driver: Any
) -> None:
    User.objects.get_or_create(username="organizer")
    archive = REPO / "deploy" / "demo"
    challenge_load(spec_path=archive / "mrqa2019-archive.yaml")
    phase = Phase.objects.get(challenge__slug="mrqa2019", slug="test")
    data = archive / "data" / "mrqa2019"
    results_import(phase=phase, entries=load_results_file(
        data / "ood-test-results.json", fmt="mrqa-codalab", mapping=data / "ood-test-mapping.yaml"), replace=True)
    for width in WIDTHS:
        driver.set_window_size(width, HEIGHT)
        driver.get(f"{live_server.url}/c/mrqa2019/board/test/")
        scroll_table(driver)
        layout = assert_sticky_columns_in_view(driver, f"MRQA 2019 at {width}, scrolled right")
        assert layout["scrolled"] > 0
        shot(driver, f"mrqa2019-{width}-scrolled-right")
        driver.execute_script("document.querySelector('.chart').scrollIntoView()")
        assert_chart_fits(driver, f"MRQA 2019 at {width}")  # "ComplexWebQuestions", "RelationExtraction"
        shot(driver, f"mrqa2019-{width}-chart")


def test_a_thousand_row_board_is_paged_and_stays_usable_at_both_widths(
    cast: Cast, live_server: LiveServer, driver: Any
) -> None:
    thousand_row_phase(cast.dev)
    url = f"{live_server.url}/c/{cast.challenge.slug}/board/{cast.dev.slug}/"
    for width in WIDTHS:
        driver.set_window_size(width, HEIGHT)
        for page, ranks in ((1, range(1, 101)), (10, range(901, 1001))):
            driver.get(f"{url}?page={page}")
            shown = [td.get_attribute("data-v") for td in driver.find_elements(By.CSS_SELECTOR, "#board td.rank")]
            assert shown == [str(r) for r in ranks], f"page {page} at {width}"
            assert driver.find_element(By.CSS_SELECTOR, "#pages-top strong").text == str(page)
            shot(driver, f"thousand-page{page}-{width}")
            # Down and right inside the table's box: the header and the first columns stay.
            scroll_table(driver, top=1500)
            assert_sticky_columns_in_view(driver, f"1,000 rows, page {page} at {width}")
            header = driver.execute_script(
                "var h = document.querySelector('#board thead th.rank').getBoundingClientRect(),"
                " b = document.getElementById('board-scroll').getBoundingClientRect(); return [h.top, b.top];")
            assert abs(header[0] - header[1]) <= 1, f"page {page} at {width}: the header scrolled away"
            shot(driver, f"thousand-page{page}-{width}-scrolled")
        # The page links work from the page: "Next" from page 10 is gone, page 9 is a link.
        driver.find_element(By.CSS_SELECTOR, '#pages-top a[href="?page=9#pages-top"]').click()
        assert driver.find_element(By.CSS_SELECTOR, "#board td.rank").get_attribute("data-v") == "801"


def test_the_challenge_page_shows_each_phases_status_in_utc(
    cast: Cast, live_server: LiveServer, driver: Any
) -> None:
    now = timezone.now()
    Phase.objects.filter(pk=cast.dev.pk).update(opens_at=now - dt.timedelta(days=3),
                                                closes_at=now + dt.timedelta(days=2, hours=5, minutes=30))
    Phase.objects.filter(pk=cast.test.pk).update(opens_at=now + dt.timedelta(days=6, hours=1, minutes=30),
                                                 closes_at=now + dt.timedelta(days=30))
    Phase.objects.create(challenge=cast.challenge, slug="pilot", name="Pilot", kind="dev", portion="dev",
                         opens_at=now - dt.timedelta(days=60), closes_at=now - dt.timedelta(days=30))
    for width in WIDTHS:
        driver.set_window_size(width, HEIGHT)
        driver.get(f"{live_server.url}/c/{cast.challenge.slug}/")
        heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#phases th")]
        assert heads[:4] == ["Phase", "Status", "Opens (UTC)", "Closes (UTC)"]
        status = {tr.find_element(By.TAG_NAME, "td").text: tr.find_element(By.CSS_SELECTOR, "td.phase-state").text
                  for tr in driver.find_elements(By.CSS_SELECTOR, "#phases tr[class^=phase-]")}
        assert status == {"Pilot": "closed", "Dev": "open, 2 days 5 h left", "Test": "opens in 6 days 1 h"}, status
        assert "All times are UTC." in driver.find_element(By.TAG_NAME, "footer").text
        heights = [td.size["height"] for td in driver.find_elements(By.CSS_SELECTOR, "#phases td.phase-state")]
        assert max(heights) <= 36, f"a status wraps at {width} px: {heights}"  # one line (with padding)
        driver.execute_script("document.getElementById('phases').scrollIntoView()")
        shot(driver, f"challenge-phases-{width}")


def test_404_403_and_413_are_pages_in_the_sites_style(
    cast: Cast, live_server: LiveServer, driver: Any, settings: Settings, tmp_path: Path
) -> None:
    settings.ROOT_URLCONF = "tests.leaderboard.test_board_layout"  # the site, plus a page that refuses all
    settings.MAX_PREDICTION_UPLOAD_BYTES = 1_000
    base = live_server.url
    sign_in(driver, base, cast.alice)
    big = tmp_path / "predictions.json"
    big.write_text('{"squad": {"q": "' + "a" * 200_000 + '"}}')
    for width in WIDTHS:
        driver.set_window_size(width, HEIGHT)
        driver.get(f"{base}/c/no-such-challenge/")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Not found"
        assert "alice" in driver.find_element(By.CSS_SELECTOR, "header.top nav").text
        shot(driver, f"error-404-{width}")
        driver.get(f"{base}/test-forbidden/")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Not allowed"
        assert "organizers may open this page" in driver.find_element(By.ID, "error-message").text
        shot(driver, f"error-403-{width}")
        driver.get(f"{base}/c/{cast.challenge.slug}/submit/")
        Select(driver.find_element(By.ID, "id_phase")).select_by_value(str(cast.dev.pk))
        driver.find_element(By.ID, "id_file").send_keys(str(big))
        driver.find_element(By.ID, "upload-submit").click()
        # The click returns before the answer to the form's POST is shown: wait for it.
        WebDriverWait(driver, WAIT_SECONDS, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: any(h.text == "Upload too large" for h in d.find_elements(By.TAG_NAME, "h1")))
        assert "uploads are limited to 1000 bytes" in driver.find_element(By.ID, "error-message").text
        assert driver.find_element(By.CSS_SELECTOR, "header.top .brand").text == "Readerboard"
        shot(driver, f"error-413-{width}")
