"""The conversational demos' pages, written for participants (issue 25).

What a participant reads on the QuAC and CoQA demos: a description that points to what they have
(the kit, the Data page, the protocol section of the page), each phase apart from its modes, the
limits that bind a turn-by-turn run (a time per answer, no output size), whole numbers shown whole,
and why a QuAC score counts fewer questions than the dataset has.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, Dataset, SubmissionKind
from leaderboard.challenges.starting_kit import kit_plan, readme_text
from leaderboard.submissions.models import QuestionScores, Score, Status, Submission
from leaderboard.submissions.reload import challenge_load
from scoring.quac import answers_by_dialog, evaluate_quac, load_quac_dataset
from tests.builders.cast import DEMO_DATA, REPO

pytestmark = pytest.mark.django_db


def load(slug: str) -> Challenge:
    User.objects.get_or_create(username="organizer")
    return challenge_load(spec_path=REPO / "deploy" / "demo" / f"{slug}.yaml")


def words(page: str) -> str:
    """The page's text as a reader gets it: no tags, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.parametrize("slug", ["quac-demo", "coqa-demo"])
def test_the_description_points_to_what_a_participant_has(slug: str) -> None:
    challenge = load(slug)
    assert "README" not in challenge.description  # the platform's README is not a participant's
    page = words(Client().get(f"/c/{slug}/").content.decode())
    for pointer in ('"How your system runs" below', "The Data page", "starting kit", "turn-by-turn harness",
                    "Development phase"):
        assert pointer in page, pointer
    assert "How your system runs" in page and "41 questions" not in page  # no count written by hand


@pytest.mark.parametrize("slug", ["quac-demo", "coqa-demo"])
def test_each_phase_is_named_apart_from_its_modes(slug: str) -> None:
    load(slug)
    page = Client().get(f"/c/{slug}/").content.decode()
    assert "Gold history (gold history" not in page
    for phase, modes in (("Development", "gold history (ranks its board), own history, adversarial history"),
                         ("Gold history", "gold history (ranks its board), own history, adversarial history"),
                         ("Own history", "own history (ranks its board), gold history, adversarial history")):
        assert f"<li>the <strong>{phase}</strong> phase: modes {modes}</li>" in page, phase


def test_a_turn_by_turn_challenge_states_the_time_per_answer_not_an_output_size() -> None:
    load("quac-demo")
    found = re.search(r'<li id="limits">.*?</li>', Client().get("/c/quac-demo/").content.decode(), re.S)
    assert found is not None
    limits = words(found.group(0))
    assert "MiB of output" not in limits
    assert ("Gets 1 CPU, 256 MiB of memory (swap included), 64 processes, 1024 open files, "
            "120 s of wall-clock time per mode, 5 s per answer; no network") in limits
    # A batch challenge keeps its output limit and has no time per answer.
    load("mrqa-demo")
    found = re.search(r'<li id="limits">.*?</li>', Client().get("/c/mrqa-demo/").content.decode(), re.S)
    assert found is not None
    batch = words(found.group(0))
    assert "64 MiB of output" in batch and "per answer" not in batch and "per mode" not in batch


def test_the_kit_states_the_same_limits_and_phases_as_the_page() -> None:
    challenge = load("quac-demo")
    client = Client()
    client.force_login(User.objects.get(username="organizer"))
    page = words(client.get("/c/quac-demo/").content.decode())
    readme = readme_text(kit_plan(challenge=challenge))
    stated = re.search(r"\*\*Gets\*\*, in this challenge: (.*?);\n", readme).group(1)  # type: ignore[union-attr]
    assert stated in page and "MiB of output" not in readme.split("## Reproduce")[0].split("### Phases")[0]
    assert "- the **Gold history** phase: modes gold history (ranks its board), own history, adversarial history" \
        in readme


def scored_quac_run(challenge: Challenge, *, user: User) -> Submission:
    """A finished run on the QuAC demo's dev phase, scored as the platform scores one: the dev gold's
    per-question records (the first answer of each question as the prediction) and the interactive
    protocol's figures, among them whole numbers (latency, questions per second, peak memory)."""
    team = team_create(challenge=challenge, owner=user, name="Alpha")
    phase = challenge.phases.get(slug="dev")
    dataset = Dataset.objects.get(challenge=challenge, slug="quac")
    gold = DEMO_DATA / "quac" / "quac-dev.json"
    dialogs = load_quac_dataset(gold, strict=True)
    predictions = {q.qid: q.refs[0] if q.refs else "CANNOTANSWER" for d in dialogs for q in d.questions}
    result = evaluate_quac(dialogs, answers_by_dialog(dialogs, predictions), min_f1=0.4, allow_undefined=True,
                           dataset_path=str(gold))
    submission = Submission.objects.create(team=team, phase=phase, kind=SubmissionKind.CODE_BUNDLE,
                                           status=Status.FINISHED, submitted_by=user)
    figures = {"f1": float(result.metrics["f1"]), "latency_p50_ms": 12.0, "questions_per_s": 83.0,
               "peak_memory_mib": 33.0}
    for ds in (None, dataset):
        Score.objects.bulk_create(Score(submission=submission, dataset=ds, metric=m, value=v) for m, v in figures.items())
    QuestionScores.objects.create(submission=submission, dataset=dataset,
                                  records=json.loads(json.dumps(result.per_example)))
    return submission


def test_whole_numbers_are_shown_whole_and_scores_with_two_decimals() -> None:
    challenge = load("quac-demo")
    alice = User.objects.create_user("alice")
    submission = scored_quac_run(challenge, user=alice)
    client = Client()
    client.force_login(alice)
    page = client.get(f"/c/quac-demo/submissions/{submission.pk}/").content.decode()
    rows = {(ds, label): value for ds, label, value in
            re.findall(r'<tr><td>([^<]*)</td><td title="[^"]*">([^<]*)</td><td>([^<]*)</td>', page)}
    assert rows[("Overall", "ms/question p50")] == "12"
    assert rows[("Overall", "Questions/s")] == "83"
    assert rows[("QuAC", "Peak MiB")] == "33"
    f1 = Score.objects.get(submission=submission, dataset=None, metric="f1").value
    assert f1 is not None
    assert re.fullmatch(r"\d+\.\d\d", rows[("Overall", "F1")]), rows
    assert abs(float(rows[("Overall", "F1")]) - f1) <= 0.005


def test_the_page_says_why_a_quac_score_counts_fewer_questions_than_the_dataset_has() -> None:
    challenge = load("quac-demo")
    alice = User.objects.create_user("alice")
    submission = scored_quac_run(challenge, user=alice)
    records = QuestionScores.objects.get(submission=submission).records
    left_out = sum(1 for r in records if r["filtered"])
    assert 0 < left_out < len(records) == 16  # the dev dialogs: 16 questions, some below the filter
    client = Client()
    client.force_login(alice)
    page = words(client.get(f"/c/quac-demo/submissions/{submission.pk}/").content.decode())
    assert (f"F1 counts {len(records) - left_out} of its {len(records)} questions: {left_out} "
            f"{'is' if left_out == 1 else 'are'} left out by QuAC's human-agreement filter, as in its official "
            "scorer: its annotators' own answers to them agree below the threshold (human F1 below 0.4).") in page


def test_no_page_formats_a_metric_value_but_by_its_column() -> None:
    """One rule for a value's digits (``columns.metric_decimals`` through ``core.display.fixed``): a
    template that formats a stored metric value itself would print a count with two decimals again."""
    templates = REPO / "leaderboard" / "core" / "templates"
    offenders = [f"{path.relative_to(templates)}: {line.strip()[:80]}"
                 for path in templates.rglob("*.html") for line in path.read_text(encoding="utf-8").splitlines()
                 if re.search(r"\b(s|row|score)\.value\|floatformat", line)]
    assert not offenders, offenders
