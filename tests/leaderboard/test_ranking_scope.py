"""What the ranking average covers (issue 8, part 3), and rows shown unranked with a reason.

MRQA 2019 ranked teams by macro F1 over the hidden test portions of Splits II and III only;
``ranking: {splits: [II, III]}`` in a spec does the same here, and the board says so.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, Dataset, Phase, SubmissionKind
from leaderboard.challenges.spec import SpecError
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.models import Score, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.scores import scores_write
from tests.builders.cast import REPO

SPEC = """
slug: scoped
title: Scoped MRQA
metric_suite: mrqa
staff: [oscar]
{ranking}
# Systems, as MRQA 2019's test phase took: a prediction file could not answer RACE (Split III).
phases:
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [docker_image]}}
datasets:
  - {{slug: squad, name: SQuAD, split: I, portions: [test]}}
  - {{slug: bioasq, name: BioASQ, split: II, portions: [test]}}
  - {{slug: drop, name: DROP, split: II, portions: [test]}}
  - {{slug: race, name: RACE, split: III, portions: [test], revealed: true}}
"""


def load(tmp_path: Path, ranking: str) -> Challenge:
    spec = tmp_path / "scoped.yaml"
    spec.write_text(SPEC.format(ranking=ranking), encoding="utf-8")
    return challenge_load(spec_path=spec)


def write_scores(phase: Phase, team, f1: dict[str, float]) -> Submission:  # type: ignore[no-untyped-def]
    submission = Submission.objects.create(team=team, phase=phase, kind=SubmissionKind.PREDICTIONS,
                                           status=Status.SCORING)
    datasets = {d.slug: d for d in Dataset.objects.filter(challenge=phase.challenge)}
    scores_write(submission=submission, results={
        datasets[slug]: DatasetResult(metrics={"f1": v, "em": v - 10}, per_example=[]) for slug, v in f1.items()
    })
    submission.refresh_from_db()
    return submission


@pytest.fixture
def teams(db: None) -> tuple[User, User]:
    User.objects.create_user("oscar")
    return User.objects.create_user("alice"), User.objects.create_user("bob")


# Alpha is far better on Split I, Beta better on Splits II and III.
ALPHA = {"squad": 95.0, "bioasq": 60.0, "drop": 50.0, "race": 55.0}
BETA = {"squad": 40.0, "bioasq": 62.0, "drop": 52.0, "race": 57.0}


def test_split_i_scores_do_not_move_the_ranking(teams: tuple[User, User], tmp_path: Path) -> None:
    challenge = load(tmp_path, "ranking: {splits: [II, III]}")
    assert challenge.ranking_scope == {"splits": ["II", "III"]}
    phase = challenge.phases.get(slug="test")
    alice, bob = teams
    alpha = write_scores(phase, team_create(challenge=challenge, owner=alice, name="Alpha"), ALPHA)
    beta = write_scores(phase, team_create(challenge=challenge, owner=bob, name="Beta"), BETA)
    # The ranked aggregate covers BioASQ, DROP and RACE only; per-split averages stay.
    assert alpha.primary_score == pytest.approx((60 + 50 + 55) / 3)
    assert Score.objects.get(submission=alpha, dataset=None, metric="macro_em").value == pytest.approx(45.0)
    assert Score.objects.get(submission=alpha, dataset=None, metric="split_I_macro_f1").value == 95.0
    assert Score.objects.get(submission=beta, dataset=None, metric="split_II_macro_f1").value == 57.0
    board = board_build(phase=phase, viewer=alice)
    assert [(r.team_name, r.rank) for r in board.rows] == [("Beta", 1), ("Alpha", 2)]
    assert board.ranked_by == "Macro F1 over Splits II and III"
    # However good Alpha gets on Split I, the order stays.
    write_scores(phase, alpha.team, {**ALPHA, "squad": 100.0})
    write_scores(phase, beta.team, {**BETA, "squad": 0.0})
    assert [r.team_name for r in board_build(phase=phase, viewer=alice).rows] == ["Beta", "Alpha"]
    page = Client().get("/c/scoped/board/test/").content.decode()
    assert "Ranked by Macro F1 over Splits II and III" in page
    assert Client().get("/api/v1/challenges/scoped/phases/test/leaderboard/").json()["ranking"] == (
        "Macro F1 over Splits II and III"
    )


def test_without_a_scope_every_dataset_ranks(teams: tuple[User, User], tmp_path: Path) -> None:
    challenge = load(tmp_path, "")
    assert challenge.ranking_scope == {}
    phase = challenge.phases.get(slug="test")
    alice, bob = teams
    write_scores(phase, team_create(challenge=challenge, owner=alice, name="Alpha"), ALPHA)
    write_scores(phase, team_create(challenge=challenge, owner=bob, name="Beta"), BETA)
    board = board_build(phase=phase, viewer=alice)
    assert [r.team_name for r in board.rows] == ["Alpha", "Beta"]
    assert board.ranked_by == "Macro F1 over every dataset of this phase"


def test_a_scope_by_dataset_names_them(teams: tuple[User, User], tmp_path: Path) -> None:
    challenge = load(tmp_path, "ranking: {datasets: [bioasq, race]}")
    phase = challenge.phases.get(slug="test")
    alice, _ = teams
    alpha = write_scores(phase, team_create(challenge=challenge, owner=alice, name="Alpha"), ALPHA)
    assert alpha.primary_score == pytest.approx((60 + 55) / 2)
    assert board_build(phase=phase, viewer=alice).ranked_by == "Macro F1 over BioASQ and RACE"


@pytest.mark.parametrize(
    ("ranking", "message"),
    [
        ("ranking: {splits: [II, IV]}", "scoped.ranking.splits: 'IV' is not one of I, II, III"),
        ("ranking: {datasets: [bioasq, nope]}", "scoped.ranking.datasets: no dataset with slug 'nope' in this spec"),
        ("ranking: {splits: []}", "scoped.ranking.splits: expected a non-empty list"),
        ("ranking: {splits: [II], datasets: [drop]}", "scoped.ranking: expected {splits: [II, III]} or"),
        ("ranking: [II, III]", "scoped.ranking: expected {splits: [II, III]} or"),
    ],
)
def test_a_bad_ranking_scope_fails_the_load_naming_it(db: None, tmp_path: Path, ranking: str, message: str) -> None:
    User.objects.create_user("oscar")
    with pytest.raises(SpecError) as caught:
        load(tmp_path, ranking)
    assert message in str(caught.value)
    assert not Challenge.objects.filter(slug="scoped").exists()


@pytest.mark.parametrize("key", list(SUITES))
def test_each_suite_computes_exactly_the_means_averaged_over_describes(key: str) -> None:
    """One description of every aggregate serves scoring and sealing: they must agree."""
    suite = SUITES[key]
    datasets = [Dataset(pk=i, slug=f"d{i}", split=split) for i, split in enumerate(["I", "II", "II", "III"], 1)]
    metrics = {"f1", "em", "exact", "rouge_l", "heq_q", suite.primary_metric}
    per_dataset = {ds: {m: 10.0 * ds.pk + len(m) for m in sorted(metrics)} for ds in datasets}
    ranked = datasets[1:]
    out = suite.aggregate(per_dataset, ranked=ranked)
    assert out
    for name, value in out.items():
        scope = suite.averaged_over(name, datasets, ranked=ranked)
        assert scope is not None, name
        family, over = scope
        assert value == pytest.approx(sum(per_dataset[ds][family] for ds in over) / len(over)), name
    primary = suite.averaged_over(suite.primary_metric, datasets, ranked=ranked)
    assert primary is not None and primary[1] == ranked  # the ranking mean covers the ranked datasets only
    assert suite.aggregate(per_dataset)[suite.primary_metric] == pytest.approx(
        sum(m[primary[0]] for m in per_dataset.values()) / 4
    )


def test_the_mrqa_demo_ranks_on_splits_ii_and_iii() -> None:
    spec = yaml.safe_load((REPO / "deploy" / "demo" / "mrqa-demo.yaml").read_text(encoding="utf-8"))
    assert spec["ranking"] == {"splits": ["II", "III"]}


# --------------------------------------------------------------------------- excluded rows


def test_an_excluded_row_is_shown_unranked_after_the_ranked_rows_with_its_reason(
    teams: tuple[User, User], tmp_path: Path
) -> None:
    challenge = load(tmp_path, "")
    phase = challenge.phases.get(slug="test")
    alice, bob = teams
    alpha = write_scores(phase, team_create(challenge=challenge, owner=alice, name="Alpha"), ALPHA)
    write_scores(phase, team_create(challenge=challenge, owner=bob, name="Beta"), BETA)
    carol = User.objects.create_user("carol")
    write_scores(phase, team_create(challenge=challenge, owner=carol, name="Gamma"),
                 {k: v - 30 for k, v in BETA.items()})
    reason = "trained on the test portion of DROP <by mistake>"
    Submission.objects.filter(pk=alpha.pk).update(excluded_reason=reason)

    board = board_build(phase=phase, viewer=bob)
    assert [(r.team_name, r.rank) for r in board.rows] == [("Beta", 1), ("Gamma", 2), ("Alpha", None)]
    client = Client()
    page = client.get("/c/scoped/board/test/").content.decode()
    assert "trained on the test portion of DROP &lt;by mistake&gt;" in page
    assert page.index("Gamma") < page.index("Alpha")
    for url in ("/c/scoped/board/test/export.json", "/api/v1/challenges/scoped/phases/test/leaderboard/"):
        rows = client.get(url).json()["rows"]
        assert [(r["team"], r["rank"], r["excluded"]) for r in rows] == [
            ("Beta", 1, ""), ("Gamma", 2, ""), ("Alpha", None, reason)
        ]
        assert rows[2]["Macro F1"] == pytest.approx(alpha.primary_score)  # its scores stay visible
    rows = list(csv.DictReader(io.StringIO(client.get("/c/scoped/board/test/export.csv").content.decode())))
    assert rows[2]["team"] == "Alpha" and rows[2]["excluded"] == reason and rows[2]["rank"] == ""


def test_changing_the_scope_in_the_spec_recomputes_the_stored_averages(
    teams: tuple[User, User], tmp_path: Path
) -> None:
    challenge = load(tmp_path, "")
    phase = challenge.phases.get(slug="test")
    alice, bob = teams
    alpha = write_scores(phase, team_create(challenge=challenge, owner=alice, name="Alpha"), ALPHA)
    write_scores(phase, team_create(challenge=challenge, owner=bob, name="Beta"), BETA)
    assert [r.team_name for r in board_build(phase=phase, viewer=alice).rows] == ["Alpha", "Beta"]
    load(tmp_path, "ranking: {splits: [II, III]}")
    alpha.refresh_from_db()
    assert alpha.primary_score == pytest.approx((60 + 50 + 55) / 3)
    assert Score.objects.get(submission=alpha, dataset=None, metric="macro_f1").value == alpha.primary_score
    assert [r.team_name for r in board_build(phase=phase, viewer=alice).rows] == ["Beta", "Alpha"]
