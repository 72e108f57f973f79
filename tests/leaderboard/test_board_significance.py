"""Which differences on a board are real (issue 12): rank groups, intervals, rank ranges.

Rows are real prediction uploads scored by the platform, so the bootstrap reads the
per-question scores the scoring path stored; the expected groups are known by construction
(two teams with the same answers share a group; a team that answered half the questions is
significantly worse).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client, TestCase

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, Dataset, DatasetFile, Phase, SubmissionKind
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.rankings.board_significance import NO_QUESTION_SCORES, question_vector
from leaderboard.rankings.models import BoardSignificance
from leaderboard.rankings.selectors import ORGANIZER, Board, board_build
from leaderboard.rankings.services import board_significance_refresh
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.imports import ImportedEntry, results_import
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import QuestionScores, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.scores import scores_write
from tests.builders.cast import DEMO_DATA, mrqa_gold, upload

MRQA = DEMO_DATA / "mrqa"
SPEC = f"""
slug: sig
title: Significance
metric_suite: mrqa
ranking_rule: latest
staff: [oscar]
phases:
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}}
datasets:
  - {{slug: xquad-en, name: XQuAD-en, split: II, files: {{test: {MRQA}/XQuAD-en.test.jsonl.gz}}}}
  - {{slug: duorc-selfrc, name: DuoRC.SelfRC, split: II, files: {{test: {MRQA}/DuoRC.SelfRC.test.jsonl.gz}}}}
"""
FILES = {"xquad-en": "XQuAD-en", "duorc-selfrc": "DuoRC.SelfRC"}


@pytest.fixture
def phase(db: None, tmp_path: Path) -> Phase:
    User.objects.create_user("oscar")
    spec = tmp_path / "sig.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    challenge: Challenge = challenge_load(spec_path=spec)
    return challenge.phases.get(slug="test")


def answers(share: float, *, from_end: bool = False) -> dict[str, dict[str, str]]:
    """Gold answers for ``share`` of each dataset's questions (the first ones, or the last ones
    with ``from_end``), nothing for the rest."""
    out = {}
    for slug, name in FILES.items():
        gold = list(mrqa_gold(MRQA / f"{name}.test.jsonl.gz").items())
        keep = int(len(gold) * share)
        out[slug] = {qid: (refs[0] if (len(gold) - i <= keep if from_end else i < keep) else "")
                     for i, (qid, refs) in enumerate(gold)}
    return out


def submit(phase: Phase, name: str, share: float, *, from_end: bool = False) -> None:
    user = User.objects.create_user(name)
    team = team_create(challenge=phase.challenge, name=name, owner=user)
    submission = submission_create_predictions(team=team, phase=phase, user=user,
                                               upload=upload(answers(share, from_end=from_end)),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason


def built(phase: Phase, viewer: User | AnonymousUser | None = None, view: str = "public") -> Board:
    """The board once its bootstrap ran: the first read asks for it, on commit (as a real request
    does; inside a test's transaction the callbacks are run here), and the second reads it."""
    viewer = viewer or AnonymousUser()
    with TestCase.captureOnCommitCallbacks(execute=True):
        board_build(phase=phase, viewer=viewer, view=view)
    return board_build(phase=phase, viewer=viewer, view=view)


def test_identical_systems_share_a_group_and_a_weaker_one_does_not(phase: Phase) -> None:
    submit(phase, "alpha", 0.9)
    submit(phase, "beta", 0.9)  # the same answers as alpha
    # Wrong on other questions than alpha, and a little more often: not significantly worse.
    submit(phase, "delta", 0.88, from_end=True)
    submit(phase, "gamma", 0.5)  # half the questions unanswered: far below
    board = built(phase)
    assert board.significance.ready
    by_team = {row.team_name: (row, board.significance.rows[row.submission_id]) for row in board.rows}
    alpha, beta, delta, gamma = (by_team[n] for n in ("alpha", "beta", "delta", "gamma"))
    assert alpha[0].rank == beta[0].rank == 1 and delta[0].rank == 3 and gamma[0].rank == 4
    assert alpha[1].group == beta[1].group == delta[1].group == 1 and gamma[1].group == 4
    assert {alpha[1].p_value, beta[1].p_value} == {None, 1.0}  # one is the leader, the other its twin
    assert delta[1].p_value is not None and delta[1].p_value >= 0.05
    assert gamma[1].p_value is not None and gamma[1].p_value < 0.01
    assert gamma[1].rank_range == (4, 4) and alpha[1].rank_range is not None and alpha[1].rank_range[0] == 1
    assert delta[1].rank_range is not None and delta[1].rank_range[0] == 1  # it ranks first in some resamples
    for row, sig in (alpha, beta, delta, gamma):
        assert sig.ci is not None and row.rank_value is not None and sig.ci[0] <= row.rank_value <= sig.ci[1]
        assert set(sig.datasets) == {ds.pk for ds in phase.challenge.datasets.all()}
    # The page: the group next to the rank, the columns, and the footnote with the method.
    html = Client().get(f"/c/sig/board/{phase.slug}/").content.decode()
    assert "tied with #1" in html and "p vs leader" in html and "Rank range" in html
    assert "1,000 resamples" in html and "seed 2019" in html
    assert html.count("title=\"95% CI ") == 2 * 4  # each dataset F1 cell of each row, on hover
    # Reproducible: computing again gives the same payload.
    stored = BoardSignificance.objects.get(phase=phase, key=board.significance_inputs.key)  # type: ignore[union-attr]
    first = stored.payload
    stored.delete()
    again = built(phase)
    assert BoardSignificance.objects.get(phase=phase, key=again.significance_inputs.key).payload == first  # type: ignore[union-attr]


def test_a_new_score_gives_a_new_result_never_the_stale_one(phase: Phase) -> None:
    submit(phase, "alpha", 1.0)
    submit(phase, "gamma", 0.5)
    before = built(phase)
    assert before.significance.ready
    submit(phase, "delta", 0.75)
    after = built(phase)
    assert after.significance_inputs is not None and before.significance_inputs is not None
    assert after.significance_inputs.key != before.significance_inputs.key
    assert after.significance.ready and len(after.significance.rows) == 3
    # The background refresh keeps only what the phase's boards show now.

    board_significance_refresh(phase.pk)
    assert list(BoardSignificance.objects.filter(phase=phase).values_list("key", flat=True)) == [
        after.significance_inputs.key]


def test_imported_results_say_they_have_no_interval(phase: Phase) -> None:
    submit(phase, "alpha", 1.0)
    submit(phase, "gamma", 0.5)
    results_import(phase=phase, entries=[ImportedEntry(
        name="Published", affiliation="Paper", is_baseline=True,
        scores={slug: {"f1": 60.0, "em": 50.0} for slug in FILES})])
    board = built(phase)
    published = next(r for r in board.rows if r.team_name == "Published")
    assert board.significance.rows[published.submission_id].note == NO_QUESTION_SCORES
    assert board.significance.rows[published.submission_id].ci is None
    body = json.loads(Client().get(f"/c/sig/board/{phase.slug}/export.json").content)
    record = next(r for r in body["rows"] if r["team"] == "Published")
    assert record["ci95_low"] is None and record["significance_note"] == NO_QUESTION_SCORES
    assert body["significance"]["status"] == "ready" and "paired bootstrap" in body["significance"]["method"]


def test_a_vector_that_does_not_give_back_the_score_is_refused() -> None:
    records = [{"id": "a", "f1": 1.0}, {"id": "b", "f1": 0.0}]
    assert question_vector(records, ["a", "b"], "f1", 50.0) is not None  # 0-1 records, 0-100 board
    assert question_vector(records, ["a", "b"], "f1", 0.5) is not None  # same units
    assert question_vector(records, ["a", "b"], "f1", 70.0) is None
    assert question_vector([{"id": "a", "f1": 1.0, "filtered": True}, {"id": "b", "f1": 0.5}],
                           ["a", "b"], "f1", 50.0) is not None  # a filtered question does not count


def test_question_vectors_are_stored_once(phase: Phase) -> None:
    submit(phase, "alpha", 1.0)
    submit(phase, "gamma", 0.5)
    built(phase)
    assert not QuestionScores.objects.filter(vector__isnull=True).exists()
    assert {key.split(":")[0] for key in QuestionScores.objects.values_list("vector_metric", flat=True)} == {"f1"}


def test_a_vector_made_for_other_questions_is_made_again(phase: Phase) -> None:
    """A replaced gold changes the questions: a stored vector aligned with the old ones is stale."""
    submit(phase, "alpha", 1.0)
    submit(phase, "gamma", 0.5)
    built(phase)
    QuestionScores.objects.update(vector_metric="f1:0000000000000000")  # as if made for other questions
    BoardSignificance.objects.all().delete()
    board = built(phase)
    assert board.significance.ready and all(r.ci is not None for r in board.significance.rows.values())
    assert not QuestionScores.objects.filter(vector_metric="f1:0000000000000000").exists()


def test_a_board_that_is_not_public_gets_its_organizer_bootstrap(phase: Phase) -> None:
    submit(phase, "alpha", 1.0)
    submit(phase, "gamma", 0.5)
    Phase.objects.filter(pk=phase.pk).update(board_public=False)
    board_significance_refresh(phase.pk)  # built the public view before, which is 404 for such a board
    assert BoardSignificance.objects.filter(phase=phase, payload__isnull=False).count() == 1


def test_the_organizer_view_has_the_same_groups(phase: Phase) -> None:
    submit(phase, "alpha", 1.0)
    submit(phase, "gamma", 0.5)
    oscar = User.objects.get(username="oscar")
    public = built(phase)
    organizer = built(phase, oscar, ORGANIZER)
    assert public.significance.rows == organizer.significance.rows


SEALED_SPEC = f"""
slug: sealedsig
title: Sealed significance
metric_suite: mrqa
ranking_rule: latest
staff: [oscar]
# Ranked on the full average, which is withheld (the default before issue 22).
sealed_aggregates: isolating
phases:
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [docker_image]}}
datasets:
  - {{slug: xquad-en, name: XQuAD-en, split: II, files: {{test: {MRQA}/XQuAD-en.test.jsonl.gz}}}}
  - {{slug: coqa, name: CoQA, split: III, sealed_alias: Hidden-07, files: {{test: {MRQA}/CoQA.test.jsonl.gz}}}}
"""


def system_row(phase: Phase, name: str, right_every: int) -> None:
    """A system's scores as a worker writes them, with per-question records: right on every
    ``right_every``-th question of each dataset."""
    user = User.objects.create_user(name)
    team = team_create(challenge=phase.challenge, name=name, owner=user)
    submission = Submission.objects.create(team=team, phase=phase, kind=SubmissionKind.DOCKER_IMAGE,
                                           status=Status.SCORING)
    results = {}
    for file in DatasetFile.objects.filter(dataset__challenge=phase.challenge, portion="test").select_related("dataset"):
        records = [{"id": qid, "f1": float(i % right_every == 0), "exact_match": int(i % right_every == 0)}
                   for i, qid in enumerate(file.qids)]
        f1 = 100 * sum(r["f1"] for r in records) / len(records)
        results[file.dataset] = DatasetResult(metrics={"f1": f1, "em": f1}, per_example=records)
    scores_write(submission=submission, results=results)


def test_a_withheld_average_shows_no_interval_and_no_p_value_to_the_public(db: None, tmp_path: Path) -> None:
    User.objects.create_user("oscar")
    spec = tmp_path / "sealed.yaml"
    spec.write_text(SEALED_SPEC, encoding="utf-8")
    phase = challenge_load(spec_path=spec).phases.get(slug="test")
    system_row(phase, "alpha", 1)
    system_row(phase, "beta", 3)
    public = built(phase)
    assert public.ranks_on_withheld  # the macro average would give Hidden-07's score away
    records = json.loads(Client().get("/c/sealedsig/board/test/export.json").content)["rows"]
    assert all(r["ci95_low"] is None and r["ci95_high"] is None and r["p_vs_leader"] is None for r in records)
    # Nor groups or rank ranges: compared with each other, they too would bound the withheld averages.
    assert all(r["rank_low"] is None and r["rank_group"] is None and "withheld" in r["significance_note"]
               for r in records)
    html = Client().get("/c/sealedsig/board/test/").content.decode()
    assert "withheld: the ranking average is sealed on some rows" in html and "tied #" not in html
    assert "Intervals, p-values, rank groups and rank ranges are withheld on this board" in html
    coqa = Dataset.objects.get(slug="coqa")
    # No interval of the sealed dataset's column either (the cell itself is sealed).
    for row in public.rows:
        assert coqa.pk in public.significance.rows[row.submission_id].datasets  # computed, trusted side
    assert "Hidden-07" in html and "CoQA" not in html
    organizer = built(phase, User.objects.get(username="oscar"), ORGANIZER)
    oscar = Client()
    oscar.force_login(User.objects.get(username="oscar"))
    body = json.loads(oscar.get("/c/sealedsig/board/test/organizer/export.json").content)["rows"]
    assert body[0]["ci95_low"] is not None and body[1]["p_vs_leader"] is not None
    assert organizer.significance.rows == public.significance.rows


def test_one_interval_per_row_whatever_the_view(db: None, tmp_path: Path) -> None:
    """The public view orders sealed columns last; the resamples must not follow the columns' order,
    or the same row gets two intervals computed at the same second."""
    User.objects.create_user("oscar")
    spec = tmp_path / "first-sealed.yaml"
    # The sealed dataset first in the organizer's order, last on the public board.
    head, _, lines = SEALED_SPEC.replace("slug: sealedsig", "slug: firstsealed").partition("datasets:\n")
    xquad, coqa = lines.strip("\n").split("\n")
    spec.write_text(f"{head}datasets:\n{coqa}\n{xquad}\n", encoding="utf-8")
    phase = challenge_load(spec_path=spec).phases.get(slug="test")
    names = [ds.slug for ds in Dataset.objects.filter(challenge=phase.challenge).order_by("order")]
    assert names == ["coqa", "xquad-en"]
    system_row(phase, "alpha", 2)
    system_row(phase, "beta", 3)
    public = built(phase)
    organizer = built(phase, User.objects.get(username="oscar"), ORGANIZER)
    assert [c.group for c in public.columns if c.key.startswith("ds:")][0] != \
        [c.group for c in organizer.columns if c.key.startswith("ds:")][0]
    assert public.significance.ready and organizer.significance.ready
    for row in public.rows:
        assert public.significance.rows[row.submission_id] == organizer.significance.rows[row.submission_id]
    # One stored result serves both views.
    assert public.significance_inputs.key == organizer.significance_inputs.key  # type: ignore[union-attr]
