"""The real MRQA 2019 hidden-test leaderboard, imported from the CodaLab Worksheets export
with the demo's mapping file (ood-test-mapping.yaml: its comments give the reasoning).

Reference: Fisch et al. (2019), "MRQA 2019 Shared Task: Evaluating Generalization in Reading
Comprehension": the best system (D-NET) averages 72.5 F1 over the 12 held-out datasets,
10.7 points above the organizers' BERT(-large) baseline, i.e. 61.8; ten teams submitted.
The export also holds "BASELINE (Anonymous)" at 72.548, an earlier entry of the D-NET team:
the mapping excludes it (shown unranked with the reason), so D-NET's 72.500 ranks first; it
marks the organizers' two BERT rows as the only baselines and groups rows of one team.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, TestCase

from leaderboard.accounts.models import Team, TeamKind
from leaderboard.accounts.services import team_create, team_join
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.rankings.board_significance import NO_QUESTION_SCORES
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.imports import load_results_file, results_import
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status, Submission
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import REPO, upload

SPEC = REPO / "deploy" / "demo" / "mrqa2019-archive.yaml"
RESULTS = REPO / "deploy" / "demo" / "data" / "mrqa2019" / "ood-test-results.json"
MAPPING = REPO / "deploy" / "demo" / "data" / "mrqa2019" / "ood-test-mapping.yaml"

SPLIT_II = ("BioASQ", "DROP", "DuoRC.ParaphraseRC", "RACE", "RelationExtraction", "TextbookQA")
SPLIT_III = ("BioProcess", "ComplexWebQuestions", "MCTest", "QAMR", "QAST", "TREC")

# The board's 12 ranked rows, best first: (team, affiliation, macro-F1 to one decimal as the
# paper prints it, the export row that represents the team, its original submission time).
EXPECTED_RANKED = [
    ("D-NET", "Baidu", 72.5, "D-NET (Baidu)", "2019-09-30T12:43:18+00:00"),
    ("Delphi", "Apple", 70.8, "Delphi (Apple)", "2019-08-10T06:57:35+00:00"),
    ("FT_XLNet", "HIT", 70.5, "FT_XLNet (HIT)", "2019-08-07T05:59:20+00:00"),
    ("HLTC-MRQA", "HKUST", 69.0, "HLTC-MRQA (HKUST)", "2019-08-07T11:04:12+00:00"),
    ("BERT-cased-whole-word baseline", "Aristo @ AI2", 66.3, "BERT-cased-whole-word baseline (Aristo @ AI2)",
     "2019-07-29T04:39:26+00:00"),
    ("XERO", "Fuji Xerox", 66.1, "XERO(Fuji Xerox)", "2019-08-08T10:33:59+00:00"),
    ("BERT + Adversarial Training", "Team 42-alpha", 62.2, "BERT-large + Adversarial Training (Team 42-alpha)",
     "2019-07-27T14:47:49+00:00"),
    ("BERT large baseline", "MRQA Organizers", 61.8, "BERT large baseline (MRQA Organizers)",
     "2019-08-10T06:09:13+00:00"),
    ("Bert-Multi-Finetune", "BLCU", 60.3, "Bert-Multi-Finetune (BLCU)", "2019-08-06T09:08:33+00:00"),
    ("BERT base baseline", "MRQA Organizers", 58.5, "BERT base baseline (MRQA Organizers)",
     "2019-08-10T06:09:04+00:00"),
    ("PAL IN DOMAIN", "UCI", 57.1, "PAL IN DOMAIN - UCI", "2019-07-29T22:25:34+00:00"),
    ("Hierarchical attention over BERT features", "Alexandria University", 56.1,
     "Hierarchical attention over BERT features (Alexandria University)", "2019-08-10T03:28:37+00:00"),
]
BASELINES = ["BERT large baseline", "BERT base baseline"]
# The two numbers the paper states outright (abstract): the winner, and 10.7 below it the BERT baseline.
PAPER = {"D-NET": 72.5, "BERT large baseline": 72.5 - 10.7}
EXCLUDED = ("BASELINE", "Anonymous", "BASELINE (Anonymous)")
# Teams whose only rows failed (null scores), after the excluded row.
EXPECTED_FAILED = ["pos_freeze_bert_base", "BERT Baseline"]
# Rows grouped into one team: its board row is its best.
GROUPS = {
    "Bert-Multi-Finetune": {"Bert-Multi-Finetune (BLCU)", "bert-multi-finetune (BLCU)", "{SQuADbasedonmulti} (BLCU)"},
    "BERT + Adversarial Training": {"BERT-large + Adversarial Training (Team 42-alpha)",
                                    "BERT-base + Adversarial Training (Team 42-alpha)"},
}
BOARD_NAMES = [t for t, *_ in EXPECTED_RANKED] + [EXCLUDED[0]] + EXPECTED_FAILED


def _row_name(description: str) -> str:
    """The export's row name as the mapping writes it: the description, whitespace collapsed."""
    return " ".join(description.split())


def export_macro_f1() -> dict[str, float | None]:
    """Macro-F1 of every export row computed straight from the file: the mean of its 12 F1s."""
    document = json.loads(RESULTS.read_text(encoding="utf-8"))
    out: dict[str, float | None] = {}
    for item in document["leaderboard"]:
        f1s = [v for k, v in item["scores"].items() if k.endswith("_f1")]
        assert len(f1s) == 12
        out[_row_name(item["submission"]["description"])] = (
            None if any(v is None for v in f1s) else sum(f1s) / len(f1s)
        )
    return out


def organizer() -> User:
    return User.objects.get(username="organizer")


def _import(phase: Phase, *, mapping: Path | None = MAPPING, replace: bool = False) -> list[Submission]:
    return results_import(
        phase=phase, entries=load_results_file(RESULTS, fmt="mrqa-codalab", mapping=mapping), replace=replace
    )


@pytest.fixture
def phase(db: None) -> Phase:
    User.objects.create_user("organizer", password="organizer-pw")  # the spec's staff list names it
    challenge = challenge_load(spec_path=SPEC)
    test = challenge.phases.get(slug="test")
    _import(test)
    return test


def test_the_export_has_18_entries_with_12_datasets_each() -> None:
    macro = export_macro_f1()
    assert len(macro) == 18
    assert sum(v is None for v in macro.values()) == 3


def test_the_board_reads_as_the_paper_reports_it(phase: Phase) -> None:
    board = board_build(phase=phase, viewer=organizer())
    ranked = [r for r in board.rows if r.rank is not None]
    assert [(r.team_name, r.affiliation) for r in ranked] == [(t, a) for t, a, *_ in EXPECTED_RANKED]
    assert [r.rank for r in ranked] == list(range(1, 13))  # no ties among the 12
    macro = export_macro_f1()
    for row, (team, _, one_decimal, export_row, _) in zip(ranked, EXPECTED_RANKED):
        value = row.values["agg:macro_f1"]
        assert value is not None and value == pytest.approx(macro[export_row], abs=1e-9), team
        assert round(value, 1) == pytest.approx(one_decimal), team
    for team, value in PAPER.items():
        row = next(r for r in ranked if r.team_name == team)
        macro_f1 = row.values["agg:macro_f1"]
        assert macro_f1 is not None and round(macro_f1, 1) == pytest.approx(value), team
    # D-NET first at its final submission's 72.500, the BERT-Large baseline 10.7 below.
    assert ranked[0].team_name == "D-NET"
    assert ranked[0].values["agg:macro_f1"] == pytest.approx(72.500383474, abs=1e-9)
    bert_large = next(r for r in ranked if r.team_name == "BERT large baseline")
    first_f1, bert_large_f1 = ranked[0].values["agg:macro_f1"], bert_large.values["agg:macro_f1"]
    assert first_f1 is not None and bert_large_f1 is not None
    assert round(first_f1 - bert_large_f1, 1) == pytest.approx(10.7)
    # Only the organizers' baselines are marked; D-NET, Delphi and AI2's "baseline"-named system are not.
    assert [r.team_name for r in board.rows if r.is_baseline] == BASELINES
    # Ten teams with a scored submission, as the paper counts them.
    assert len([r for r in ranked if not r.is_baseline]) == 10


def test_the_earlier_d_net_entry_is_excluded_with_its_reason(phase: Phase) -> None:
    excluded = Submission.objects.get(phase=phase, description=EXCLUDED[2])
    assert excluded.excluded_reason.startswith("earlier entry of the D-NET team")
    assert excluded.primary_score == pytest.approx(72.548250813, abs=1e-9)  # above D-NET's, yet unranked
    assert (excluded.team.name, excluded.team.affiliation, excluded.team.kind) == (
        "BASELINE", "Anonymous", TeamKind.PARTICIPANT)
    board = board_build(phase=phase, viewer=organizer())
    row = next(r for r in board.rows if r.team_name == EXCLUDED[0])
    assert row.rank is None and row.excluded_reason == excluded.excluded_reason
    assert board.rows.index(row) == 12  # right after the ranked rows
    assert not row.is_baseline


def test_rows_of_one_team_are_grouped_and_the_team_shows_its_best(phase: Phase) -> None:
    for team, rows in GROUPS.items():
        submissions = Submission.objects.filter(phase=phase, team__name=team)
        assert {s.description for s in submissions} == rows, team
    board = board_build(phase=phase, viewer=organizer())
    blcu = next(r for r in board.rows if r.team_name == "Bert-Multi-Finetune")
    assert Submission.objects.get(pk=blcu.submission_id).description == "Bert-Multi-Finetune (BLCU)"
    adversarial = next(r for r in board.rows if r.team_name == "BERT + Adversarial Training")
    assert Submission.objects.get(pk=adversarial.submission_id).description.startswith("BERT-large")
    # 18 rows make 15 teams: 3 BLCU rows and 2 Team 42-alpha rows are one team each.
    assert Team.objects.filter(challenge=phase.challenge).count() == 15
    assert [r.team_name for r in board.rows] == BOARD_NAMES


def test_each_row_keeps_its_original_submission_time(phase: Phase, client: Client, tmp_path: Path) -> None:
    # The demo's mapping without its publication date: the rows as the export dates them.
    undated = tmp_path / "ood-test-mapping.yaml"
    undated.write_text("".join(line for line in MAPPING.read_text(encoding="utf-8").splitlines(keepends=True)
                               if not line.startswith("published:")), encoding="utf-8")
    _import(phase, mapping=undated, replace=True)
    document = json.loads(RESULTS.read_text(encoding="utf-8"))
    created = {_row_name(i["submission"]["description"]): i["submission"]["created"] for i in document["leaderboard"]}
    for submission in Submission.objects.filter(phase=phase):
        assert submission.created_at == dt.datetime.fromtimestamp(created[submission.description], tz=dt.UTC)
        assert submission.finished_at is not None
        assert submission.created_at.year == 2019 and submission.finished_at.year == 2019

    data = client.get("/api/v1/challenges/mrqa2019/phases/test/leaderboard/").json()
    ranked = data["rows"][:12]
    assert [r["submitted_at"] for r in ranked] == [when for *_, when in EXPECTED_RANKED]
    # The export names no publication; the board shows these times (the demo's mapping dates them).
    assert {r["published_on"] for r in data["rows"]} == {None}
    page = client.get("/c/mrqa2019/board/test/").content.decode()
    assert "2019-09-30 12:43" in page and "2019-08-10 06:57" in page  # D-NET's and Delphi's
    # Every row's submission time (its sort key) is from 2019, none from the time of the import.
    years = re.findall(r'data-v="(\d{4})-\d\d-\d\dT', page)
    assert len(years) == 15 and set(years) == {"2019"}
    assert 'id="published-note"' not in page and ">Submitted (UTC)</th>" in page


def test_with_the_mappings_publication_date_every_row_is_dated_as_published_and_the_board_says_so(
    phase: Phase, client: Client
) -> None:
    """The demo's mapping (as demo_setup imports it): D-NET uploaded 2019-09-30, after the phase's close
    of 2019-08-12, and rows from before its opening show the day the results were published instead."""
    entries = load_results_file(RESULTS, fmt="mrqa-codalab", mapping=MAPPING)
    results_import(phase=phase, entries=entries, replace=True)
    assert {e.published_on for e in entries} == {dt.date(2019, 11, 4)}
    document = json.loads(RESULTS.read_text(encoding="utf-8"))
    created = {_row_name(i["submission"]["description"]): i["submission"]["created"] for i in document["leaderboard"]}
    for submission in Submission.objects.filter(phase=phase):  # the upload time stays, for ties and history
        assert submission.created_at == dt.datetime.fromtimestamp(created[submission.description], tz=dt.UTC)

    data = client.get("/api/v1/challenges/mrqa2019/phases/test/leaderboard/").json()
    assert {r["published_on"] for r in data["rows"]} == {"2019-11-04"}
    assert data["rows"][0]["team"] == "D-NET" and data["rows"][0]["submitted_at"].startswith("2019-09-30")
    page = client.get("/c/mrqa2019/board/test/").content.decode()
    assert "dates marked published are the publication dates of the results, not upload times" in page
    assert ">Date (UTC)</th>" in page and ">Submitted (UTC)</th>" not in page
    assert page.count('<td class="when published" data-v="2019-11-04"') == len(data["rows"])
    assert "2019-09-30" not in page and "2019-07-27" not in page  # no upload time is shown as the date


def test_per_dataset_and_split_columns_match_the_export(phase: Phase) -> None:
    board = board_build(phase=phase, viewer=organizer())
    labels = {(c.group, c.label) for c in board.columns}
    assert {("Overall", "Macro F1"), ("Overall", "Split II F1"), ("Overall", "Split III F1")} <= labels
    assert {("Overall", "Macro EM")} <= labels
    for name in SPLIT_II + SPLIT_III:
        assert (name, "F1") in labels and (name, "EM") in labels, name
    assert not any(c.sealed for c in board.columns)  # every Split III dataset is revealed in the archive

    document = json.loads(RESULTS.read_text(encoding="utf-8"))
    by_row = {_row_name(i["submission"]["description"]): i["scores"] for i in document["leaderboard"]}
    represented = dict(Submission.objects.filter(phase=phase).values_list("pk", "description"))
    key_of = {(c.group, c.label): c.key for c in board.columns}
    for row in board.rows:
        scores = by_row[represented[row.submission_id]]
        if row.status == Status.FAILED:
            continue
        for name in SPLIT_II + SPLIT_III:
            assert row.values[key_of[(name, "F1")]] == pytest.approx(scores[f"{name}_f1"], abs=1e-9)
            assert row.values[key_of[(name, "EM")]] == pytest.approx(scores[f"{name}_em"], abs=1e-9)
        split_ii = sum(scores[f"{n}_f1"] for n in SPLIT_II) / 6
        split_iii = sum(scores[f"{n}_f1"] for n in SPLIT_III) / 6
        assert row.values[key_of[("Overall", "Split II F1")]] == pytest.approx(split_ii, abs=1e-9)
        assert row.values[key_of[("Overall", "Split III F1")]] == pytest.approx(split_iii, abs=1e-9)
        macro_em = sum(v for k, v in scores.items() if k.endswith("_em")) / 12
        assert row.values[key_of[("Overall", "Macro EM")]] == pytest.approx(macro_em, abs=1e-9)


def test_failed_runs_are_shown_unranked_after_the_ranked_rows(phase: Phase) -> None:
    board = board_build(phase=phase, viewer=organizer())
    assert len(board.rows) == 15
    tail = board.rows[13:]
    assert [r.team_name for r in tail] == EXPECTED_FAILED
    for row in tail:
        assert row.rank is None and row.status == Status.FAILED
        assert row.failure_reason
        assert row.values.get("agg:macro_f1") is None
    assert all(r.rank is not None for r in board.rows[:12])


def test_the_public_sees_the_same_board(phase: Phase, client: Client) -> None:
    data = client.get("/api/v1/challenges/mrqa2019/phases/test/leaderboard/").json()
    assert data["ranked_by"] == "macro_f1"
    assert [r["team"] for r in data["rows"]] == BOARD_NAMES
    assert [r["rank"] for r in data["rows"]] == list(range(1, 13)) + [None] * 3
    assert [r["baseline"] for r in data["rows"]] == [r["team"] in BASELINES for r in data["rows"]]
    assert data["rows"][12]["excluded"].startswith("earlier entry of the D-NET team")
    assert [r["status"] for r in data["rows"][13:]] == ["failed"] * 2
    assert data["rows"][0]["Macro F1"] == pytest.approx(export_macro_f1()["D-NET (Baidu)"], abs=1e-9)
    assert {"Split II F1", "Split III F1", "BioASQ F1", "TREC EM"} <= set(data["rows"][0])
    page = client.get("/c/mrqa2019/board/test/").content.decode()
    assert page.index("D-NET") < page.index("Delphi") < page.index("earlier entry of the D-NET team")
    assert page.index("earlier entry of the D-NET team") < page.index("pos_freeze_bert_base")
    row_classes = re.findall(r'<tr class="([^"]*)"', page)
    assert sum("baseline" in css.split() for css in row_classes) == 2
    csv_text = client.get("/c/mrqa2019/board/test/export.csv").content.decode()
    assert len(csv_text.strip().splitlines()) == 1 + 15


def test_reimporting_is_idempotent(phase: Phase) -> None:
    counts = (Team.objects.count(), Submission.objects.count(), Score.objects.count())
    teams_before = set(Team.objects.values_list("pk", "name", "kind", "affiliation", "join_code"))
    board_before = [(r.team_name, r.rank, r.values.get("agg:macro_f1"), r.submitted_at, r.excluded_reason)
                    for r in board_build(phase=phase, viewer=organizer()).rows]
    challenge_load(spec_path=SPEC)
    _import(phase)
    _import(phase, replace=True)
    assert (Team.objects.count(), Submission.objects.count(), Score.objects.count()) == counts
    assert set(Team.objects.values_list("pk", "name", "kind", "affiliation", "join_code")) == teams_before
    assert Team.objects.filter(challenge=phase.challenge, kind=TeamKind.BASELINE).count() == 2
    assert Submission.objects.filter(phase=phase).count() == 18
    # 18 entries x 12 datasets x (em, f1), plus the aggregates (macro and per split, F1 and EM).
    assert Score.objects.filter(submission__phase=phase, dataset__isnull=False).count() == 18 * 12 * 2
    board_after = [(r.team_name, r.rank, r.values.get("agg:macro_f1"), r.submitted_at, r.excluded_reason)
                   for r in board_build(phase=phase, viewer=organizer()).rows]
    assert board_after == board_before


def test_replace_removes_rows_an_earlier_import_named_otherwise(phase: Phase) -> None:
    # Without the mapping the rows are imported as they read (the D-NET entry ranks below the
    # anonymous one, nothing is a baseline, BLCU's rows are three teams) ...
    Submission.objects.filter(phase=phase).delete()
    Team.objects.filter(challenge=phase.challenge).delete()
    _import(phase, mapping=None)
    assert Team.objects.filter(challenge=phase.challenge).count() == 18
    assert not Team.objects.filter(kind=TeamKind.BASELINE).exists()
    assert board_build(phase=phase, viewer=organizer()).rows[0].team_name == "BASELINE"
    # ... and the mapped import with replace leaves exactly what the mapping says.
    _import(phase, replace=True)
    assert Team.objects.filter(challenge=phase.challenge).count() == 15
    assert Submission.objects.filter(phase=phase).count() == 18
    names = [r.team_name for r in board_build(phase=phase, viewer=organizer()).rows]
    assert names[:13] == BOARD_NAMES[:13] and sorted(names[13:]) == sorted(EXPECTED_FAILED)
    assert not Team.objects.filter(name__in=["pos_freeze_bert_base dmis", "bert-multi-finetune"]).exists()


def test_an_imported_team_cannot_be_joined(phase: Phase) -> None:
    dnet = Team.objects.get(challenge=phase.challenge, name="D-NET")
    assert dnet.kind == TeamKind.PARTICIPANT and not dnet.memberships.exists()
    # Earlier imports gave baseline teams a code derived from the name; a participant-kind
    # imported team must not have a guessable one.

    guessable = hashlib.sha256(b"mrqa2019:D-NET").hexdigest()[:32]
    assert dnet.join_code != guessable
    with pytest.raises(NotFound):
        team_join(user=User.objects.create_user("mallory"), join_code=guessable)


def test_the_archive_takes_no_submissions(phase: Phase) -> None:
    assert Challenge.objects.get(slug="mrqa2019").staff.filter(username="organizer").exists()
    alice = User.objects.create_user("alice", password="alice-pw")
    team = team_create(challenge=phase.challenge, owner=alice, name="Late")
    with pytest.raises(ServiceError, match="closed at 2019-08-12 23:59 UTC"):
        submission_create_predictions(team=team, phase=phase, user=alice, upload=upload({"x": "y"}),
                                      limit_bytes=1_000_000)
    assert Submission.objects.filter(team=team).count() == 0


# --------------------------------------------------------------------------- mapping errors


def _mapping(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ood-test-mapping.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _load(mapping: Path) -> None:
    load_results_file(RESULTS, fmt="mrqa-codalab", mapping=mapping)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # A row the export does not have, with the name it probably meant.
        ("rows:\n  BERT large baseline (MRQA Organizers): {baseline: true}\n  D-NET (Baidoo): {baseline: true}\n",
         "ood-test-mapping.yaml, line 3: row 'D-NET (Baidoo)' is not in ood-test-results.json "
         "(did you mean 'D-NET (Baidu)'?)"),
        ("rows:\n  D-NET (Baidu): {baseline: yes please}\n",
         "ood-test-mapping.yaml, line 2: row 'D-NET (Baidu)': 'baseline' must be true or false"),
        ("rows:\n  D-NET (Baidu): {teem: D-NET}\n",
         "ood-test-mapping.yaml, line 2: row 'D-NET (Baidu)': unknown key 'teem' "
         "(allowed: team, affiliation, baseline, exclude)"),
        ("rows:\n  D-NET (Baidu): {exclude: ''}\n",
         "ood-test-mapping.yaml, line 2: row 'D-NET (Baidu)': 'exclude' must be a non-empty string"),
        ("rows:\n  D-NET (Baidu): {team: D-NET}\n  Delphi (Apple): {}\n  D-NET (Baidu): {baseline: true}\n",
         "ood-test-mapping.yaml, line 4: row 'D-NET (Baidu)' is already mapped on line 2"),
        ("rows:\n  D-NET (Baidu): baseline\n",
         "ood-test-mapping.yaml, line 2: row 'D-NET (Baidu)': expected {team, affiliation, baseline, exclude}"),
        ("row:\n  D-NET (Baidu): {baseline: true}\n",
         "ood-test-mapping.yaml: unknown key 'row' (the file's keys are 'rows' and 'published')"),
        ("rows: [D-NET (Baidu)]\n", "ood-test-mapping.yaml: 'rows' must map row names to what they are"),
        ("rows:\n  D-NET (Baidu): {baseline: true\n", "ood-test-mapping.yaml: not valid YAML"),
        # Grouping by accident: Delphi's row named into D-NET's team, D-NET's own row not.
        ("rows:\n  Delphi (Apple): {team: D-NET}\n",
         "ood-test-mapping.yaml: team 'D-NET' (rows 'D-NET (Baidu)', 'Delphi (Apple)'): these rows would "
         "fall into one team by their name; to group them, give each of them 'team: D-NET'"),
        # The suggestion the brief warned about: grouped, "best" would show 72.548 as D-NET's.
        ("rows:\n  D-NET (Baidu): {team: D-NET}\n  BASELINE (Anonymous): {team: D-NET, exclude: earlier entry}\n",
         "an excluded row keeps a board row of its own (that is where its reason shows)"),
        ("rows:\n  Delphi (Apple): {team: X, affiliation: Apple}\n  D-NET (Baidu): {team: X, affiliation: Baidu}\n",
         "team 'X' (rows 'D-NET (Baidu)', 'Delphi (Apple)'): the rows give different affiliations"),
        ("rows:\n  Delphi (Apple): {team: X, baseline: true}\n  D-NET (Baidu): {team: X, baseline: false}\n",
         "some rows are marked baselines and some are not"),
    ],
)
def test_a_bad_mapping_is_refused_naming_the_file_the_line_and_the_row(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ServiceError) as caught:
        _load(_mapping(tmp_path, text))
    assert message in caught.value.message


def test_the_command_takes_the_mapping_and_reports_its_errors(db: None, tmp_path: Path) -> None:
    User.objects.create_user("organizer", password="organizer-pw")
    challenge_load(spec_path=SPEC)
    args = ["results_import", "mrqa2019", "test", str(RESULTS), "--format", "mrqa-codalab"]
    bad = _mapping(tmp_path, "rows:\n  BASELINE (Anon): {exclude: earlier entry}\n")
    with pytest.raises(CommandError, match=r"line 2: row 'BASELINE \(Anon\)' is not in ood-test-results.json"):
        call_command(*args, "--mapping", str(bad))
    assert not Submission.objects.exists()  # nothing written
    call_command(*args, "--mapping", str(MAPPING), "--replace")
    board = board_build(phase=Phase.objects.get(challenge__slug="mrqa2019", slug="test"), viewer=organizer())
    assert [r.team_name for r in board.rows] == BOARD_NAMES


def test_a_participant_team_is_never_taken_over_by_an_import(phase: Phase) -> None:
    Submission.objects.filter(phase=phase).delete()
    Team.objects.filter(challenge=phase.challenge).delete()
    team_create(challenge=phase.challenge, owner=User.objects.create_user("erin"), name="Delphi")
    with pytest.raises(ServiceError, match="Delphi: a participant team already has that name"):
        _import(phase)
    assert not Submission.objects.filter(phase=phase).exists()  # the import is all or nothing


def test_the_board_says_published_results_cannot_be_tested_instead_of_showing_intervals(phase: Phase) -> None:
    """MRQA 2019's results came without per-question scores: 72.548 above D-NET's 72.500 cannot be
    tested, and the board says so rather than drawing an interval."""

    with TestCase.captureOnCommitCallbacks(execute=True):
        board_build(phase=phase, viewer=organizer())
    board = board_build(phase=phase, viewer=organizer())
    assert board.significance.ready and not board.significance.has_intervals
    ranked = [r for r in board.rows if r.rank is not None]
    assert all(board.significance.rows[r.submission_id].note == NO_QUESTION_SCORES for r in ranked)
    html = Client().get(f"/c/{phase.challenge.slug}/board/{phase.slug}/").content.decode()
    assert "published results without per-question scores" in html and "tied #" not in html
