"""Rows are ranked on equal terms (issue 16, part 1).

A phase that takes prediction files and systems is natural (prediction files for Split II,
systems for everything), but a prediction file can never answer Split III.  The ranking
average therefore covers the same datasets for every row: one a row did not answer counts 0
(``ranking: {incomplete: zero}``, as MRQA's official script counts an unanswered question) or
leaves the row unranked (``incomplete: unranked``); the board says how many of the ranked
datasets a row answered, best-of selection compares rows on that same average, and
``challenge_load`` refuses a prediction phase ranking on Split III unless the spec says which.

Prediction rows are real uploads scored by the platform (gold answers: F1 100); system rows
are fabricated through ``scores_write``, as a worker writes them (systems need Docker).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, Dataset, Phase, SubmissionKind
from leaderboard.challenges.spec import SpecError
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.rankings.selectors import ORGANIZER, board_build
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import BoardEntry, Score, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.scores import scores_write
from tests.builders.cast import DEMO_DATA, mrqa_gold, upload

MRQA = DEMO_DATA / "mrqa"
SPEC = f"""
slug: equal
title: Equal terms
metric_suite: mrqa
ranking_rule: best
staff: [oscar]
{{ranking}}
phases:
  - {{{{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: {{kinds}}}}}}
datasets:
  - {{{{slug: xquad-en, name: XQuAD-en, split: II, files: {{{{test: {MRQA}/XQuAD-en.test.jsonl.gz}}}}}}}}
  - {{{{slug: duorc-selfrc, name: DuoRC.SelfRC, split: II, files: {{{{test: {MRQA}/DuoRC.SelfRC.test.jsonl.gz}}}}}}}}
  - {{{{slug: coqa, name: CoQA, split: III, {{sealing}}files: {{{{test: {MRQA}/CoQA.test.jsonl.gz}}}}}}}}
"""
BOTH_KINDS = "[predictions, docker_image]"
SPLIT_II = {"xquad-en": "XQuAD-en", "duorc-selfrc": "DuoRC.SelfRC"}


def load(tmp_path: Path, ranking: str, *, kinds: str = BOTH_KINDS, revealed: bool = True) -> Challenge:
    spec = tmp_path / "equal.yaml"
    sealing = "revealed: true, " if revealed else "sealed_alias: Hidden-99, "
    spec.write_text(SPEC.format(ranking=ranking, kinds=kinds, sealing=sealing), encoding="utf-8")
    return challenge_load(spec_path=spec)


@pytest.fixture
def people(db: None) -> dict[str, User]:
    return {name: User.objects.create_user(name) for name in ("oscar", "alice", "bob", "carol")}


def gold_upload(slugs: tuple[str, ...] = ("xquad-en", "duorc-selfrc")) -> dict[str, dict[str, str]]:
    """Predictions from the test gold of the Split II datasets: all a prediction file can answer."""
    return {slug: {qid: answers[0] for qid, answers in mrqa_gold(MRQA / f"{SPLIT_II[slug]}.test.jsonl.gz").items()}
            for slug in slugs}


def prediction_row(phase: Phase, team: Team, user: User) -> Submission:
    submission = submission_create_predictions(team=team, phase=phase, user=user, upload=upload(gold_upload()),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(submission.pk)  # what the worker does once the upload commits
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def system_row(phase: Phase, team: Team, f1: dict[str, float]) -> Submission:
    submission = Submission.objects.create(team=team, phase=phase, kind=SubmissionKind.DOCKER_IMAGE,
                                           status=Status.SCORING)
    datasets = {d.slug: d for d in Dataset.objects.filter(challenge=phase.challenge)}
    scores_write(submission=submission, results={
        datasets[slug]: DatasetResult(metrics={"f1": v, "em": v - 5}, per_example=[]) for slug, v in f1.items()
    })
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED
    return submission


# A system that answered everything, well but not perfectly.
COMPLETE = {"xquad-en": 80.0, "duorc-selfrc": 70.0, "coqa": 60.0}


def rows(phase: Phase, viewer: User) -> list[tuple[str, int | None, str]]:
    return [(r.team_name, r.rank, r.coverage) for r in board_build(phase=phase, viewer=viewer).rows]


def test_a_complete_system_outranks_a_prediction_file_that_answered_split_ii_only(
    people: dict[str, User], tmp_path: Path
) -> None:
    challenge = load(tmp_path, "ranking: {incomplete: zero}")
    assert challenge.ranking_scope == {"incomplete": "zero"}
    phase = challenge.phases.get()
    partial = prediction_row(phase, team_create(challenge=challenge, owner=people["alice"], name="Files"),
                             people["alice"])
    complete = system_row(phase, team_create(challenge=challenge, owner=people["bob"], name="Systems"), COMPLETE)
    # 100 on both Split II datasets and nothing on CoQA: (100 + 100 + 0) / 3, not 100.
    assert partial.primary_score == pytest.approx(200 / 3)
    assert Score.objects.get(submission=partial, dataset=None, metric="macro_f1").value == partial.primary_score
    assert Score.objects.get(submission=partial, dataset=None, metric="split_II_macro_f1").value == 100.0
    assert complete.primary_score == pytest.approx(70.0)
    assert rows(phase, people["carol"]) == [("Systems", 1, ""), ("Files", 2, "2 of 3 datasets")]

    # Where anyone reads the board: the page, its exports and the API say the same.
    client = Client()
    page = client.get("/c/equal/board/test/").content.decode()
    assert '<span class="tag coverage"' in page and ">2 of 3 datasets</span>" in page
    assert "each one a row did not answer counts 0" in page
    for url in ("/c/equal/board/test/export.json", "/api/v1/challenges/equal/phases/test/leaderboard/"):
        data = client.get(url).json()["rows"]
        assert [(r["team"], r["rank"], r["coverage"]) for r in data] == [
            ("Systems", 1, None), ("Files", 2, "2 of 3 datasets")
        ]
        assert data[1]["Macro F1"] == pytest.approx(200 / 3)
    exported = list(csv.DictReader(io.StringIO(client.get("/c/equal/board/test/export.csv").content.decode())))
    assert [(r["team"], r["coverage"]) for r in exported] == [("Systems", ""), ("Files", "2 of 3 datasets")]


def test_best_of_compares_a_teams_rows_on_the_same_average(people: dict[str, User], tmp_path: Path) -> None:
    """The issue's repro: the team's prediction row (100 on Split II) hid its complete system run."""
    challenge = load(tmp_path, "ranking: {incomplete: zero}")
    phase = challenge.phases.get()
    team = team_create(challenge=challenge, owner=people["alice"], name="Both")
    run = system_row(phase, team, {"xquad-en": 90.0, "duorc-selfrc": 90.0, "coqa": 80.0})
    prediction_row(phase, team, people["alice"])  # later, and 100 where it answered
    assert BoardEntry.objects.get(team=team, phase=phase).submission_id == run.pk
    assert rows(phase, people["carol"]) == [("Both", 1, "")]


def test_with_incomplete_unranked_a_partial_row_is_shown_unranked_with_the_reason(
    people: dict[str, User], tmp_path: Path
) -> None:
    challenge = load(tmp_path, "ranking: {incomplete: unranked}")
    assert challenge.ranking_scope == {"incomplete": "unranked"}
    phase = challenge.phases.get()
    prediction_row(phase, team_create(challenge=challenge, owner=people["alice"], name="Files"), people["alice"])
    # Worse than the prediction row's 66.67 on the full average, and still the only ranked row.
    system_row(phase, team_create(challenge=challenge, owner=people["bob"], name="Systems"),
               {"xquad-en": 60.0, "duorc-selfrc": 60.0, "coqa": 50.0})
    board = board_build(phase=phase, viewer=people["carol"])
    assert [(r.team_name, r.rank, r.coverage) for r in board.rows] == [
        ("Systems", 1, ""), ("Files", None, "2 of 3 datasets")
    ]
    reason = "answered 2 of the 3 ranked datasets; only complete rows are ranked"
    assert board.rows[1].excluded_reason == reason
    page = Client().get("/c/equal/board/test/").content.decode()
    assert reason in page and "such a row is shown unranked" in page
    data = Client().get("/api/v1/challenges/equal/phases/test/leaderboard/").json()["rows"]
    assert (data[1]["team"], data[1]["rank"], data[1]["excluded"]) == ("Files", None, reason)


def test_with_incomplete_unranked_best_of_prefers_a_complete_run_to_a_higher_partial_one(
    people: dict[str, User], tmp_path: Path
) -> None:
    challenge = load(tmp_path, "ranking: {incomplete: unranked}")
    phase = challenge.phases.get()
    team = team_create(challenge=challenge, owner=people["alice"], name="Both")
    partial = prediction_row(phase, team, people["alice"])
    run = system_row(phase, team, {"xquad-en": 60.0, "duorc-selfrc": 60.0, "coqa": 50.0})
    assert partial.primary_score > run.primary_score  # type: ignore[operator]
    assert BoardEntry.objects.get(team=team, phase=phase).submission_id == run.pk
    assert rows(phase, people["carol"]) == [("Both", 1, "")]
    # Under "zero" the same two rows compare on their averages, and the partial one is higher.
    load(tmp_path, "ranking: {incomplete: zero}")
    assert BoardEntry.objects.get(team=team, phase=phase).submission_id == partial.pk


# --------------------------------------------------------------------------- the spec


def test_a_prediction_phase_that_ranks_on_split_iii_is_refused_until_the_spec_says_how(
    people: dict[str, User], tmp_path: Path
) -> None:
    with pytest.raises(SpecError) as caught:
        load(tmp_path, "")
    message = str(caught.value)
    assert message.startswith("equal.phases[0] (test): this phase takes prediction files, but its ranking average "
                              "covers the Split III dataset(s) coqa, which a prediction file cannot answer")
    assert "ranking: {incomplete: zero}" in message and "ranking: {incomplete: unranked}" in message
    assert "xquad-en, duorc-selfrc" in message and "allowed_kinds: [docker_image, code_bundle]" in message
    assert not Challenge.objects.filter(slug="equal").exists()
    with pytest.raises(SpecError, match=r"equal.phases\[0\] \(test\): this phase takes prediction files"):
        load(tmp_path, "ranking: {splits: [II, III]}")
    # Each way out is accepted.
    assert load(tmp_path, "ranking: {splits: [II, III], incomplete: unranked}").ranking_scope == {
        "splits": ["II", "III"], "incomplete": "unranked"
    }
    assert load(tmp_path, "ranking: {splits: [II]}").ranking_scope == {"splits": ["II"]}
    assert load(tmp_path, "", kinds="[docker_image, code_bundle]").ranking_scope == {}


@pytest.mark.parametrize(("ranking", "fragment"), [
    ("ranking: {incomplete: maybe}",
     "equal.ranking.incomplete: 'maybe' is not one of zero (a dataset a row did not answer counts 0), unranked"),
    ("ranking: {incomplete: zero, splits: [II], datasets: [coqa]}",
     "equal.ranking: expected {splits: [II, III]} or {datasets: [slug, ...]}, optionally with incomplete"),
])
def test_a_bad_incomplete_key_is_refused_naming_it(people: dict[str, User], tmp_path: Path, ranking: str,
                                                    fragment: str) -> None:
    with pytest.raises(SpecError) as caught:
        load(tmp_path, ranking)
    assert fragment in str(caught.value)


def test_a_reload_that_adds_a_dataset_to_a_phase_recomputes_the_averages(
    people: dict[str, User], tmp_path: Path
) -> None:
    challenge = load(tmp_path, "ranking: {splits: [II]}")
    phase = challenge.phases.get()
    run = system_row(phase, team_create(challenge=challenge, owner=people["bob"], name="Systems"),
                     {"xquad-en": 70.0, "duorc-selfrc": 50.0})
    assert run.primary_score == pytest.approx(60.0)
    spec = (tmp_path / "equal.yaml").read_text(encoding="utf-8")
    extra = f"  - {{slug: drop, name: DROP, split: II, files: {{test: {MRQA}/DROP.test.jsonl.gz}}}}\n"
    (tmp_path / "equal.yaml").write_text(spec + extra, encoding="utf-8")
    challenge_load(spec_path=tmp_path / "equal.yaml")
    run.refresh_from_db()
    assert run.primary_score == pytest.approx(40.0)  # DROP was not answered: (70 + 50 + 0) / 3
    assert rows(phase, people["carol"]) == [("Systems", 1, "2 of 3 datasets")]


# --------------------------------------------------------------------------- imports and sealing


@pytest.mark.parametrize("incomplete", ["zero", "unranked"])
def test_an_imported_row_missing_a_dataset_column_follows_the_same_rule(
    people: dict[str, User], tmp_path: Path, incomplete: str
) -> None:
    challenge = load(tmp_path, f"ranking: {{incomplete: {incomplete}}}", kinds="[]")
    phase = challenge.phases.get()
    full: dict[str, dict[str, float | None]] = {
        "XQuAD-en": {"f1": 70.0, "em": 60.0}, "DuoRC.SelfRC": {"f1": 70.0, "em": 60.0}, "CoQA": {"f1": 60.0, "em": 50.0}}
    without_coqa: dict[str, dict[str, float | None]] = {
        "XQuAD-en": {"f1": 90.0, "em": 80.0}, "DuoRC.SelfRC": {"f1": 90.0, "em": 80.0}}
    results_import(phase=phase, entries=[
        ImportedEntry(name="Complete", scores=full), ImportedEntry(name="No CoQA column", scores=without_coqa),
    ])
    by_team = {s.team.name: s for s in Submission.objects.filter(phase=phase)}
    assert by_team["No CoQA column"].primary_score == pytest.approx(60.0)  # (90 + 90 + 0) / 3
    assert by_team["Complete"].primary_score == pytest.approx(200 / 3)
    expected = {
        "zero": [("Complete", 1, ""), ("No CoQA column", 2, "2 of 3 datasets")],
        "unranked": [("Complete", 1, ""), ("No CoQA column", None, "2 of 3 datasets")],
    }[incomplete]
    assert rows(phase, people["carol"]) == expected


def test_a_sealed_dataset_a_row_did_not_answer_holds_no_secret_and_one_it_answered_stays_sealed(
    people: dict[str, User], tmp_path: Path
) -> None:
    """The missing dataset counts 0 for everyone to see; the disclosure rule still guards answered ones."""
    # "isolating" (the default before issue 22): the full average ranks, withheld where it gives a value away.
    challenge = load(tmp_path, "ranking: {incomplete: zero}\nsealed_aggregates: isolating", revealed=False)
    phase = challenge.phases.get()
    prediction_row(phase, team_create(challenge=challenge, owner=people["alice"], name="Files"), people["alice"])
    system_row(phase, team_create(challenge=challenge, owner=people["bob"], name="Systems"), COMPLETE)
    board = board_build(phase=phase, viewer=people["carol"])
    by_team = {row.team_name: row for row in board.rows}
    # The prediction row's macro F1 is (100 + 100 + 0) / 3, nothing sealed in it: shown.
    assert by_team["Files"].values["agg:macro_f1"] == pytest.approx(200 / 3)
    # The system's macro F1 with its two visible F1s would give CoQA's away: withheld.
    assert "agg:macro_f1" in by_team["Systems"].sealed_keys and "agg:macro_f1" not in by_team["Systems"].values
    assert [(r.team_name, r.rank, r.coverage) for r in board.rows] == [
        ("Systems", 1, ""), ("Files", 2, "2 of 3 datasets")
    ]
    page = Client().get("/c/equal/board/test/").content.decode()
    assert "CoQA" not in page and "Hidden-99" in page and "60.00" not in page
    organizer = board_build(phase=phase, viewer=people["oscar"], view=ORGANIZER)
    assert {r.team_name: r.values["agg:macro_f1"] for r in organizer.rows}["Systems"] == pytest.approx(70.0)
