"""The ``deepread`` metric suite (issue 13): a Deep Read-style challenge end to end.

Stories, questions and answer keys as in Hirschman et al. (1999); systems answer with one of the
story's sentences; HumSent ranks, AutSent and P&R on stemmed content words are shown.  The gold is
``tests/scoring/data/deepread_challenge_dev.json`` (two short stories written for these tests).
"""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create
from leaderboard.challenges.gold_diff import gold_answers
from leaderboard.challenges.models import Challenge, DatasetFile, MetricSuite, Phase
from leaderboard.challenges.spec import SUITE_OPTIONS
from leaderboard.challenges.starting_kit import _score_lines
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites.base import NoOptions
from leaderboard.challenges.suites.columns import metric_label
from leaderboard.challenges.suites.deepread import DeepReadSuite
from leaderboard.core.errors import ServiceError
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status, Submission
from leaderboard.submissions.reload import challenge_load
from scoring import deepread
from scoring.errors import InputFormatError
from scoring.io import load_json
from tests.builders.cast import REPO, upload
from tests.builders.suites import assert_metric_names, encode, rejected, write
from tests.scoring.every_field import ANSWER_KEYS, canaries_in, keys_of, plant
from tests.scoring.helpers import run_cli_text_on_error as run_cli

DEMO = REPO / "tests" / "scoring" / "data" / "deepread_challenge_dev.json"
SUITE = DeepReadSuite()


def demo() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DEMO.read_text(encoding="utf-8"))
    return document


def sentences(gold: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {story["id"]: {str(s["id"]): s["text"] for s in story["sentences"]} for story in gold["stories"]}


def marked_answers(gold: dict[str, Any]) -> dict[str, str]:
    """Each question answered with its first marked sentence (sentence 4 where none is marked)."""
    texts = sentences(gold)
    return {q["id"]: texts[q["story"]][str((q["answer_sentences"] or ["4"])[0])] for q in gold["questions"]}


def weaker_answers(gold: dict[str, Any]) -> dict[str, str]:
    """Two wrong sentences, one answer that is no sentence, one sentence copied with other white space."""
    texts = sentences(gold)
    preds = marked_answers(gold)
    preds["rb-01-1"] = texts["rb-01"]["6"]  # no key word, not marked
    preds["rb-02-1"] = texts["rb-02"]["4"]
    preds["rb-02-2"] = "beans, carrots and sunflowers"  # the key: P&R 100, but no sentence
    preds["rb-02-3"] = "  Mr. Ortiz, the science teacher,\n showed them how to water the plants. "  # still sentence 3
    return preds


def story_portion(gold: dict[str, Any], story: str) -> dict[str, Any]:
    return {"stories": [s for s in gold["stories"] if s["id"] == story],
            "questions": [q for q in gold["questions"] if q["story"] == story]}


# --------------------------------------------------------------------------- the suite


def test_the_suite_is_offered_with_the_papers_metrics_as_columns() -> None:
    assert SUITES["deepread"].key == "deepread" and MetricSuite.DEEPREAD.value == "deepread"
    assert SUITE_OPTIONS["deepread"] is NoOptions
    assert SUITE.primary_metric == "humsent" == SUITE.dataset_columns[0].metric
    labels = [c.label for c in SUITE.dataset_columns]
    assert labels == [c.label for c in SUITE.aggregate_columns] == ["HumSent", "AutSent", "Precision", "Recall"]
    assert_metric_names(c.metric for c in SUITE.aggregate_columns)
    assert metric_label(SUITE, "autsent") == "AutSent"


def test_the_demo_gold_is_accepted_and_scored_against_itself() -> None:
    info = SUITE.inspect_gold(DEMO.read_bytes(), filename="deepread-dev.json", self_check=NoOptions())
    assert info.qids == [q["id"] for q in demo()["questions"]]


def test_inputs_carry_stories_and_questions_and_no_answer() -> None:
    gold = demo()
    inputs = json.loads(SUITE.inspect_gold(DEMO.read_bytes(), filename="deepread-dev.json").inputs)
    assert [[s["text"] for s in story["sentences"]] for story in inputs["stories"]] == [
        list(texts.values()) for texts in sentences(gold).values()]
    assert [s["title"] for s in inputs["stories"]] == ["The Lighthouse Keeper", "The School Garden"]
    assert inputs["questions"] == [{"id": q["id"], "story": q["story"], "question": q["question"]}
                                   for q in gold["questions"]]
    # Sentence ids are left out too: the answer is the sentence's text.
    assert keys_of(inputs) == {"stories", "id", "title", "sentences", "text", "questions", "story", "question"}
    # This key is in no sentence: anywhere in the inputs, it would be given away.
    assert b"saved them" not in json.dumps(inputs).encode()


def test_a_canary_planted_in_the_gold_does_not_reach_the_inputs() -> None:
    gold = plant(demo(), keep=frozenset({"answer_sentences"}))  # the loader checks those ids; checked by name
    gold["questions"][0]["answer_sentences"] = ["1"]
    gold["questions"][0]["answer_note"] = {"text": "CANARY-nested.answer_note"}
    gold["stories"][0]["sentences"][0]["is_answer_to"] = ["CANARY-sentence.is_answer_to"]
    content = encode(gold)
    assert len(canaries_in(content)) > 20
    info = SUITE.inspect_gold(content, filename="deepread-dev.json", self_check=NoOptions())
    assert canaries_in(info.inputs) == []
    assert not keys_of(json.loads(info.inputs)) & ANSWER_KEYS


# --------------------------------------------------------------------------- bad gold


def _without(key: str, *, question: int = 0) -> Callable[[dict[str, Any]], None]:
    return lambda gold: gold["questions"][question].pop(key)


BAD_GOLD: list[tuple[str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
    ("no story", _without("story", question=2), ("'rb-01-3'", "questions[2] has no 'story'")),
    ("no question text", _without("question", question=5), ("'rb-02-1'", "questions[5]", "'question'")),
    ("blank question", lambda g: g["questions"][1].update(question="  "), ("'rb-01-2'", "questions[1]")),
    ("no HumSent key", _without("answer_sentences", question=3),
     ("'rb-01-4'", "questions[3] has no 'answer_sentences'", "give []")),
    ("a key of stop words only", lambda g: g["questions"][4]["answers"].append("It was them."),
     ("'rb-01-5'", "questions[4]: answer key 'It was them.' has no content word")),
    ("an unknown marked sentence", lambda g: g["questions"][6].update(answer_sentences=[9]),
     ("'rb-02-2'", "answer sentence '9' is not a sentence of story 'rb-02'")),
    ("no answer key", lambda g: g["questions"][0].update(answers=[]), ("'rb-01-1'", "non-empty list of strings")),
    ("a repeated id", lambda g: g["questions"][8].update(id="rb-01-1"), ("'rb-01-1'", "more than once")),
    ("a blank sentence", lambda g: g["stories"][1]["sentences"][2].update(text=" "),
     ("'rb-02'", "stories[1].sentences[2] (id 3) is blank")),
    ("a story without sentences", lambda g: g["stories"].append({"id": "rb-03", "sentences": []}),
     ("'rb-03'", "stories[2] has no sentences")),
    ("an unknown story", lambda g: g["questions"][0].update(story="rb-99"), ("'rb-01-1'", "story 'rb-99' is not")),
]


@pytest.mark.parametrize(("case", "mutate", "fragments"), BAD_GOLD, ids=[case for case, _, _ in BAD_GOLD])
def test_bad_gold_is_refused_naming_the_file_and_the_question(
    case: str, mutate: Callable[[dict[str, Any]], None], fragments: tuple[str, ...]
) -> None:
    gold = demo()
    mutate(gold)
    error = rejected(lambda: SUITE.inspect_gold(encode(gold), filename="deepread-dev.json", self_check=NoOptions()),
                     "deepread-dev.json", *fragments)
    assert isinstance(error, InputFormatError)


def test_a_file_that_is_no_json_or_another_benchmarks_is_named_as_such() -> None:
    rejected(lambda: SUITE.inspect_gold(b'{"stories": [', filename="deepread-dev.json"),
             "deepread-dev.json", "invalid JSON")
    coqa = {"version": "1.0", "data": [{"id": "s1", "story": "Tom ran.", "questions": [], "answers": []}]}
    rejected(lambda: SUITE.inspect_gold(encode(coqa), filename="coqa-dev.json"),
             "coqa-dev.json", "this is a CoQA JSON file, not a Deep Read file", "metric_suite: coqa")


# --------------------------------------------------------------------------- scoring


def test_scores_are_the_scoring_librarys_and_the_starting_kits_command_gives_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = demo()
    path = write(tmp_path, gold, "dev.json")
    preds = weaker_answers(gold)
    result = SUITE.score(str(path), preds, NoOptions())
    data = deepread.load_deepread_data(path)
    library = deepread.evaluate_deepread(
        data, deepread.match_sentences(data, {q: deepread.Prediction(answer=a) for q, a in preds.items()}),
        sentence_metrics=True,
    ).metrics
    assert result.metrics == {"humsent": library["HumSent"], "autsent": library["AutSent"],
                              "precision": library["precision"], "recall": library["recall"]}
    # By hand: of 9 questions, rb-01-5 has no marked sentence, rb-01-1 and rb-02-1 pick wrong ones and
    # rb-02-2 picks none; rb-02-3, copied with other white space, is still sentence 3.
    assert result.metrics["humsent"] == pytest.approx(500 / 9)
    assert {r["id"]: r.get("sentence") for r in result.per_example}["rb-02-3"] == "3"
    assert all("key" not in r for r in result.per_example)

    (tmp_path / "out.json").write_text(json.dumps(preds), encoding="utf-8")
    (line,) = _score_lines("deepread", NoOptions(), str(path), str(tmp_path / "out.json"))
    code, out, _ = run_cli(line.split()[3:], capsys)  # after "python -m scoring"
    assert code == 0
    assert {k: out[k] for k in library if k in out} == {k: v for k, v in library.items() if k in out}
    assert out["HumSent"] == result.metrics["humsent"]


def test_gold_answers_for_a_reload_change_with_a_key_a_marked_sentence_or_a_sentence(tmp_path: Path) -> None:
    gold = demo()
    before = gold_answers("deepread", str(write(tmp_path, gold, "a.json")))
    assert set(before) == {q["id"] for q in gold["questions"]}
    changed = copy.deepcopy(gold)
    changed["questions"][0]["answers"] = ["Mara the keeper"]
    changed["questions"][5]["answer_sentences"] = [1, 4]
    changed["stories"][0]["sentences"][5]["text"] = "She keeps the basket still."
    after = gold_answers("deepread", str(write(tmp_path, changed, "b.json")))
    assert {q for q in before if before[q] != after[q]} == {"rb-01-1", "rb-01-2", "rb-01-3", "rb-01-4", "rb-01-5",
                                                            "rb-02-1"}


@pytest.mark.parametrize(
    ("predictions", "expected"),
    [
        (["rb-01-1"], "expected a JSON object {qid: sentence}, found a list"),
        ({"rb-01-1": {"sentence": "1"}}, "id 'rb-01-1': the answer should be the text of one of the story's "
                                         "sentences (a string), found an object"),
        ({"rb-01-1": None}, "found null"),
    ],
)
def test_predictions_that_are_not_sentence_texts_are_refused(predictions: Any, expected: str) -> None:
    with pytest.raises(InputFormatError) as caught:
        SUITE.check_predictions(predictions, where="preds.json")
    assert expected in str(caught.value) and "preds.json" in str(caught.value)


# --------------------------------------------------------------------------- end to end

SPEC = """
slug: deepread-demo
title: Deep Read demo
metric_suite: deepread
phases:
  - {slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}
datasets:
  - {slug: lighthouse, name: Lighthouse, split: II, files: {dev: lighthouse.json}}
  - {slug: garden, name: Garden, split: II, files: {dev: garden.json}}
"""


def load(tmp_path: Path) -> Challenge:
    gold = demo()
    write(tmp_path, story_portion(gold, "rb-01"), "lighthouse.json")
    write(tmp_path, story_portion(gold, "rb-02"), "garden.json")
    (tmp_path / "spec.yaml").write_text(SPEC, encoding="utf-8")
    return challenge_load(spec_path=tmp_path / "spec.yaml")


def submit(phase: Phase, team: Team, user: User, preds: dict[str, str]) -> Submission:
    by_dataset = {"lighthouse": {q: a for q, a in preds.items() if q.startswith("rb-01")},
                  "garden": {q: a for q, a in preds.items() if q.startswith("rb-02")}}
    submission = submission_create_predictions(team=team, phase=phase, user=user, upload=upload(by_dataset),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(submission.pk)  # what the worker does once the upload commits
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


@pytest.mark.django_db
def test_a_deep_read_challenge_loads_scores_uploads_and_ranks_on_humsent(tmp_path: Path) -> None:
    challenge = load(tmp_path)
    assert challenge.metric_suite == "deepread"
    stored = {f.dataset.slug: f for f in DatasetFile.objects.filter(dataset__challenge=challenge)}
    assert stored["lighthouse"].qids == [f"rb-01-{n}" for n in range(1, 6)] and stored["garden"].n_questions == 4
    for record in stored.values():
        with record.inputs.open("rb") as fh:
            inputs = json.loads(fh.read())
        assert not keys_of(inputs) & ANSWER_KEYS

    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    phase = Phase.objects.get(challenge=challenge, slug="dev")
    gold = demo()
    best = submit(phase, team_create(challenge=challenge, owner=alice, name="Alpha"), alice, marked_answers(gold))
    worse = submit(phase, team_create(challenge=challenge, owner=bob, name="Beta"), bob, weaker_answers(gold))

    def scores(submission: Submission) -> dict[tuple[str | None, str], float | None]:
        return {(s.dataset.slug if s.dataset else None, s.metric): s.value
                for s in Score.objects.filter(submission=submission).select_related("dataset")}

    top = scores(best)
    # The lighthouse's rb-01-5 has no marked sentence (0 for everyone, as in the paper); the garden is all right.
    assert top["lighthouse", "humsent"] == pytest.approx(80.0) and top["garden", "humsent"] == pytest.approx(100.0)
    # The board's HumSent is the macro average over datasets, not over questions (8 of 9).
    assert top[None, "humsent"] == pytest.approx(90.0) == best.primary_score
    for metric in ("autsent", "precision", "recall"):
        lighthouse, garden = top["lighthouse", metric], top["garden", metric]
        assert lighthouse is not None and garden is not None, metric
        assert top[None, metric] == pytest.approx((lighthouse + garden) / 2)
    low = scores(worse)
    assert low["garden", "humsent"] == pytest.approx(50.0) and low["lighthouse", "humsent"] == pytest.approx(60.0)
    assert worse.primary_score == pytest.approx(55.0)
    recall, humsent = low["garden", "recall"], low["garden", "humsent"]
    assert recall is not None and humsent is not None
    assert recall > humsent  # the key as an answer scores on P&R only

    board = board_build(phase=phase, viewer=alice)
    assert [(row.team_name, row.rank) for row in board.rows] == [("Alpha", 1), ("Beta", 2)]
    overall = [c.label for c in board.columns if c.group == "Overall"]
    assert overall == ["HumSent", "AutSent", "Precision", "Recall"]
    assert next(c for c in board.columns if c.is_primary).label == "HumSent"
    assert [c.label for c in board.columns if c.group == "Garden"] == ["HumSent", "AutSent", "Precision", "Recall"]
    assert board.rows[0].values["agg:humsent"] == pytest.approx(90.0)


@pytest.mark.django_db
def test_an_upload_missing_a_question_or_answering_with_an_id_is_refused(tmp_path: Path) -> None:
    challenge = load(tmp_path)
    alice = User.objects.create_user("alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    phase = Phase.objects.get(challenge=challenge, slug="dev")
    preds = marked_answers(demo())
    del preds["rb-02-3"]
    with pytest.raises(ServiceError, match="1 question") as caught:
        submit(phase, team, alice, preds)
    assert "'rb-02-3'" in str(caught.value)
    by_id: dict[str, Any] = {"garden": {q: {"sentence": 1} for q in ("rb-02-1", "rb-02-2", "rb-02-3", "rb-02-4")}}
    with pytest.raises(ServiceError, match="the text of one of the story's sentences"):
        submission_create_predictions(team=team, phase=phase, user=alice, upload=upload(by_id),
                                      limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)


# --------------------------------------------------------------------------- the baseline


def test_the_baseline_answers_with_whole_sentences_that_the_suite_matches(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("readerboard_baseline",
                                                  REPO / "deploy" / "images" / "baseline" / "baseline.py")
    assert spec is not None and spec.loader is not None
    baseline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(baseline)
    inputs = tmp_path / "inputs.json"
    inputs.write_bytes(SUITE.inspect_gold(DEMO.read_bytes(), filename="deepread-dev.json").inputs)
    preds = baseline.run_dataset(str(inputs), "deepread")
    gold = load_json(str(DEMO))
    texts = sentences(gold)
    assert set(preds) == {q["id"] for q in gold["questions"]}
    assert all(preds[q["id"]] in texts[q["story"]].values() for q in gold["questions"])
    result = SUITE.score(str(DEMO), preds, NoOptions())
    assert result.metrics["humsent"] is not None and result.metrics["humsent"] > 50.0
