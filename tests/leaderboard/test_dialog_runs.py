"""The trusted side of the interactive protocol (issue 11): the internal API's dialogs endpoint.

A compute worker posts each answer of a dialog, in order, and gets back only what the phase's mode
reveals of the gold; every answer is on record before its turn's gold leaves the trusted side.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import F
from django.test import Client
from django.utils import timezone

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Dataset
from leaderboard.challenges.services import dataset_file_put
from leaderboard.sandbox.archives import ArchiveError, ImageArchive, image_protocol
from leaderboard.submissions.dialog_runs import run_gold_dialogs
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.models import DialogAnswers, Submission
from leaderboard.submissions.rescore import rescore_problem
from leaderboard.submissions.uploads import UploadError
from leaderboard.submissions.worker_api import worker_token_create
from scoring.dialogs import best_reachable, quac_protocol_dialogs
from tests.builders.dialogs import (
    answer,
    conversational_challenge,
    conversational_phase,
    interactive_bundle,
    post,
)
from tests.builders.shared import shared_path
from tests.builders.suites import quac_gold

pytestmark = pytest.mark.django_db


def test_each_mode_reveals_a_turns_gold_only_in_the_reply_to_its_answer(dialog_run: tuple[Client, str, Submission]) -> None:
    client, url, submission = dialog_run
    gold = quac_protocol_dialogs(quac_gold())[0]
    shown = [t.answers[0] for t in gold.turns]
    for mode in ("gold", "own", "adversarial"):
        opened = post(client, url, mode=mode, dataset=0, dialog=0, turn=None).json()
        assert opened == {"answered": None, "upcoming": shown[0] if mode == "adversarial" else None}
        for k in range(len(shown)):
            reply = post(client, url, mode=mode, dataset=0, dialog=0, turn=k, answer=answer(f"a{k}"),
                         latency_ms=1.5).json()
            expected_upcoming = shown[k + 1] if mode == "adversarial" and k + 1 < len(shown) else None
            assert reply == {"answered": None if mode == "own" else shown[k], "upcoming": expected_upcoming}
    rows = DialogAnswers.objects.filter(submission=submission, dialog=0)
    assert {r.mode: [a["answer"] for a in r.answers] for r in rows} == {
        m: [f"a{k}" for k in range(len(shown))] for m in ("gold", "own", "adversarial")}
    assert all(r.latencies_ms == [1.5] * len(shown) for r in rows)


def test_turns_are_taken_in_order_and_an_answer_on_record_cannot_change(dialog_run: tuple[Client, str, Submission]) -> None:
    client, url, _ = dialog_run
    ahead = post(client, url, mode="gold", dataset=0, dialog=1, turn=1, answer=answer("early"))
    assert ahead.status_code == 409 and ahead.json()["detail"] == "turn 2 of dialog 1 before turn 1"
    first = post(client, url, mode="gold", dataset=0, dialog=1, turn=0, answer=answer("mine"))
    assert first.status_code == 200
    # A retry of the same call (its reply was lost) gets the same reply; another answer is refused.
    assert post(client, url, mode="gold", dataset=0, dialog=1, turn=0, answer=answer("mine")).json() == first.json()
    changed = post(client, url, mode="gold", dataset=0, dialog=1, turn=0, answer=answer("the gold, now I know it"))
    assert changed.status_code == 409 and "answered already, differently" in changed.json()["detail"]
    assert DialogAnswers.objects.get(dialog=1).answers == [answer("mine")]


@pytest.mark.parametrize(("body", "status", "detail"), [
    ({"mode": "single", "dataset": 0, "dialog": 0, "turn": 0, "answer": answer("x")}, 409,
     "this run plays the modes gold, own, adversarial"),
    ({"mode": "gold", "dataset": 1, "dialog": 0, "turn": 0, "answer": answer("x")}, 409,
     "the run has 1 dataset(s); there is no dataset 1"),
    ({"mode": "gold", "dataset": 0, "dialog": 2, "turn": 0, "answer": answer("x")}, 409,
     "dataset 0 has 2 dialogs; there is no dialog 2"),
    ({"mode": "gold", "dataset": 0, "dialog": 1, "turn": 3, "answer": answer("x")}, 409,
     "dialog 1 has 3 turns; there is no turn 4"),
    ({"mode": "gold", "dataset": 0, "dialog": 0, "turn": 0, "answer": {"answer": "x", "yesno": "maybe"}}, 409,
     "'yesno' must be one of n, x, y"),
    ({"mode": "gold", "dataset": 0, "dialog": 0, "turn": 0, "answer": answer("x" * 4001)}, 409,
     "an answer is at most 4000 characters"),
    ({"mode": "gold", "dataset": "0", "dialog": 0, "turn": 0}, 400, "expected {mode, dataset, dialog"),
    ({"mode": "gold", "dataset": 0, "dialog": 0, "turn": "1"}, 400, "'turn' is a turn's position"),
])
def test_a_turn_the_run_cannot_take_is_refused_with_its_reason(dialog_run: tuple[Client, str, Submission],
                                                              body: dict[str, Any], status: int, detail: str) -> None:
    client, url, _ = dialog_run
    response = post(client, url, **body)
    assert response.status_code == status and detail in response.json()["detail"], response.json()
    assert not DialogAnswers.objects.exists()


def test_only_the_runs_worker_may_play_its_dialogs(dialog_run: tuple[Client, str, Submission]) -> None:
    _, url, _ = dialog_run
    other = Client(HTTP_AUTHORIZATION=f"Bearer {worker_token_create(name='host-b')}")
    assert post(other, url, mode="gold", dataset=0, dialog=0, turn=0, answer=answer("x")).status_code == 404
    assert post(Client(), url, mode="gold", dataset=0, dialog=0, turn=0, answer=answer("x")).status_code == 401
    assert not DialogAnswers.objects.exists()


def test_an_interactive_run_is_not_rescored_from_its_answers(dialog_run: tuple[Client, str, Submission]) -> None:
    _, _, submission = dialog_run
    assert "with the old gold as its history; run the system again" in rescore_problem(submission)


@pytest.mark.parametrize(("declaration", "message"), [
    (None, 'this system does not declare that it speaks it: add a readerboard.json with {"protocol": "interactive"}'),
    ('{"protocol": "batch"}', "does not declare that it speaks it"),
    ('{"protocol": "chat"}', 'readerboard.json: "protocol" must be one of batch, interactive'),
    ("protocol = interactive", 'readerboard.json is not JSON; write {"protocol": "interactive"}'),
])
def test_a_phase_in_the_protocol_refuses_a_system_that_does_not_declare_it(
    tmp_path: Path, declaration: str | None, message: str
) -> None:
    phase = conversational_phase(tmp_path, ["own"])
    user = User.objects.create_user("alice")
    team = team_create(challenge=phase.challenge, owner=user, name="Alpha")
    with pytest.raises(UploadError) as caught:
        submission_create_system(team=team, phase=phase, user=user, upload=interactive_bundle(declaration=declaration),
                                 kind="code_bundle")
    assert message in str(caught.value) and str(caught.value).startswith("system.zip: ")
    assert not Submission.objects.exists()


def test_an_image_declares_the_protocol_with_its_label() -> None:
    def image(labels: object) -> ImageArchive:
        return ImageArchive(image_id="sha256:x", config={"config": {"Labels": labels}}, uncompressed_bytes=0)

    assert image_protocol(image({"org.readerboard.protocol": "interactive"})) == "interactive"
    assert image_protocol(image(None)) == image_protocol(image({"other": "x"})) == "batch"
    with pytest.raises(ArchiveError, match="org.readerboard.protocol='chat' is not one of batch, interactive"):
        image_protocol(image({"org.readerboard.protocol": "chat"}))


def test_organizers_see_the_best_reachable_f1_of_a_quac_phase_and_the_public_does_not(tmp_path: Path) -> None:
    # The whole QuAC excerpt the demo's dev and test dialogs are cut from (41 questions).
    demo = json.loads(shared_path("data", "quac-excerpt", "val_v0.2.json").read_text())
    challenge = conversational_challenge(tmp_path, {"gold": ["gold", "own"]}, gold=demo)
    figures = best_reachable(demo)
    assert round(figures["best_f1"], 1) == 95.3 and round(figures["best_filtered_f1"], 1) == 88.3
    organizer = Client()
    organizer.force_login(User.objects.create_superuser("root"))
    page = organizer.get(f"/c/{challenge.slug}/board/gold/organizer/").content.decode()
    assert ("QuAC: F1 95.3 with a gold answer as the prediction, 88.3 once the tokens of the previous six answers "
            "are filtered out") in page
    assert 'id="best-reachable"' not in Client().get(f"/c/{challenge.slug}/board/gold/").content.decode()


def test_a_dialogs_answers_may_come_in_one_call_and_follow_the_same_rules(dialog_run: tuple[Client, str, Submission]) -> None:
    """What a worker sends in the modes that reveal nothing: a dialog's answers at once."""
    client, url, _ = dialog_run
    four = [answer(f"a{k}") for k in range(4)]
    first = post(client, url, mode="own", dataset=0, dialog=0, turn=0, answers=four[:2], latencies_ms=[1.0, 2.0])
    assert first.status_code == 200 and first.json() == {"answered": None, "upcoming": None}
    # Again (a lost reply), and on from there with one overlapping turn: taken, nothing doubled.
    assert post(client, url, mode="own", dataset=0, dialog=0, turn=0, answers=four[:2],
                latencies_ms=[1.0, 2.0]).status_code == 200
    assert post(client, url, mode="own", dataset=0, dialog=0, turn=1, answers=four[1:],
                latencies_ms=[2.0, 3.0, 4.0]).status_code == 200
    row = DialogAnswers.objects.get(mode="own", dialog=0)
    assert row.answers == four and row.latencies_ms == [1.0, 2.0, 3.0, 4.0]
    changed = post(client, url, mode="own", dataset=0, dialog=0, turn=2, answers=[answer("other"), four[3]],
                   latencies_ms=[1.0, 1.0])
    assert changed.status_code == 409 and "turn 3 of dialog 0 was answered already, differently" in changed.json()["detail"]
    # Past the dialog's end, or without a latency per answer: refused, nothing stored.
    assert post(client, url, mode="own", dataset=0, dialog=1, turn=0, answers=[answer("x")] * 4,
                latencies_ms=[1.0] * 4).json()["detail"] == "dialog 1 has 3 turns; there is no turn 4"
    assert post(client, url, mode="own", dataset=0, dialog=1, turn=0, answers=[answer("x")],
                latencies_ms=[]).json()["detail"] == "expected one or more answers, each with its latency"
    assert not DialogAnswers.objects.filter(dialog=1).exists()


def test_the_usual_turn_keeps_every_rule_of_the_checked_one(dialog_run: tuple[Client, str, Submission]) -> None:
    """Once a run's attempt is known, its next turns take one statement; retries, refusals and other
    workers' tokens are answered as on the first call."""
    client, url, _ = dialog_run
    shown = [t.answers[0] for t in quac_protocol_dialogs(quac_gold())[1].turns]
    replies = [post(client, url, mode="gold", dataset=0, dialog=1, turn=k, answer=answer(f"a{k}"), latency_ms=2)
               for k in range(2)]
    assert [r.json() for r in replies] == [{"answered": shown[k], "upcoming": None} for k in range(2)]
    again = post(client, url, mode="gold", dataset=0, dialog=1, turn=1, answer=answer("a1"), latency_ms=2)
    assert again.status_code == 200 and again.json() == replies[1].json()
    changed = post(client, url, mode="gold", dataset=0, dialog=1, turn=1, answer=answer("now I know"))
    assert changed.status_code == 409 and "answered already, differently" in changed.json()["detail"]
    ahead = post(client, url, mode="gold", dataset=0, dialog=0, turn=1, answer=answer("early"))
    assert ahead.status_code == 409 and ahead.json()["detail"] == "turn 2 of dialog 0 before turn 1"
    other = Client(HTTP_AUTHORIZATION=f"Bearer {worker_token_create(name='host-b')}")
    assert post(other, url, mode="gold", dataset=0, dialog=1, turn=2, answer=answer("x")).status_code == 404
    assert post(other, url, mode="adversarial", dataset=0, dialog=1, turn=None).status_code == 404
    assert post(Client(), url, mode="gold", dataset=0, dialog=1, turn=2, answer=answer("x")).status_code == 401
    row = DialogAnswers.objects.get(mode="gold", dialog=1)
    assert row.answers == [answer("a0"), answer("a1")] and row.latencies_ms == [2.0, 2.0]
    assert list(DialogAnswers.objects.values_list("dialog", flat=True)) == [1]


def test_an_attempt_after_the_gold_changed_reads_the_new_gold(dialog_run: tuple[Client, str, Submission]) -> None:
    client, url, submission = dialog_run
    gold = quac_gold()
    first = post(client, url, mode="gold", dataset=0, dialog=0, turn=0, answer=answer("a")).json()
    assert first["answered"] == quac_protocol_dialogs(gold)[0].turns[0].answers[0]
    swapped = {"data": gold["data"][::-1]}
    dataset_file_put(dataset=Dataset.objects.get(slug="quac"), portion="test", content=json.dumps(swapped).encode(),
                     filename="val_v0.2.json")
    # The run goes round again (as the finish sends it) and its next attempt begins.
    Submission.objects.filter(pk=submission.pk).update(attempts=F("attempts") + 1, started_at=timezone.now())
    again = Submission.objects.select_related("phase__challenge").get(pk=submission.pk)
    assert run_gold_dialogs(submission=again, dataset=0).dialogs[0].turns[0].answers[0] == \
        quac_protocol_dialogs(swapped)[0].turns[0].answers[0] != first["answered"]
