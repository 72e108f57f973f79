"""A board says which splits and datasets each average covers, from the suite's own definition."""

from __future__ import annotations

import html
import zipfile

from leaderboard.challenges.models import Challenge
from leaderboard.challenges.starting_kit import starting_kit_build
from tests.builders.breakdowns import submit
from tests.builders.cast import Cast


def test_the_dev_board_says_its_ranking_average_leaves_out_split_i(cast: Cast) -> None:
    cast.challenge.ranking_scope = {"splits": ["II", "III"]}
    cast.challenge.save()
    page = html.unescape(cast.client("alice").get("/c/demo/board/dev/").content.decode())
    start = page.index('id="averages"')
    line = page[start:page.index("</p>", start)]
    assert "the mean of F1 over XQuAD-en (Split II); SQuAD (Split I) is not in it." in line, line


def averages_line(page: str) -> list[str]:
    start = page.index('id="averages"')
    text = page[page.index(">", start) + 1:page.index("</p>", start)].removeprefix("What each average covers: ")
    return [line + "." for line in text.removesuffix(".").split(". ")]


def test_the_submission_page_and_the_kit_say_what_the_board_says_each_average_covers(cast: Cast) -> None:
    cast.challenge.ranking_scope = {"splits": ["II", "III"]}
    cast.challenge.save()
    board = averages_line(html.unescape(cast.client("alice").get("/c/demo/board/dev/").content.decode()))
    assert "Macro F1: the mean of F1 over XQuAD-en (Split II); SQuAD (Split I) is not in it." in board, board
    submission = submit(cast, "dev")
    page = html.unescape(cast.client("alice").get(f"/c/demo/submissions/{submission.pk}/").content.decode())
    assert averages_line(page) == board
    kit = starting_kit_build(challenge=Challenge.objects.get(pk=cast.challenge.pk))
    with zipfile.ZipFile(kit.path) as archive:
        readme = next(archive.read(n).decode() for n in archive.namelist() if n.endswith("/README.md"))
    listed = [line.removeprefix("- ") for line in readme.splitlines() if line.startswith("- Macro ")
              or line.startswith("- Split ")]
    assert listed == board and len(board) >= 2, (listed, board)
