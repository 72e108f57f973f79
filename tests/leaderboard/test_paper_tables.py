"""Dataset tags, averages by tag, and the overview paper's tables (issue 12).

The board is built from published results with known numbers, so every average, gain and
correlation is known by hand: four teams (two of them baselines) on a dev phase (SQuAD-like
Split I and "Alpha QA", Split II) and a test phase ("Alpha QA", "Beta_QA & Co", both Split II,
and a sealed Split III dataset whose scores end in .25 or .75, so they are easy to look for).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import Challenge, Dataset
from leaderboard.challenges.spec import SpecError, dataset_tags_parse, spec_check
from leaderboard.challenges.versions import board_changed
from leaderboard.core.display import fixed
from leaderboard.rankings.board_significance import METHOD, NO_QUESTION_SCORES, RowSignificance, Significance
from leaderboard.rankings.paper import WITHHELD, board_tag_averages, paper_tables_build
from leaderboard.rankings.paper_tables import (
    Column,
    Table,
    improvement_over_baseline,
    latex_escape,
    markdown_escape,
    pearson,
    table_latex,
    table_markdown,
    tables_csv,
    tables_latex,
    tables_markdown,
)
from leaderboard.rankings.selectors import ORGANIZER, PUBLIC, Board, board_build
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.reload import challenge_load, challenge_plan
from tests.builders.cast import REPO

SPEC = """
slug: tagged
title: Tagged
metric_suite: mrqa
staff: [oscar]
# The public ranking on the full average, withheld where sealed (the default before issue 22).
sealed_aggregates: isolating
ranking: {splits: [II, III]}
phases:
  - {slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: []}
  - {slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: []}
datasets:
  - {slug: sq, name: SQ, split: I, portions: [dev]}
  - {slug: alpha, name: Alpha QA, split: II, portions: [dev, test],
     tags: {passage source: Wikipedia, question source: crowdsourced}}
  - {slug: beta, name: "Beta_QA & Co", split: II, portions: [test],
     tags: {passage source: Wikipedia, question source: domain experts}}
  - {slug: gamma, name: Gamma Secret, split: III, sealed_alias: Hidden-01, portions: [test],
     tags: {passage source: web, question source: crowdsourced}}
"""

# team -> (is a baseline, dev {sq, alpha}, test {alpha, beta, gamma}); F1, with EM 10 below.
RESULTS: dict[str, tuple[bool, dict[str, float], dict[str, float]]] = {
    "Gamma & Sons_1": (False, {"sq": 90.0, "alpha": 80.0}, {"alpha": 70.0, "beta": 60.0, "gamma": 47.25}),
    "Delta": (False, {"sq": 85.0, "alpha": 75.0}, {"alpha": 66.0, "beta": 64.0, "gamma": 41.75}),
    "Base": (True, {"sq": 80.0, "alpha": 60.0}, {"alpha": 55.0, "beta": 50.0, "gamma": 43.5}),
    "Base small": (True, {"sq": 70.0, "alpha": 50.0}, {"alpha": 50.0, "beta": 52.0, "gamma": 31.25}),
}
# Macro F1 on the test board (Splits II and III): (70 + 60 + 47.25) / 3 and so on.
TEST_MACRO = {name: sum(test.values()) / 3 for name, (_, _, test) in RESULTS.items()}
SEALED_SCORES = ("47.25", "41.75", "43.50", "31.25")


def _entries(portion: int) -> list[ImportedEntry]:
    return [ImportedEntry(name=name, affiliation="Lab", is_baseline=baseline,
                          scores={slug: {"f1": f1, "em": f1 - 10} for slug, f1 in row[portion - 1].items()})
            for name, (baseline, *row) in RESULTS.items()]


@pytest.fixture
def challenge(db: None, tmp_path: Path) -> Challenge:
    User.objects.create_user("oscar")
    spec = tmp_path / "tagged.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    results_import(phase=challenge.phases.get(slug="dev"), entries=_entries(1))
    results_import(phase=challenge.phases.get(slug="test"), entries=_entries(2))
    return challenge


def _board(challenge: Challenge, view: str = PUBLIC) -> Board:
    """The test phase's board, for the public or (the organizer view) for oscar."""
    viewer = User.objects.get(username="oscar") if view == ORGANIZER else AnonymousUser()
    return board_build(phase=challenge.phases.get(slug="test"), viewer=viewer, view=view)


def _ready(board: Board) -> Board:
    """The board as it reads once its bootstrap ran: the first two rows one rank group, the third
    significantly worse, the last a published result without per-question scores."""
    rows = {row.team_name: row.submission_id for row in board.rows}
    board.significance = Significance(status="ready", rows={
        rows["Gamma & Sons_1"]: RowSignificance(ci=(58.0, 60.0), group=1, rank_range=(1, 2)),
        rows["Delta"]: RowSignificance(ci=(56.0, 58.5), p_value=0.2, group=1, rank_range=(1, 2)),
        rows["Base"]: RowSignificance(ci=(48.0, 51.0), p_value=0.001, group=3, rank_range=(3, 3)),
        rows["Base small"]: RowSignificance(note=NO_QUESTION_SCORES),
    })
    return board


def _oscar() -> User:
    return User.objects.get(username="oscar")


# --------------------------------------------------------------------------- tags in the spec


def _checked(datasets: list[dict[str, Any]]) -> None:
    spec_check({"slug": "t", "datasets": datasets})


@pytest.mark.parametrize(("tags", "message"), [
    (["Wikipedia"], "t.datasets[0].tags: expected a mapping of tag to value, like {question source: crowdsourced"),
    ({"passage source": ["Wikipedia", "web"]},
     "t.datasets[0].tags.passage source: expected a word or phrase, like Wikipedia or yes, found ['Wikipedia', 'web']"),
    ({"passage source": None}, "t.datasets[0].tags.passage source: expected a word or phrase, like Wikipedia or yes, "
                               "found None"),
    ({"passage source": "  "}, "t.datasets[0].tags.passage source: expected a word or phrase"),
    ({"": "Wikipedia"}, "t.datasets[0].tags: a tag name must be text, like 'passage source', found ''"),
    ({1: "Wikipedia"}, "t.datasets[0].tags: a tag name must be text, like 'passage source', found 1"),
    ({"Source": "web", "source": "Wikipedia"}, "t.datasets[0].tags: tags 'Source' and 'source' differ only in case"),
    ({"source": "w" * 61}, "t.datasets[0].tags.source: 61 characters, more than the 60 a tag value may have"),
    ({"s" * 41: "web"}, f"t.datasets[0].tags: tag name {'s' * 41!r} has 41 characters, more than the 40"),
])
def test_a_tag_that_cannot_group_datasets_is_refused_saying_where_and_why(tags: Any, message: str) -> None:
    with pytest.raises(SpecError) as refused:
        _checked([{"slug": "a", "split": "II", "tags": tags}])
    assert message in refused.value.message


def test_a_tag_or_value_is_spelt_one_way_across_datasets() -> None:
    with pytest.raises(SpecError) as refused:
        _checked([{"slug": "a", "tags": {"passage source": "Wikipedia"}},
                  {"slug": "b", "tags": {"passage source": "wikipedia"}}])
    assert refused.value.message.startswith(
        "t.datasets[1].tags.passage source: 'wikipedia' is spelt 'Wikipedia' in datasets[0]")
    with pytest.raises(SpecError) as refused:
        _checked([{"slug": "a", "tags": {"passage source": "Wikipedia"}},
                  {"slug": "b", "tags": {"Passage source": "web"}}])
    assert refused.value.message.startswith(
        "t.datasets[1].tags: tag 'Passage source' is spelt 'passage source' in datasets[0]")
    _checked([{"slug": "a", "tags": {"passage source": "Wikipedia"}},  # one spelling: accepted
              {"slug": "b", "tags": {"passage source": "Wikipedia", "question source": "experts"}}])


def test_yes_no_numbers_and_spaces_are_kept_as_the_organizer_wrote_them() -> None:
    # YAML reads an unquoted yes/no as a boolean: the tag still reads yes/no.
    assert dataset_tags_parse({"passage-dependent questions": True, "independent": False, "year": 2019,
                               " passage source ": " Wikipedia "}, where="x") == {
        "passage-dependent questions": "yes", "independent": "no", "year": "2019", "passage source": "Wikipedia"}
    assert dataset_tags_parse(None, where="x") == {}


def test_a_spec_with_a_bad_tag_is_refused_before_anything_is_stored(db: None, tmp_path: Path) -> None:
    User.objects.create_user("oscar")
    spec = tmp_path / "bad.yaml"
    spec.write_text(SPEC.replace("passage source: web", "passage source: [web, transcripts]"), encoding="utf-8")
    with pytest.raises(SpecError) as refused:
        challenge_load(spec_path=spec)
    assert "tagged.datasets[3].tags.passage source: expected a word or phrase" in refused.value.message
    assert not Challenge.objects.filter(slug="tagged").exists()


def test_tags_are_stored_kept_through_a_reload_and_follow_the_spec(challenge: Challenge, tmp_path: Path) -> None:
    def stored() -> dict[str, dict[str, str]]:
        return {ds.slug: ds.tags for ds in Dataset.objects.filter(challenge=challenge)}

    loaded = {
        "sq": {},
        "alpha": {"passage source": "Wikipedia", "question source": "crowdsourced"},
        "beta": {"passage source": "Wikipedia", "question source": "domain experts"},
        "gamma": {"passage source": "web", "question source": "crowdsourced"},
    }
    assert stored() == loaded
    spec = tmp_path / "tagged.yaml"
    assert challenge_plan(spec_path=spec).lines() == ["challenge tagged: no changes"]
    challenge_load(spec_path=spec)
    assert stored() == loaded
    # The plan says what a changed spec does to them, and the load does it: changed, and removed.
    spec.write_text(SPEC.replace("passage source: web", "passage source: web snippets")
                    .replace("\n     tags: {passage source: Wikipedia, question source: domain experts}", ""),
                    encoding="utf-8")
    lines = challenge_plan(spec_path=spec).lines()
    assert ("  dataset changed: beta: tags: {'passage source': 'Wikipedia', 'question source': 'domain experts'} "
            "-> {}") in lines
    assert ("  dataset changed: gamma: tags: {'passage source': 'web', 'question source': 'crowdsourced'} -> "
            "{'passage source': 'web snippets', 'question source': 'crowdsourced'}") in lines
    challenge_load(spec_path=spec)
    assert stored() == {**loaded, "beta": {}, "gamma": {"passage source": "web snippets", "question source": "crowdsourced"}}


def test_the_demo_challenges_carry_the_overview_papers_tags() -> None:
    archive = yaml.safe_load((REPO / "deploy" / "demo" / "mrqa2019-archive.yaml").read_text(encoding="utf-8"))
    spec_check(archive)
    tags = {ds["name"]: dataset_tags_parse(ds.get("tags"), where=ds["slug"]) for ds in archive["datasets"]}
    assert len(tags) == 12 and all(len(t) == 3 for t in tags.values())
    assert tags["DROP"] == {"question source": "crowdsourced", "passage source": "Wikipedia",
                            "passage-dependent questions": "yes"}
    demo = yaml.safe_load((REPO / "deploy" / "demo" / "mrqa-demo.yaml").read_text(encoding="utf-8"))
    spec_check(demo)
    # The demo's datasets that the overview covers carry the same tags as in the archive.
    for ds in demo["datasets"]:
        if ds["name"] in tags:
            assert dataset_tags_parse(ds.get("tags"), where=ds["slug"]) == tags[ds["name"]], ds["name"]
    assert sum("tags" in ds for ds in demo["datasets"]) == 2


# --------------------------------------------------------------------------- averages by tag


def test_tag_averages_are_the_means_over_the_datasets_sharing_a_tag_value(challenge: Challenge) -> None:
    test = challenge.phases.get(slug="test")
    # A team with a score on Alpha QA only: no average where a group needs Beta_QA & Co.
    results_import(phase=test, entries=[*_entries(2), ImportedEntry(
        name="Partial", affiliation="Lab", is_baseline=False, scores={"alpha": {"f1": 10.0, "em": 5.0}})])
    board = _board(challenge, ORGANIZER)
    averages = board_tag_averages(board=board)
    assert [(g.label, g.datasets) for g in averages.groups] == [
        ("passage source: Wikipedia", ("Alpha QA", "Beta_QA & Co")),
        ("passage source: web", ("Gamma Secret",)),
        ("question source: crowdsourced", ("Alpha QA", "Gamma Secret")),
        ("question source: domain experts", ("Beta_QA & Co",)),
    ]
    cells = {row.team_name: averages.cells[row.submission_id] for row in board.rows}
    assert cells["Delta"] == pytest.approx(((66 + 64) / 2, 41.75, (66 + 41.75) / 2, 64.0))
    assert cells["Base small"] == pytest.approx(((50 + 52) / 2, 31.25, (50 + 31.25) / 2, 52.0))
    assert cells["Partial"] == (None, None, None, None)
    partial = next(row for row in board.rows if row.team_name == "Partial")
    assert averages.texts(partial) == ["—"] * 4
    gamma = next(row for row in board.rows if row.team_name == "Gamma & Sons_1")
    assert averages.texts(gamma) == ["65.00", "47.25", "58.63", "60.00"]  # 58.625 rounds half up


def test_the_public_sees_no_tag_of_a_sealed_dataset_and_no_average_over_it(challenge: Challenge) -> None:
    board = _board(challenge)
    averages = board_tag_averages(board=board)
    # "web" is the sealed dataset's alone: telling it would narrow down which dataset Hidden-01 is.
    assert [(g.label, g.datasets) for g in averages.groups] == [
        ("passage source: Wikipedia", ("Alpha QA", "Beta_QA & Co")),
        ("question source: crowdsourced", ("Alpha QA",)),
        ("question source: domain experts", ("Beta_QA & Co",)),
    ]
    assert averages.leaves_out_sealed
    cells = {row.team_name: averages.cells[row.submission_id] for row in board.rows}
    assert cells == {name: pytest.approx(((test["alpha"] + test["beta"]) / 2, test["alpha"], test["beta"]))
                     for name, (_, _, test) in RESULTS.items()}


def test_a_group_with_a_dataset_withheld_for_a_row_is_withheld_for_that_row(challenge: Challenge) -> None:
    board = _board(challenge)
    # Given every tag, the sealed one's too (as a caller that did not filter them would), the groups
    # with the sealed dataset are still computed from nothing withheld.
    tags = {ds.pk: ds.tags for ds in Dataset.objects.filter(challenge=challenge)}
    averages = board_tag_averages(board=board, tags=tags)
    labels = [g.label for g in averages.groups]
    web, crowd, wiki = (labels.index(label) for label in (
        "passage source: web", "question source: crowdsourced", "passage source: Wikipedia"))
    for row in board.rows:
        cells = averages.cells[row.submission_id]
        assert cells[web] == WITHHELD and cells[crowd] == WITHHELD
        assert isinstance(cells[wiki], float)
        assert averages.texts(row)[web] == "sealed"
    # The organizer view seals nothing: the same groups have values.
    organizer = _board(challenge, ORGANIZER)
    assert all(WITHHELD not in cells for cells in board_tag_averages(board=organizer, tags=tags).cells.values())


# --------------------------------------------------------------------------- figures and formats


def test_improvement_is_the_best_system_over_the_best_baseline() -> None:
    found = improvement_over_baseline([("A", False, 70.0), ("B", True, 55.0), ("C", False, 70.0),
                                       ("D", True, None), ("E", True, 56.5), ("F", False, 12.0)])
    assert found is not None
    assert (found.system, found.system_value, found.baseline, found.baseline_value) == ("A", 70.0, "E", 56.5)
    assert found.delta == pytest.approx(13.5)  # a tie goes to the better-ranked (first) row: A, not C
    assert improvement_over_baseline([("A", False, 70.0), ("B", True, None)]) is None
    assert improvement_over_baseline([("B", True, 50.0)]) is None


def test_pearson_on_known_numbers() -> None:
    # Deviations (-1, 0, 1) and (-7/3, -1/3, 8/3): r = 5 / sqrt(2 * 114/9) = 15 / sqrt(228).
    assert pearson([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]) == pytest.approx(15 / math.sqrt(228))
    assert pearson([1.0, 2.0, 3.0], [6.0, 4.0, 2.0]) == pytest.approx(-1.0)
    assert pearson([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is None  # undefined, not 0
    assert pearson([1.0], [2.0]) is None
    with pytest.raises(ValueError):
        pearson([1.0, 2.0], [1.0])


SMALL = (
    Table("main", "Results & more",
          (Column("Rank", decimals=0), Column("System", numeric=False), Column("Split II F1", group="Test"),
           Column("Gain", group="Test", signed=True)),
          ((1, "Team_A & {B}", 72.548, 10.745), (2, "=cmd|x", None, -0.005), (3, "50% <b>\nnew line", 61.8, 0.0)),
          ("Group: see below", "withheld: sealed")),
    Table("correlation", "Correlation", (), (), ("Not available: no Split I",)),
)


def test_latex_is_booktabs_with_every_name_escaped() -> None:
    assert tables_latex(SMALL, title="Paper & tables", preamble=("Public view.",), label_prefix="demo-test") == r"""% Paper \& tables
% Public view.
% Requires \usepackage{booktabs} in the preamble.

\begin{table}[t]
\centering
\begin{tabular}{rlrr}
\toprule
 &  & \multicolumn{2}{c}{Test} \\
\cmidrule(lr){3-4}
Rank & System & Split II F1 & Gain \\
\midrule
1 & Team\_A \& \{B\} & 72.55 & +10.75 \\
2 & =cmd\textbar{}x & -- & $-$0.01 \\
3 & 50\% \textless{}b\textgreater{} new line & 61.80 & 0.00 \\
\bottomrule
\end{tabular}
\caption{Results \& more. Group: see below. withheld: sealed.}
\label{tab:demo-test-main}
\end{table}

% Correlation. Not available: no Split I.
"""


def test_markdown_escapes_what_would_become_markup() -> None:
    assert tables_markdown(SMALL, title="Paper & tables", preamble=("Public view.",)) == r"""# Paper \& tables

Public view.

## Results \& more

| Rank | System | Test Split II F1 | Test Gain |
| ---: | :--- | ---: | ---: |
| 1 | Team\_A \& {B} | 72.55 | +10.75 |
| 2 | =cmd\|x | — | -0.01 |
| 3 | 50% \<b\> new line | 61.80 | 0.00 |

Group: see below. withheld: sealed.

## Correlation

Not available: no Split I.
"""


def test_csv_is_one_block_per_table_and_runs_no_formula() -> None:
    expected = """Paper & tables
Public view.

Results & more
Rank,System,Test Split II F1,Test Gain
1,Team_A & {B},72.55,+10.75
2,'=cmd|x,,-0.01
3,50% <b> new line,61.80,0.00
Group: see below
withheld: sealed

Correlation
Not available: no Split I

"""
    assert tables_csv(SMALL, title="Paper & tables", preamble=("Public view.",)) == expected.replace("\n", "\r\n")


def test_the_constructed_boards_tables_exactly(challenge: Challenge) -> None:
    paper = paper_tables_build(board=_ready(_board(challenge, ORGANIZER)), viewer=_oscar())
    main, appendix, tags, improvement, correlation = paper.tables
    assert [t.key for t in paper.tables] == ["main", "appendix", "tags", "improvement", "correlation"]
    method = latex_escape(METHOD)
    assert table_latex(main, label="tab:x") == r"""\begin{table}[t]
\centering
\begin{tabular}{rrllrrrrrr}
\toprule
 &  &  &  & \multicolumn{3}{c}{Dev} & \multicolumn{3}{c}{Test} \\
\cmidrule(lr){5-7} \cmidrule(lr){8-10}
Rank & Group & System & Affiliation & Split I F1 & Split II F1 & Macro F1 & Split II F1 & Split III F1 & Macro F1 \\
\midrule
1 & 1 & Gamma \& Sons\_1 & Lab & 90.00 & 80.00 & 80.00 & 65.00 & 47.25 & 59.08 \\
2 & 1 & Delta & Lab & 85.00 & 75.00 & 75.00 & 65.00 & 41.75 & 57.25 \\
3 & 3 & Base\textdagger{} & Lab & 80.00 & 60.00 & 60.00 & 52.50 & 43.50 & 49.50 \\
4 & n/a & Base small\textdagger{} & Lab & 70.00 & 50.00 & 50.00 & 51.00 & 31.25 & 44.42 \\
\bottomrule
\end{tabular}
\caption{Main results. Rows: the teams ranked on the Test board, in its order. Ranked by Macro F1 over Splits II and III; the columns under a phase are the team's row on that phase's board. \textdagger{}: a baseline (the organizers' baselines and published results). Group: the rank of the first row of the row's rank group; a row is in the group of the row above unless it is significantly worse (on the board: tied \#k). Method: """ + method + r""". n/a: not tested (a published result without per-question scores, or scores that do not give back the board's).}
\label{tab:x}
\end{table}"""
    assert table_markdown(tags) == """## Averages by dataset tag (F1)

| Rank | Group | System | Affiliation | passage source: Wikipedia | passage source: web | question source: crowdsourced | question source: domain experts |
| ---: | ---: | :--- | :--- | ---: | ---: | ---: | ---: |
| 1 | 1 | Gamma \\& Sons\\_1 | Lab | 65.00 | 47.25 | 58.63 | 60.00 |
| 2 | 1 | Delta | Lab | 65.00 | 41.75 | 53.88 | 64.00 |
| 3 | 3 | Base† | Lab | 52.50 | 43.50 | 49.25 | 50.00 |
| 4 | n/a | Base small† | Lab | 51.00 | 31.25 | 40.63 | 52.00 |

""" + " ".join(markdown_escape(n if n.endswith(".") else n + ".") for n in tags.notes) + "\n"
    assert tables_csv([improvement], title="t").replace("\r\n", "\n") == """t

Best system against the best baseline
Dataset,Best baseline,F1,Best system,F1,Gain
Alpha QA,Base†,55.00,Gamma & Sons_1,70.00,+15.00
Beta_QA & Co,Base small†,52.00,Delta,64.00,+12.00
Gamma Secret,Base†,43.50,Gamma & Sons_1,47.25,+3.75
Macro F1,Base†,49.50,Gamma & Sons_1,59.08,+9.58
"For each dataset, and for the ranking average: the best score of a ranked team that is not a baseline, against the best of a ranked baseline (†); Gain is the difference"

"""
    # Split I F1 on the dev board against the test board's macro F1, team by team.
    xs = [dev["sq"] for _, dev, _ in RESULTS.values()]
    ys = list(TEST_MACRO.values())
    [row] = correlation.rows
    assert row == pytest.approx(("Split I F1, Dev board", "Macro F1 over Splits II and III, Test board", 4,
                                 float(np.corrcoef(xs, ys)[0, 1])))
    assert fixed(float(np.corrcoef(xs, ys)[0, 1]), 3) in table_latex(correlation, label="tab:c")
    assert appendix.rows[0][4:] == (70.0, 60.0, 47.25)


def test_without_split_i_the_correlation_is_not_available(challenge: Challenge) -> None:
    Dataset.objects.filter(challenge=challenge, slug="sq").delete()  # its scores go with it
    paper = paper_tables_build(board=_board(challenge, ORGANIZER), viewer=_oscar())
    correlation = paper.tables[-1]
    assert correlation.columns == () and correlation.notes == (
        "Not available: no Split I dataset is scored on the boards of this challenge you may see",)
    assert "% Correlation of in-domain (Split I) and out-of-domain performance. Not available" in paper.render("latex")


# --------------------------------------------------------------------------- what the export may show


def _export(client: Client, url: str, fmt: str) -> tuple[int, str, Any]:
    response = client.get(url, {"format": fmt})
    return response.status_code, response.content.decode() if response.status_code == 200 else "", response


def test_the_public_export_shows_nothing_the_public_board_hides(challenge: Challenge) -> None:
    Team.objects.filter(name="Delta").update(is_anonymous=True)
    for fmt, (extension, content_type) in {"latex": ("tex", "application/x-tex; charset=utf-8"),
                                           "csv": ("csv", "text/csv; charset=utf-8"),
                                           "md": ("md", "text/markdown; charset=utf-8")}.items():
        status, body, response = _export(Client(), "/c/tagged/board/test/paper/", fmt)
        assert status == 200 and response["Content-Type"] == content_type
        assert response["Content-Disposition"] == f'attachment; filename="tagged-test-paper-tables.{extension}"'
        assert "private" in response["Cache-Control"]
        for hidden in (*SEALED_SCORES, "Gamma Secret", "web", "Delta",
                       *(fixed(v, 2) for v in TEST_MACRO.values())):  # the macro F1 gives the sealed score away
            assert hidden not in body, (fmt, hidden)
        assert "Hidden-01" in body and "Anonymous" in body and "withheld" in body
        assert fixed((70.0 + 60.0) / 2, 2) in body  # what the board shows is there
    csv_rows = list(csv.reader(io.StringIO(_export(Client(), "/c/tagged/board/test/paper/", "csv")[1])))
    assert ["4", "withheld", "Base small†", "Lab", "70.00", "50.00", "50.00", "51.00", "withheld",
            "withheld"] in csv_rows
    # The public cannot tell which anonymous dev row is Delta's: the export does not link them either.
    assert ["2", "withheld", "Anonymous", "", "anonymous", "anonymous", "anonymous", "65.00", "withheld",
            "withheld"] in csv_rows
    md = _export(Client(), "/c/tagged/board/test/paper/", "md")[1]
    assert "| Hidden-01 | sealed | sealed | sealed | sealed | sealed |" in md
    assert ("Not available: 0 ranked team(s) have both scores shown; on 3 more, a score is sealed until the "
            "organizers reveal it; 1 more are anonymous teams, not linked across boards") in md


def test_the_organizer_export_is_for_organizers_and_holds_everything(challenge: Challenge) -> None:
    url = "/c/tagged/board/test/organizer/paper/"
    assert Client().get(url).status_code == 404
    User.objects.create_user("dave")
    dave = Client()
    dave.force_login(User.objects.get(username="dave"))
    assert dave.get(url, {"format": "csv"}).status_code == 404
    oscar = Client()
    oscar.force_login(_oscar())
    status, body, response = _export(oscar, url, "latex")
    assert status == 200 and response["Content-Type"] == "application/x-tex; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="tagged-test-paper-tables-organizer-view.tex"'
    assert "no-store" in response["Cache-Control"]
    assert "% Organizer view" in body and body.count(r"\toprule") == 5 and body.count(r"\bottomrule") == 5
    assert "Gamma Secret" in body and "47.25" in body and "passage source: web" in body
    assert oscar.get(url, {"format": "docx"}).status_code == 400
    assert Client().get("/c/tagged/board/test/paper/", {"format": "docx"}).status_code == 400


def test_the_board_page_offers_averages_by_tag_and_the_paper_tables(challenge: Challenge) -> None:
    page = Client().get("/c/tagged/board/test/").content.decode()
    assert 'id="tag-averages"' in page and "Averages by tag" in page
    assert "passage source: Wikipedia" in page and "passage source: web" not in page
    assert '/c/tagged/board/test/paper/?format=latex' in page and "?format=md" in page
    oscar = Client()
    oscar.force_login(_oscar())
    organizer = oscar.get("/c/tagged/board/test/organizer/").content.decode()
    assert "passage source: web" in organizer and "/c/tagged/board/test/organizer/paper/?format=csv" in organizer
    Dataset.objects.filter(challenge=challenge).update(tags={})
    board_changed(challenge_id=challenge.pk)  # as the reload that removes them does
    untagged = Client().get("/c/tagged/board/test/").content.decode()
    assert 'id="tag-averages"' not in untagged and "Averages by tag" not in untagged
    assert "no dataset of this board has tags" in _export(Client(), "/c/tagged/board/test/paper/", "md")[1]
