"""A board says which splits and datasets each average covers, from the suite's own definition."""

from __future__ import annotations

import html

from tests.builders.cast import Cast


def test_the_dev_board_says_its_ranking_average_leaves_out_split_i(cast: Cast) -> None:
    cast.challenge.ranking_scope = {"splits": ["II", "III"]}
    cast.challenge.save()
    page = html.unescape(cast.client("alice").get("/c/demo/board/dev/").content.decode())
    start = page.index('id="averages"')
    line = page[start:page.index("</p>", start)]
    assert "the mean of F1 over XQuAD-en (Split II); SQuAD (Split I) is not in it." in line, line
