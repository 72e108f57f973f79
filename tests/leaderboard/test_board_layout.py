"""Boards people link from papers, and the pages around them.

- CSV exports neutralise cells a spreadsheet would run as a formula (OWASP "CSV injection"),
  in the public and the organizer view, and negative numbers stay numbers;
- a board of a thousand rows is shown a hundred rows a page, ranks staying the whole board's,
  while the exports and the API hold every row;
- the Rank and System columns are sticky (markup and style sheet), and long team names are cut,
  not wrapped, with the whole name in a title;
- 404, 403 (also a CSRF failure) and 413 are pages in the site's style, and the demo runs with
  DEBUG off, its static files still served.

The same boards in a real browser: test_board_layout_browser.py.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from leaderboard import urls as site_urls
from leaderboard.challenges.models import Phase, SubmissionKind
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.challenges.versions import board_changed
from leaderboard.core.csv_safe import csv_cell_safe, csv_rows_safe
from leaderboard.rankings.selectors import board_datasets
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.boards import THOUSAND, thousand_row_phase, wide_board_phase
from tests.builders.cast import REPO, Cast

SITE_CSS = REPO / "leaderboard" / "core" / "static" / "readerboard" / "site.css"


# --- CSV cells ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ('=HYPERLINK("http://evil.example/","click")', '\'=HYPERLINK("http://evil.example/","click")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
        ("\t=1+1", "'\t=1+1"),
        ("\r=1+1", "'\r=1+1"),
        ("-", "'-"),
        ("- 5", "'- 5"),
        # Plain numbers, as text or as numbers, stay numbers.
        ("-3.25", "-3.25"),
        ("+12", "+12"),
        ("-1e-5", "-1e-5"),
        ("-.5", "-.5"),
        (-3.25, -3.25),
        (-7, -7),
        (81.25, 81.25),
        # Everything else is written as it is.
        ("Team = Alpha", "Team = Alpha"),
        ("Alpha", "Alpha"),
        ("", ""),
        (None, None),
        (True, True),
    ],
)
def test_a_cell_a_spreadsheet_would_run_gets_an_apostrophe_and_a_number_stays_a_number(cell: object,
                                                                                      written: object) -> None:
    assert csv_cell_safe(cell) == written


def test_the_header_is_neutralised_too() -> None:
    rows = list(csv_rows_safe(["rank", "=cmd"], [{"rank": 1, "=cmd": "@x"}]))
    assert rows == [["rank", "'=cmd"], [1, "'@x"]]


def _csv_rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode("utf-8"))))


@pytest.mark.django_db
def test_both_csv_exports_neutralise_formulas_and_keep_negative_numbers(tmp_path: Path) -> None:
    phase = wide_board_phase(tmp_path)
    slugs = [ds.slug for ds in board_datasets(phase=phase)]
    # A row whose every cell a spreadsheet would evaluate, and one negative score (a metric
    # such as a difference to a baseline can be negative): it must stay a number.
    results_import(phase=phase, entries=[
        ImportedEntry(name="@SUM(1+1)*cmd|' /C calc'!A0", affiliation="+44 Labs", is_baseline=False,
                      scores={slug: {"f1": -2.5 if slug == "squad" else 10.0, "em": 5.0} for slug in slugs}),
    ])
    organizer = Client()
    organizer.force_login(User.objects.get(username="organizer"))  # the demo spec's staff
    exports = {
        "public": Client().get(f"/c/mrqa-demo/board/{phase.slug}/export.csv"),
        "organizer": organizer.get(f"/c/mrqa-demo/board/{phase.slug}/organizer/export.csv"),
    }
    for view, response in exports.items():
        assert response.status_code == 200, view
        rows = {row["team"]: row for row in _csv_rows(response.content)}
        assert '\'=HYPERLINK("http://evil.example/","click me")' in rows, (view, list(rows))
        assert rows['\'=HYPERLINK("http://evil.example/","click me")']["affiliation"] == "'@risk"
        row = rows["'@SUM(1+1)*cmd|' /C calc'!A0"]
        assert row["affiliation"] == "'+44 Labs"
        assert row["SQuAD F1"] == "-2.5"  # a number, as the spreadsheet should read it
        assert float(row["rank"]) > 0
        # No cell of the file starts a formula.
        for record in rows.values():
            for value in record.values():
                assert not value.startswith(("=", "+", "@", "\t", "\r")), (view, value)
                assert not value.startswith("-") or re.fullmatch(r"-[0-9.]+", value), (view, value)
    # The JSON export and the API keep the text as it is: they are data, not a spreadsheet.
    teams = [r["team"] for r in Client().get(f"/c/mrqa-demo/board/{phase.slug}/export.json").json()["rows"]]
    assert '=HYPERLINK("http://evil.example/","click me")' in teams


# --- a board of a thousand rows -----------------------------------------------------------------------


def _ranks(page: str) -> list[int]:
    return [int(r) for r in re.findall(r'<td class="rank" data-v="(\d+)">', page)]


@pytest.mark.django_db
def test_a_thousand_row_board_shows_a_hundred_rows_a_page_with_global_ranks_and_whole_exports(cast: Cast) -> None:
    thousand_row_phase(cast.dev)
    # alice's team ranks 500th: between Team 0499 (70.05) and Team 0500 (70.00).
    submission = Submission.objects.create(team=cast.alpha, phase=cast.dev, kind=SubmissionKind.PREDICTIONS,
                                           status=Status.SCORING)
    scores_write(submission=submission, results={
        ds: DatasetResult(metrics={"f1": 70.02, "em": 60.0}, per_example=[]) for ds in board_datasets(phase=cast.dev)
    })
    board = "/c/demo/board/dev/"
    public = Client()

    first = public.get(board).content.decode()
    assert _ranks(first) == list(range(1, 101))
    assert "Rows 1–100 of 1,001" in first
    assert 'href="?page=2#pages-top" rel="next"' in first and 'href="?page=11#pages-top"' in first
    assert "Team 0001" in first and "Team 0100" in first and "Team 0101" not in first

    tenth = public.get(board, {"page": 10}).content.decode()
    assert _ranks(tenth) == list(range(901, 1001))
    assert "Rows 901–1,000 of 1,001" in tenth and '<strong aria-current="page">10</strong>' in tenth
    assert _ranks(public.get(board, {"page": 11}).content.decode()) == [1001]
    # A malformed page number shows the first page, one past the end the last.
    assert _ranks(public.get(board, {"page": "x"}).content.decode())[:1] == [1]
    assert _ranks(public.get(board, {"page": 99}).content.decode()) == [1001]

    # alice reads where her team's row is; the public does not get such a link.
    mine = cast.client("alice").get(board).content.decode()
    assert 'id="own-row-link"' in mine and "(rank 500) is on page 5" in mine
    assert 'id="own-row-link"' not in first
    assert 'id="own-row-link"' not in cast.client("alice").get(board, {"page": 5}).content.decode()

    # The organizer view is paginated the same way.
    organizer = cast.client("oscar").get(f"{board}organizer/", {"page": 10}).content.decode()
    assert _ranks(organizer) == list(range(901, 1001))

    # The exports and the API hold the whole board.
    csv_rows = _csv_rows(public.get(f"{board}export.csv").content)
    assert len(csv_rows) == THOUSAND + 1 and csv_rows[-1]["rank"] == "1001"
    assert len(public.get(f"{board}export.json").json()["rows"]) == THOUSAND + 1
    api = public.get("/api/v1/challenges/demo/phases/dev/leaderboard/").json()["rows"]
    assert [r["rank"] for r in api] == list(range(1, THOUSAND + 2))
    organizer_csv = _csv_rows(cast.client("oscar").get(f"{board}organizer/export.csv").content)
    assert len(organizer_csv) == THOUSAND + 1


@pytest.mark.django_db
def test_a_board_of_one_page_has_no_page_links(cast: Cast) -> None:
    thousand_row_phase(cast.dev, rows=100)
    page = Client().get("/c/demo/board/dev/").content.decode()
    assert _ranks(page) == list(range(1, 101))
    assert "board-pages" not in page


# --- sticky columns, names on one line, phase names -----------------------------------------------------


def _css_rules(selector: str) -> str:
    """The declarations of the style sheet's rules whose selector list is ``selector`` or has it."""
    css = re.sub(r"/\*.*?\*/", "", SITE_CSS.read_text(), flags=re.S)
    return " ".join(
        body for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css)
        if selector in [s.strip() for s in selectors.split(",")]
    )


@pytest.mark.django_db
def test_the_rank_and_system_columns_are_sticky_with_opaque_backgrounds(tmp_path: Path) -> None:
    phase = wide_board_phase(tmp_path)
    page = Client().get(f"/c/mrqa-demo/board/{phase.slug}/").content.decode()
    assert '<div class="scroll board-scroll" id="board-scroll">' in page
    assert '<th rowspan="2" data-sort="num" class="rank">Rank</th>' in page
    assert '<th rowspan="2" data-sort="text" class="system">System</th>' in page
    assert page.count('<td class="rank" data-v=') == 12 and page.count('<td class="system" data-v=') == 12

    for cell in ("table.board .rank", "table.board .system"):
        assert "position: sticky" in _css_rules(cell) and "background: #fff;" in _css_rules(cell), cell
    assert "left: 0" in _css_rules("table.board .rank")
    assert "left: var(--rank-w)" in _css_rules("table.board .system")
    assert "position: sticky" in _css_rules("table.board thead")
    assert "background: #f1f5f9" in _css_rules("table.board th.rank")
    assert "background: #f1f5f9" in _css_rules("table.board th.system")
    assert "background: #fff8e6" in _css_rules("table.board tr.baseline td.system")
    # Collapsed borders stay behind when a sticky cell moves: the board's are separate.
    assert "border-collapse: separate" in _css_rules("table.board")
    assert "overflow: auto" in _css_rules(".board-scroll")


@pytest.mark.django_db
def test_a_long_team_name_is_one_line_cut_with_its_whole_text_in_a_title(tmp_path: Path) -> None:
    phase = wide_board_phase(tmp_path)
    page = Client().get(f"/c/mrqa-demo/board/{phase.slug}/").content.decode()
    name = "BERT-cased-whole-word-masking multi-task ensemble with adversarial training"
    assert f'<span class="who" title="{name} (Clova AI)">{name}' in page
    # Participants' text is escaped in the title as in the cell.
    assert 'title="=HYPERLINK(&quot;http://evil.example/&quot;,&quot;click me&quot;) (@risk)"' in page
    line = _css_rules("table.board .system-line")
    assert "white-space: nowrap" in line and "max-width" in line
    assert "text-overflow: ellipsis" in _css_rules("table.board .system-line .who")


@pytest.mark.django_db
def test_a_board_links_the_challenges_other_boards_by_their_names(cast: Cast) -> None:
    page = Client().get("/c/demo/board/dev/").content.decode()
    nav = re.search(r'<nav class="board-phases".*?</nav>', page, flags=re.S)
    assert nav is not None
    assert '<strong aria-current="page">Dev</strong>' in nav.group(0)
    assert '<a href="/c/demo/board/test/">Test</a>' in nav.group(0)
    organizer = cast.client("oscar").get("/c/demo/board/dev/organizer/").content.decode()
    assert '<a href="/c/demo/board/test/organizer/">Test</a>' in organizer
    # A board that is not public is not linked from the public boards.
    Phase.objects.filter(pk=cast.test.pk).update(board_public=False)
    board_changed(challenge_id=cast.challenge.pk)  # as a reload does (challenge_load)
    assert "board-phases" not in Client().get("/c/demo/board/dev/").content.decode()


# --- error pages ----------------------------------------------------------------------------------------


def _forbidden(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("Only the challenge's organizers may open this page.")


# This module is also a URL conf: the site's, plus one page that refuses everyone.
urlpatterns = [path("test-forbidden/", _forbidden), *site_urls.urlpatterns]
handler403 = site_urls.handler403
handler404 = site_urls.handler404
handler500 = site_urls.handler500


def _in_site_style(page: str) -> bool:
    return '<header class="top">' in page and "readerboard/site.css" in page and "<footer>" in page


@pytest.mark.django_db
def test_a_missing_page_is_the_sites_404(cast: Cast) -> None:
    response = Client().get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404 and _in_site_style(page) and "<h1>Not found</h1>" in page
    # Not the resolver's argument: every URL pattern it tried, the compute workers' internal API among them.
    for address in ("/no-such-page/", "/c/demo/submit-system/", "/internal/v1/nope/"):
        page = html.unescape(Client().get(address).content.decode())
        assert "internal" not in page and "tried" not in page and "<p>Not found.</p>" in page, page
    response = Client().get("/c/no-such-challenge/board/dev/")
    assert response.status_code == 404 and _in_site_style(response.content.decode())


@pytest.mark.django_db
def test_a_refused_page_is_the_sites_403(cast: Cast, settings) -> None:  # type: ignore[no-untyped-def]
    assert site_urls.handler403 == "leaderboard.core.views.permission_denied"
    settings.ROOT_URLCONF = __name__
    response = cast.client("alice").get("/test-forbidden/")
    page = html.unescape(response.content.decode())
    assert response.status_code == 403 and _in_site_style(page)
    assert "<h1>Not allowed</h1>" in page and "Only the challenge's organizers may open this page." in page
    assert "alice" in page  # the header knows who is logged in


@pytest.mark.django_db
def test_a_form_sent_without_its_csrf_token_gets_the_sites_403(cast: Cast) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.alice)
    response = client.post("/c/demo/team/", {"name": "x"})
    page = response.content.decode()
    assert response.status_code == 403 and _in_site_style(page)
    assert "This form could not be sent" in page and "CSRF verification failed" not in page


@pytest.mark.django_db
def test_an_upload_over_the_limit_is_the_sites_413_page_and_json_in_the_api(cast: Cast, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MAX_PREDICTION_UPLOAD_BYTES = 1_000
    body = b"x" * 200_000
    response = cast.client("alice").post("/c/demo/submit/", data=body, content_type="application/octet-stream")
    page = response.content.decode()
    assert response.status_code == 413 and response["Content-Type"].startswith("text/html")
    assert _in_site_style(page) and "<h1>Upload too large</h1>" in page
    assert "uploads are limited to 1000 bytes" in page and "Nothing was stored" in page
    # Refused before the session is read, the page does not guess who is logged in.
    assert "Log in" not in page and "Log out" not in page
    api = cast.client("alice").post("/api/v1/challenges/demo/submissions/", data=body,
                                    content_type="application/octet-stream")
    assert api.status_code == 413 and "limited to 1000 bytes" in api.json()["detail"]


def test_the_demo_settings_have_debug_off_unless_asked_for() -> None:
    env = {k: v for k, v in os.environ.items() if k != "READERBOARD_DEBUG"}
    env["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings.dev"
    script = "import django; from django.conf import settings; django.setup(); print(settings.DEBUG)"

    def debug(extra: dict[str, str]) -> str:
        out = subprocess.run([sys.executable, "-c", script], env={**env, **extra}, cwd=REPO,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    assert debug({}) == "False"
    assert debug({"READERBOARD_DEBUG": "1"}) == "True"
    demo = (REPO / "deploy" / "demo.sh").read_text()
    assert "DJANGO_SETTINGS_MODULE=leaderboard.settings.dev" in demo
    assert "READERBOARD_DEBUG" not in demo  # nothing in the demo turns it back on
    # Static files by WhiteNoise, not Django's static view (which answered /static/..%2f.. with a 500).
    assert re.search(r"manage\.py runserver .*--nostatic", demo) and "--insecure" not in demo


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def test_the_demo_server_serves_static_files_and_the_sites_404_with_debug_off(tmp_path: Path) -> None:
    """The demo's own command line (deploy/demo.sh): dev settings, ``runserver --noreload --insecure``."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "READERBOARD_DEBUG"}
    env.update(DJANGO_SETTINGS_MODULE="leaderboard.settings.dev", READERBOARD_VAR_DIR=str(tmp_path / "var"))
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
                assert time.monotonic() < deadline, "runserver did not start"
                time.sleep(0.2)
        status, kind, css = _get(f"http://127.0.0.1:{port}/static/readerboard/site.css")
        assert status == 200 and kind.startswith("text/css") and "table.board" in css
        status, kind, page = _get(f"http://127.0.0.1:{port}/no-such-page/")
        assert status == 404 and _in_site_style(page)
        assert "Django tried these URL patterns" not in page and "DEBUG = True" not in page
    finally:
        server.terminate()
        server.wait(timeout=10)
