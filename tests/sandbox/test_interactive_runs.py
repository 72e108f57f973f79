"""Interactive runs through the platform (issue 11): a system answers turn by turn on a compute
worker, the gold comes from the trusted side turn by turn, and the run is scored per mode.

The whole path is real: the system is submitted through the API, a compute worker (no database, no
gold, its own mount namespace) claims it, runs one container per mode under runc, and posts every
answer to the internal API; the control worker scores the record with the suite's own scorer.

The system below is a "copycat": it answers each question with the last answer in its history.
That makes what reached it measurable from its scores alone: with the adversarial history (where
the current gold answer is planted as an earlier turn's) it scores 100; with the gold history it
scores the previous turn's gold; with its own history it only ever says CANNOTANSWER.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Phase
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites.quac import QuacOptions
from leaderboard.rankings.budget_boards import AXIS_OF, figure_text
from leaderboard.submissions.models import DialogAnswers, Score, Status
from scoring.dialogs import DialogGold, Mode, Session, quac_protocol_dialogs
from tests.builders.dialogs import conversational_challenge, conversational_phase, interactive_bundle
from tests.builders.suites import quac_gold
from tests.builders.systems import Platform

pytestmark = pytest.mark.django_db(transaction=True)

COPYCAT = r"""
import json, os, sys
mode = os.environ.get("READERBOARD_MODE", "")
manifest = json.load(open("/input/manifest.json"))
sys.stderr.write("MODE %s of %s\n" % (mode, ",".join(manifest["protocol"]["modes"])))
for line in sys.stdin:
    request = json.loads(line)
    sys.stderr.write("GOT " + line)
    sys.stderr.flush()
    history = request.get("history") or []
    answer = history[-1]["answer"] if history else "CANNOTANSWER"
    print(json.dumps({"id": request["id"], "answer": answer, "yesno": "x", "followup": "y"}), flush=True)
"""


def copycat(request: dict[str, Any]) -> dict[str, str]:
    history = request.get("history") or []
    return {"id": request["id"], "answer": history[-1]["answer"] if history else "CANNOTANSWER",
            "yesno": "x", "followup": "y"}


def expected_f1(mode: Mode, gold: dict[str, Any]) -> float:
    """The copycat's F1 in ``mode``, played in memory against the same gold and scored by the suite."""
    dialogs = quac_protocol_dialogs(gold)
    source = DialogGold(dialogs, mode)
    predictions: dict[str, Any] = {}
    for index, dialog in enumerate(dialogs):
        session = Session(dialog, mode, source, index)
        while (request := session.request()) is not None:
            predictions[request["id"]] = session.respond(copycat(request))
    path = Path(__file__).parent / ".expected-gold.json"
    try:
        path.write_text(json.dumps(gold))
        metrics = SUITES["quac"].score(str(path), predictions, QuacOptions()).metrics
    finally:
        path.unlink(missing_ok=True)
    assert metrics["f1"] is not None
    return float(metrics["f1"])


def system_zip(script: str) -> bytes:
    content: bytes = interactive_bundle(script).read()
    return content


def test_a_system_answers_each_mode_turn_by_turn_and_is_scored_per_mode_from_the_record(
    platform: Platform, tmp_path: Path
) -> None:
    modes = ["gold", "own", "adversarial", "single"]
    phase = conversational_phase(tmp_path, modes)
    team_create(challenge=phase.challenge, owner=platform.cast.alice, name="Talkers")
    response = platform.cast.client("alice").post(
        f"/api/v1/challenges/{phase.challenge.slug}/systems/",
        {"phase": phase.slug, "kind": "code_bundle", "file": SimpleUploadedFile("system.zip", system_zip(COPYCAT))},
    )
    assert response.status_code == 201, response.content
    submission = platform.wait_final(int(response.json()["id"]), timeout=180)
    assert submission.status == Status.FINISHED, (submission.failure_reason, platform.logs())

    scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__isnull=True)}
    gold = quac_gold()
    # The first mode's F1 is the ranking F1 (no second name for it); the others have their own.
    assert "gold_f1" not in scores and submission.primary_score == pytest.approx(scores["f1"])
    for mode in Mode:
        assert scores["f1" if mode == Mode.GOLD else f"{mode}_f1"] == pytest.approx(expected_f1(mode, gold)), mode
    assert scores["adversarial_f1"] == pytest.approx(100.0)
    f1, own_f1 = scores["f1"], scores["own_f1"]
    assert f1 is not None and own_f1 is not None
    assert scores["gold_own_drop"] == pytest.approx(f1 - own_f1)
    assert {"turn_1_f1", "turn_2_f1", "turn_3_f1", "latency_p50_ms", "latency_p95_ms", "questions_per_s"} <= set(scores)
    # The first turn of every dialog has no history: the copycat says CANNOTANSWER, wrong for both.
    assert scores["turn_1_f1"] == 0.0

    # Every turn of every mode on record, in order, with the latency the worker measured.
    rows = DialogAnswers.objects.filter(submission=submission, attempt=submission.attempts)
    assert sorted((r.mode, r.dialog, len(r.answers)) for r in rows) == sorted(
        (m, d, n) for m in modes for d, n in enumerate((4, 3)))
    assert all(ms is not None and ms > 0 for r in rows for ms in r.latencies_ms)

    # What reached the system, from its own log: in the gold mode, request k's history holds the
    # gold answers of turns 1..k-1, each only after the system answered it.
    submission.refresh_from_db()
    gold_log = submission.log.split("== own history ==")[0]
    assert "MODE gold of gold,own,adversarial,single" in gold_log
    assert "MODE single of" in submission.log.split("== single question ==")[1]
    received = [json.loads(line[4:]) for line in gold_log.splitlines() if line.startswith("GOT ")]
    dialogs = quac_protocol_dialogs(gold)
    assert [r["id"] for r in received] == [t.qid for d in dialogs for t in d.turns]
    for request in received:
        dialog = next(d for d in dialogs if d.dialog_id == request["dialog"])
        k = request["turn"] - 1
        assert [h["answer"] for h in request["history"]] == [t.answers[0] for t in dialog.turns[:k]]
    notes = [note["text"] for note in submission.log_notes]
    assert notes[0].startswith("gold history: 7 of 7 turns answered; latency p50") and len(notes) == 4, notes
    assert notes[3].startswith("single question: 7 of 7 turns answered"), notes
    assert submission.peak_memory_mb is not None and submission.peak_memory_mb > 0

    # The public board: every mode's F1, the drop, the speed, and F1 by turn position, as stored.

    board = Client().get(f"/c/{phase.challenge.slug}/board/{phase.slug}/export.json").json()
    assert board["ranked_by"] == "f1" and board["ranking"].startswith("F1 (gold history)")
    [row] = board["rows"]
    assert row["F1 (gold history)"] == pytest.approx(scores["f1"])
    assert row["F1 (own history)"] == pytest.approx(scores["own_f1"])
    assert row["F1 (adversarial history)"] == pytest.approx(100.0)
    assert row["F1 (single question)"] == pytest.approx(scores["single_f1"])
    assert row["Drop gold \u2192 own history"] == pytest.approx(scores["gold_own_drop"])
    assert row["ms/question p95"] == pytest.approx(scores["latency_p95_ms"])
    assert row["Peak MiB"] == submission.peak_memory_mb
    assert row["F1 by turn (gold history) Turn 1"] == 0.0
    assert row["F1 by turn (gold history) Turn 2"] == pytest.approx(scores["turn_2_f1"])

    # Its budget page: the p95 latency per question the board shows is the figure a track limits.
    Phase.objects.filter(pk=phase.pk).update(budget_tracks=[{"name": "Instant", "latency_p95_ms": 0}])
    budgets = Client().get(f"/c/{phase.challenge.slug}/board/{phase.slug}/budgets/").content.decode()
    p95 = figure_text(AXIS_OF["latency_p95_ms"], scores["latency_p95_ms"])
    assert f"p95 latency {p95}" in budgets and "over budget" in budgets, budgets
    assert 'id="chart-latency_p95_ms"' in budgets


# Answers two turns, then stops reading; or answers the first with something that is not JSON.
QUITTER = r"""
import json, sys
for n, line in enumerate(sys.stdin):
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "answer": "CANNOTANSWER"}), flush=True)
    if n == 1:
        sys.exit(0)
"""


def test_a_system_that_stops_early_keeps_what_it_answered_and_gets_the_verdict_as_a_note(
    platform: Platform, tmp_path: Path
) -> None:
    phase = conversational_phase(tmp_path, ["gold", "own"])
    team_create(challenge=phase.challenge, owner=platform.cast.alice, name="Talkers")
    response = platform.cast.client("alice").post(
        f"/api/v1/challenges/{phase.challenge.slug}/systems/",
        {"phase": phase.slug, "kind": "code_bundle", "file": SimpleUploadedFile("system.zip", system_zip(QUITTER))},
    )
    submission = platform.wait_final(int(response.json()["id"]), timeout=180)
    assert submission.status == Status.FINISHED, (submission.failure_reason, platform.logs())
    rows = DialogAnswers.objects.filter(submission=submission)
    assert sorted((r.mode, r.dialog, len(r.answers)) for r in rows) == [("gold", 0, 2), ("own", 0, 2)]
    notes = [note["text"] for note in submission.log_notes]
    assert notes == [f"{mode} history: 2 of 7 turns answered; latency p50 {notes[i].split('p50 ')[1]}"
                     for i, mode in enumerate(("gold", "own"))], notes
    assert all("ended: closed: it closed its stdout (or exited) after 2 answers" in n for n in notes)
    # Two CANNOTANSWER answers to dialog 0's answerable turns 1-2; the rest unanswered: every F1 is 0.
    scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__isnull=True)}
    assert scores["f1"] == scores["own_f1"] == 0.0


# Answers from the passage and the question alone, in batch (files) or turn by turn (stdin), as the
# platform asks: the sentence sharing the most words of four letters or more with the question.
DUAL = r"""
import json, os, re, sys
WORD = re.compile(r"\w+")

def answer(passage, question):
    asked = {w for w in WORD.findall(question.lower()) if len(w) > 3}
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", passage) if s.strip()]
    best = max(sentences, key=lambda s: len(asked & set(WORD.findall(s.lower()))), default="")
    shared = asked & set(WORD.findall(best.lower()))
    return {"answer": best if shared else "CANNOTANSWER", "yesno": "x", "followup": "y"}

if os.environ.get("READERBOARD_PROTOCOL") == "interactive":
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps({"id": request["id"], **answer(request["passage"], request["question"])}), flush=True)
else:
    manifest = json.load(open("/input/manifest.json"))
    for dataset in manifest["datasets"]:
        document = json.load(open("/input/" + dataset["input"]))
        out = {qa["id"]: answer(par["context"], qa["question"])
               for article in document["data"] for par in article["paragraphs"] for qa in par["qas"]}
        json.dump(out, open("/output/" + dataset["output"], "w"))
"""


def test_the_same_system_scores_the_same_in_a_batch_run_and_one_question_at_a_time(
    platform: Platform, tmp_path: Path
) -> None:
    challenge = conversational_challenge(tmp_path, {"batch": None, "single": ["single"]})
    team_create(challenge=challenge, owner=platform.cast.alice, name="Talkers")
    client = platform.cast.client("alice")
    finished = {}
    for phase in ("batch", "single"):
        response = client.post(f"/api/v1/challenges/{challenge.slug}/systems/", {
            "phase": phase, "kind": "code_bundle", "file": SimpleUploadedFile("system.zip", system_zip(DUAL))})
        assert response.status_code == 201, response.content
        finished[phase] = platform.wait_final(int(response.json()["id"]), timeout=180)
        assert finished[phase].status == Status.FINISHED, (finished[phase].failure_reason, platform.logs())

    def scores(phase: str) -> dict[tuple[str | None, str], float | None]:
        return {(s.dataset.slug if s.dataset else None, s.metric): s.value
                for s in Score.objects.filter(submission=finished[phase]).select_related("dataset")}

    batch, single = scores("batch"), scores("single")
    # Every metric the batch run has, the single-question run has with the same value (it has more:
    # its mode's F1, its speed, F1 by turn position).
    assert batch and {key: single[key] for key in batch} == batch
    batch_f1 = batch[(None, "f1")]
    assert batch_f1 is not None and single[(None, "f1")] == batch_f1 > 0 and (None, "single_f1") not in single
    assert DialogAnswers.objects.filter(submission=finished["batch"]).count() == 0


DUAL_MRQA = r"""
import gzip, json, os, re, sys
WORD = re.compile(r"\w+")

def answer(passage, question):
    asked = {w for w in WORD.findall(question.lower()) if len(w) > 3}
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", passage) if s.strip()]
    best = max(sentences, key=lambda s: len(asked & set(WORD.findall(s.lower()))), default="")
    return " ".join(best.split()[:6])

if os.environ.get("READERBOARD_PROTOCOL") == "interactive":
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps({"id": request["id"], "answer": answer(request["passage"], request["question"])}), flush=True)
else:
    manifest = json.load(open("/input/manifest.json"))
    for dataset in manifest["datasets"]:
        out = {}
        for line in gzip.open("/input/" + dataset["input"], "rt"):
            record = json.loads(line)
            for qa in record.get("qas", []):
                out[qa["qid"]] = answer(record["context"], qa["question"])
        json.dump(out, open("/output/" + dataset["output"], "w"))
"""


def test_mrqa_questions_one_per_request_score_as_the_same_system_in_batch_sealed_dataset_included(
    platform: Platform,
) -> None:
    """MRQA 2019's prediction-server protocol: the test phase asks each question alone; a batch
    phase over the same portion takes the same system's files.  The portion has a sealed Split III
    dataset, whose ids the system reads re-keyed: the trusted side finds each answer's question by
    its position, and the scores agree with the batch run's (mapped back from the re-keyed ids)."""
    cast = platform.cast
    Phase.objects.filter(pk=cast.test.pk).update(protocol_modes=["single"])
    Phase.objects.create(challenge=cast.challenge, slug="batch", name="Batch", kind="test", portion="test",
                         opens_at=cast.test.opens_at, closes_at=cast.test.closes_at,
                         allowed_kinds=["docker_image", "code_bundle"], order=9)
    finished = {}
    for phase in ("batch", "test"):
        finished[phase] = platform.wait_final(platform.submit(system_zip(DUAL_MRQA), phase=phase), timeout=240)
        assert finished[phase].status == Status.FINISHED, (finished[phase].failure_reason, platform.logs())

    def scores(phase: str) -> dict[tuple[str | None, str], float | None]:
        return {(s.dataset.slug if s.dataset else None, s.metric): s.value
                for s in Score.objects.filter(submission=finished[phase]).select_related("dataset")}

    batch, single = scores("batch"), scores("test")
    assert ("coqa", "f1") in batch  # the sealed dataset was answered and scored
    assert batch and {key: single[key] for key in batch} == batch
    macro_f1 = batch[(None, "macro_f1")]
    assert macro_f1 is not None and macro_f1 > 0 and (None, "single_f1") not in single
    assert single[(None, "latency_p50_ms")] is not None and (None, "turn_1_f1") not in single
