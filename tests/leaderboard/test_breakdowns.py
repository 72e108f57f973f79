"""A submission's scores by slice (issue 12, "Breakdowns"): what the page and the API show, and to whom.

The demo cast's MRQA challenge: SQuAD and XQuAD-en on the dev portion (public: every slice shown),
XQuAD-en's test portion (53 questions, hidden: the answer-length family has slices of 23, 15, 13
and 2 questions, so under the default minimum of 50 the team does not see it) and the sealed CoQA
(Split III, no breakdown at all for the team).  Prediction rows are real uploads scored by the
platform; the row with CoQA scores is fabricated through ``scores_write`` (a system's, as a worker
writes it), since a prediction file cannot answer Split III.
"""

from __future__ import annotations

import re
from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from leaderboard.challenges.models import DatasetFile, SubmissionKind
from leaderboard.challenges.spec import SpecError
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.core.display import interval_text
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import QuestionScores, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.score_slices import (
    NOT_REPRODUCED,
    SEALED_NOTE,
    families_visible,
    submission_breakdowns,
)
from leaderboard.submissions.scores import scores_write
from scoring.breakdowns import Family, Slice
from tests.builders.breakdowns import FOR_ORGANIZERS, HIDDEN, submit
from tests.builders.cast import DEMO_DATA, SPEC, Cast, gold_predictions, mrqa_gold, upload


def system_row(cast: Cast) -> Submission:
    """Alpha's run on the test phase with per-question records on XQuAD-en and the sealed CoQA."""
    submission = Submission.objects.create(team=cast.alpha, phase=cast.test, kind=SubmissionKind.DOCKER_IMAGE,
                                           status=Status.SCORING)
    results = {}
    for file in DatasetFile.objects.filter(dataset__challenge=cast.challenge, portion="test").select_related("dataset"):
        records = [{"id": qid, "f1": float(i % 2 == 0), "exact_match": int(i % 2 == 0)}
                   for i, qid in enumerate(file.qids)]
        f1 = 100 * sum(r["f1"] for r in records) / len(records)
        results[file.dataset] = DatasetResult(metrics={"f1": f1, "em": f1}, per_example=records)
    scores_write(submission=submission, results=results)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED
    return submission


def bucket(answers: list[str]) -> str:
    shortest = min(len(a.split()) for a in answers)
    return "1" if shortest <= 1 else "2-3" if shortest <= 3 else "4-7" if shortest <= 7 else "8+"


def expected_slices(submission: Submission, slug: str, gold_file: str) -> dict[str, tuple[int, float]]:
    """Each answer-length slice's size and mean F1 x 100, from the stored records and the gold file."""
    gold = mrqa_gold(DEMO_DATA / "mrqa" / gold_file)
    records = QuestionScores.objects.get(submission=submission, dataset__slug=slug).records
    values: dict[str, list[float]] = {}
    for record in records:
        values.setdefault(bucket(gold[record["id"]]), []).append(100 * record["f1"])
    return {label: (len(v), mean(v)) for label, v in values.items()}


def api(cast: Cast, who: str, submission: Submission) -> list[dict[str, Any]]:
    answer = cast.client(who).get(f"/api/v1/submissions/{submission.pk}/")
    assert answer.status_code == 200
    breakdowns: list[dict[str, Any]] = answer.json()["breakdowns"]
    return breakdowns


def page(cast: Cast, who: str, submission: Submission) -> str:
    answer = cast.client(who).get(f"/c/demo/submissions/{submission.pk}/")
    assert answer.status_code == 200
    html = answer.content.decode()
    return html[html.index('<h2 id="breakdown">'):] if '<h2 id="breakdown">' in html else ""


def reload_with(tmp_path: Path, extra: str) -> None:
    spec = tmp_path / "demo-breakdowns.yaml"
    spec.write_text(SPEC + extra, encoding="utf-8")
    challenge_load(spec_path=spec)


def test_on_the_dev_portion_the_team_sees_every_slice_with_its_size_mean_and_interval(cast: Cast) -> None:
    submission = submit(cast, "dev")
    found = {b.dataset: b for b in submission_breakdowns(submission=submission, viewer_is_organizer=False)}
    assert list(found) == ["SQuAD", "XQuAD-en"]
    for name, gold_file in (("SQuAD", "SQuAD.dev.jsonl.gz"), ("XQuAD-en", "XQuAD-en.dev.jsonl.gz")):
        [family] = found[name].families
        assert family.name == "answer length" and family.shown and not family.hidden_from_team
        expected = expected_slices(submission, name.lower(), gold_file)
        assert [s.label for s in family.slices] == [label for label in ("1", "2-3", "4-7", "8+") if label in expected]
        for s in family.slices:
            assert (s.questions, s.score) == pytest.approx(expected[s.label])
            assert s.ci_low <= s.score <= s.ci_high
    # Public data: SQuAD's single 8+ question is a slice of its own, shown to the team.
    assert any(s.label == "8+" and s.questions == 1 for s in found["SQuAD"].families[0].slices)

    [squad, _] = api(cast, "alice", submission)
    assert squad["dataset"] == "SQuAD" and squad["metric"] == "F1" and squad["questions"] == 245
    assert squad["hidden_data"] is False
    assert {s["slice"]: s["questions"] for s in squad["families"][0]["slices"]} == {"1": 151, "2-3": 89, "4-7": 4, "8+": 1}
    html = page(cast, "alice", submission)
    assert 'class="scroll"><table class="plain breakdown">' in html and "answer length" in html
    assert "hidden:" not in html


def test_on_the_test_portion_a_family_with_a_small_slice_is_hidden_from_the_team(cast: Cast) -> None:
    submission = submit(cast, "test")
    [team_view] = api(cast, "alice", submission)
    assert team_view["dataset"] == "XQuAD-en" and team_view["hidden_data"] is True
    assert team_view["families"] == [{"family": "answer length", "shown": False, "hidden_from_team": True,
                                      "note": HIDDEN, "slices": []}]
    html = page(cast, "alice", submission)
    assert HIDDEN in html and "<td>2-3</td>" not in html and "95% CI" in html


def test_the_organizer_sees_the_hidden_family_marked_as_the_team_does_not_see_it(cast: Cast) -> None:
    submission = submit(cast, "test")
    [organizer_view] = api(cast, "oscar", submission)
    [family] = organizer_view["families"]
    assert family["shown"] is True and family["hidden_from_team"] is True and family["note"] == FOR_ORGANIZERS
    expected = expected_slices(submission, "xquad-en", "XQuAD-en.test.jsonl.gz")
    assert {s["slice"]: s["questions"] for s in family["slices"]} == {k: n for k, (n, _) in expected.items()}
    assert {s["slice"]: s["questions"] for s in family["slices"]} == {"1": 23, "2-3": 15, "4-7": 13, "8+": 2}
    html = page(cast, "oscar", submission)
    assert FOR_ORGANIZERS in html and "<td>2-3</td>" in html and 'data-hidden-from-team="1"' in html


@pytest.mark.parametrize(("minimum", "shown"), [(1, True), (2, True), (3, False)])
def test_the_spec_minimum_decides_what_the_team_sees_of_hidden_data(
    cast: Cast, tmp_path: Path, minimum: int, shown: bool
) -> None:
    reload_with(tmp_path, f"breakdowns: {{min_questions: {minimum}}}\n")
    cast.challenge.refresh_from_db()
    assert cast.challenge.breakdown_min_questions == minimum
    submission = submit(cast, "test")
    [team_view] = api(cast, "alice", submission)
    [family] = team_view["families"]
    # The smallest slice (8+ words) has 2 questions.
    assert family["shown"] is shown
    assert len(family["slices"]) == (4 if shown else 0)
    if not shown:
        assert family["note"] == "hidden: a slice has fewer than 3 questions of hidden test data"


def test_the_minimum_defaults_to_50(cast: Cast) -> None:
    assert cast.challenge.breakdown_min_questions == 50


@pytest.mark.parametrize(("extra", "message"), [
    ("breakdowns: {min_questions: 0}", "demo.breakdowns.min_questions: 0 is not a number of questions"),
    ("breakdowns: {min_questions: -5}", "-5 is not a number of questions (a whole number, at least 1)"),
    ("breakdowns: {min_questions: 2.5}", "2.5 is not a number of questions"),
    ("breakdowns: {min_questions: '50'}", "'50' is not a number of questions"),
    ("breakdowns: {min_questions: true}", "True is not a number of questions"),
    ("breakdowns: 50", "demo.breakdowns: expected a mapping like {min_questions: 50}, found 50"),
    ("breakdowns: {min_question: 5}", "unknown key 'min_question'; did you mean 'min_questions'?"),
])
def test_the_spec_refuses_a_minimum_that_is_not_a_whole_number_of_at_least_one(
    cast: Cast, tmp_path: Path, extra: str, message: str
) -> None:
    with pytest.raises(SpecError) as raised:
        reload_with(tmp_path, extra + "\n")
    assert message in raised.value.message
    cast.challenge.refresh_from_db()
    assert cast.challenge.breakdown_min_questions == 50


def test_a_sealed_dataset_has_no_breakdown_for_the_team_whatever_the_minimum(cast: Cast, tmp_path: Path) -> None:
    reload_with(tmp_path, "breakdowns: {min_questions: 1}\n")
    submission = system_row(cast)
    assert [b["dataset"] for b in api(cast, "alice", submission)] == ["XQuAD-en"]
    html = page(cast, "alice", submission)
    assert "XQuAD-en" in html and "Hidden-07" not in html and "CoQA" not in html
    organizer = {b["dataset"]: b for b in api(cast, "oscar", submission)}
    assert list(organizer) == ["XQuAD-en", "CoQA"]
    assert organizer["CoQA"]["note"] == SEALED_NOTE and organizer["CoQA"]["hidden_data"] is True
    assert {s["slice"]: s["questions"] for s in organizer["CoQA"]["families"][0]["slices"]} == {
        "1": 4, "2-3": 7, "4-7": 7, "8+": 1}
    assert SEALED_NOTE in page(cast, "oscar", submission)


def test_only_a_finished_submission_with_per_question_scores_has_a_breakdown(cast: Cast) -> None:
    queued = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                           upload=upload(gold_predictions("dev")), limit_bytes=10 * 1024 * 1024)
    assert submission_breakdowns(submission=queued, viewer_is_organizer=True) == []
    assert page(cast, "alice", queued) == ""
    imported = Submission.objects.create(team=cast.charlies, phase=cast.test, kind=SubmissionKind.DOCKER_IMAGE,
                                         status=Status.SCORING)
    xquad = cast.challenge.datasets.get(slug="xquad-en")
    scores_write(submission=imported, results={xquad: DatasetResult(metrics={"f1": 70.0, "em": 60.0}, per_example=[])})
    imported.refresh_from_db()
    assert imported.status == Status.FINISHED
    assert submission_breakdowns(submission=imported, viewer_is_organizer=True) == []
    assert api(cast, "charlie", imported) == []


def test_records_that_do_not_give_back_the_score_get_no_breakdown(cast: Cast) -> None:
    submission = submit(cast, "dev")
    row = QuestionScores.objects.get(submission=submission, dataset__slug="squad")
    row.records = [{**r, "f1": 0.0} for r in row.records]
    row.save()
    found = {b.dataset: b for b in submission_breakdowns(submission=submission, viewer_is_organizer=False)}
    assert found["SQuAD"].families == () and found["SQuAD"].note == NOT_REPRODUCED
    assert found["XQuAD-en"].families


def test_the_submission_list_api_does_not_compute_breakdowns(cast: Cast) -> None:
    submit(cast, "dev")
    [listed] = cast.client("alice").get("/api/v1/challenges/demo/submissions/").json()
    assert listed["status"] == "finished" and "breakdowns" not in listed


def test_a_family_that_with_one_shown_would_single_out_a_few_hidden_questions_is_hidden() -> None:
    def family(name: str, labels: list[str]) -> Family:
        sizes = {label: labels.count(label) for label in dict.fromkeys(labels)}
        return Family(name, tuple(Slice(label, n, 50.0, 40.0, 60.0) for label, n in sizes.items()), tuple(labels))

    answerable = family("answerable", ["answerable"] * 200 + ["unanswerable"] * 121)
    level = family("difficulty level", ["no level"] * 200 + ["LEVEL1"] * 60 + ["LEVEL2"] * 60 + ["no level"])
    team = families_visible((answerable, level), minimum=50, hidden_data=True, viewer_is_organizer=False)
    assert [f.shown for f in team] == [True, False]
    assert "single out fewer than 50 questions" in team[1].note
    organizer = families_visible((answerable, level), minimum=50, hidden_data=True, viewer_is_organizer=True)
    assert [f.shown for f in organizer] == [True, True] and organizer[1].hidden_from_team
    # On public data both are the team's.
    assert all(f.shown for f in families_visible((answerable, level), minimum=50, hidden_data=False,
                                                 viewer_is_organizer=False))


def test_a_slice_of_one_question_shows_no_interval(cast: Cast) -> None:
    submission = submit(cast, "dev")
    html = page(cast, "alice", submission)
    rows = dict(re.findall(r"<td>([^<]+)</td><td class=\"num\">\d+</td><td class=\"num\">[\d.]+</td>"
                           r"<td class=\"num ci\">(.*?)</td>", html))
    # SQuAD's single 8+ question: a mean of one value has no interval, and "x–x" would pretend one.
    assert "one question" in rows["8+"]
    assert not any(re.fullmatch(r"([\d.]+)–\1", ci) for ci in rows.values())
    assert re.fullmatch(r"[\d.]+–[\d.]+", rows["2-3"]), rows


@pytest.mark.parametrize(("low", "high", "text"), [
    (42.111, 42.109, ""),  # the ends read the same at two decimals
    (17.625, 24.63, "17.63–24.63"),  # half up, as floatformat and the board round
    (0.0, 100.0, "0.00–100.00"),
])
def test_an_interval_reads_as_its_two_ends_or_not_at_all(low: float, high: float, text: str) -> None:
    assert interval_text(low, high) == text
