"""Answers people accept become extra gold answers: a round on the cast's MRQA dev phase, answers
token matching rejected judged acceptable, the plan, the gold change through the one replace path
(rescored with history, the board's value up), idempotence, the untouched bytes, sealed data held,
and the F1 after equal to ``python -m scoring mrqa`` on the new gold."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from leaderboard.challenges.models import AuditEntry, Dataset, DatasetFile
from leaderboard.challenges.services import dataset_reveal
from leaderboard.core.errors import Conflict, NotFound
from leaderboard.judging.gold import gold_with_answers, round_gold_additions_apply, round_gold_additions_plan
from leaderboard.judging.models import Candidate, Judge, Round
from leaderboard.judging.services import (
    adjudication_record,
    judge_invite,
    judgment_give,
    round_close,
    round_create,
    round_open,
    round_publish,
)
from leaderboard.rankings.selectors import board_build
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import Score, ScoreHistory, Status, Submission
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.console import bundle, gold_outputs, outcome
from tests.builders.systems import system_phases

# XQuAD-en dev (100 questions): what Alpha answered where token matching falls short.
Q_POINTS = "56beb4343aeaaa14008c925b"  # '308'; "just 308 points": EM 0, F1 50; both judges accept
Q_STEELERS = "56beb7953aeaaa14008c92ab"  # 'Pittsburgh Steelers'; "the Steelers": F1 66.7; judges split, adjudicated yes
Q_ELEVEN = "56beb7953aeaaa14008c92ac"  # '11'; "Broncos": F1 0; both judges accept, adjudicated no
ALPHA_ANSWERS = {Q_POINTS: "just 308 points", Q_STEELERS: "the Steelers", Q_ELEVEN: "Broncos"}


@dataclass
class Judged:
    cast: Cast
    round: Round
    alpha: Submission
    charlie: Submission  # not in the round; gave the accepted answer to Q_POINTS too
    predictions: dict[str, dict[str, str]]


def _submit(cast: Cast, team: str, owner: str, preds: dict[str, dict[str, str]]) -> Submission:
    submission = submission_create_predictions(team=getattr(cast, team), phase=cast.dev, user=getattr(cast, owner),
                                               upload=upload(preds), limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    return submission


def _candidate(round: Round, qid: str) -> Candidate:
    return Candidate.objects.get(item__round=round, item__qid=qid)


@pytest.fixture
def judged(cast: Cast, django_capture_on_commit_callbacks) -> Judged:  # type: ignore[no-untyped-def]
    alpha_preds = gold_predictions("dev")
    alpha_preds["xquad-en"].update(ALPHA_ANSWERS)
    charlie_preds = gold_predictions("dev")
    charlie_preds["xquad-en"][Q_POINTS] = ALPHA_ANSWERS[Q_POINTS]
    with django_capture_on_commit_callbacks(execute=True):
        alpha = _submit(cast, "alpha", "alice", alpha_preds)
        charlie = _submit(cast, "charlies", "charlie", charlie_preds)
    for submission in (alpha, charlie):  # scored once the upload committed
        submission.refresh_from_db()
        assert submission.status == Status.FINISHED, submission.failure_reason
    dave = judge_invite(challenge=cast.challenge, user=cast.dave, by=cast.oscar)
    oscar = judge_invite(challenge=cast.challenge, user=cast.oscar, by=cast.oscar)
    round = round_open(round=round_create(phase=cast.dev, by=cast.oscar, questions=500, systems=[alpha.pk], seed=3,
                                          stratify_by="dataset"), by=cast.oscar)
    verdicts = {Q_POINTS: (True, True), Q_STEELERS: (True, False), Q_ELEVEN: (True, True)}
    for qid, (first, second) in verdicts.items():
        candidate = _candidate(round, qid)
        judgment_give(judge=dave, candidate=candidate, score=2, acceptable=first)
        judgment_give(judge=oscar, candidate=candidate, score=2, acceptable=second)
    # Two judges for the rest of a few questions, neither ticking: never added.
    for candidate in Candidate.objects.filter(item__round=round, item__dataset__slug="squad")[:3]:
        for judge in (dave, oscar):
            judgment_give(judge=judge, candidate=candidate, score=3, acceptable=False)
    round_close(round=round, by=cast.oscar)
    adjudication_record(candidate=_candidate(round, Q_STEELERS), by=cast.oscar, score=3, acceptable=True)
    adjudication_record(candidate=_candidate(round, Q_ELEVEN), by=cast.oscar, score=1, acceptable=False)
    return Judged(cast, round, alpha, charlie, alpha_preds)


def _published(j: Judged) -> Round:
    return round_publish(round=j.round, by=j.cast.oscar)


def _gold(cast: Cast, slug: str = "xquad-en", portion: str = "dev") -> DatasetFile:
    return DatasetFile.objects.get(dataset__challenge=cast.challenge, dataset__slug=slug, portion=portion)


def _f1(submission: Submission, slug: str = "xquad-en") -> float:
    value = Score.objects.get(submission=submission, dataset__slug=slug, metric="f1").value
    assert value is not None
    return value


def _apply(j: Judged, capture) -> None:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        round_gold_additions_apply(round=j.round, by=j.cast.oscar, reason="answers the judges accepted")


# --------------------------------------------------------------------------- the rule and the plan


def test_the_plan_adds_what_the_adjudication_or_every_judge_accepts(judged: Judged) -> None:
    plan = round_gold_additions_plan(round=judged.round, by=judged.cast.oscar)
    (xquad,) = plan.datasets
    # Q_STEELERS: split judges, adjudicated acceptable; Q_ELEVEN: both judges, adjudicated not.
    assert xquad.answers == {Q_POINTS: ("just 308 points",), Q_STEELERS: ("the Steelers",)}
    assert plan.accepted == 2 and plan.has_additions


def test_the_plan_lists_each_submission_whose_f1_rises_and_by_how_much(judged: Judged) -> None:
    plan = round_gold_additions_plan(round=judged.round, by=judged.cast.oscar)
    change = plan.datasets[0].change
    assert change is not None and change.rescored == 2 and change.diff is not None and change.diff.changed == 2
    by_id = {s.submission.pk: s for s in change.score_changes}
    # Of 100 questions: Q_POINTS from F1 50 to 100, Q_STEELERS from 66.7 to 100.
    assert by_id[judged.alpha.pk].delta("f1") == pytest.approx((50 + 100 / 3) / 100)
    assert by_id[judged.charlie.pk].delta("f1") == pytest.approx(50 / 100)
    assert by_id[judged.alpha.pk].delta("em") == pytest.approx(2.0)
    # The board's value, the macro F1 over dev's two datasets (SQuAD unchanged), rises by half as much.
    alpha = by_id[judged.alpha.pk]
    assert alpha.primary_after is not None and alpha.primary_before is not None
    assert alpha.primary_after - alpha.primary_before == pytest.approx((50 + 100 / 3) / 100 / 2)
    text = "\n".join(plan.lines())
    assert f'{Q_POINTS}: + "just 308 points"' in text
    assert f"submission {judged.alpha.pk} (Alpha): em " in text and "f1 " in text and "(+0.83)" in text
    assert f"submission {judged.charlie.pk} (Charlie's)" in text and "(+0.50)" in text
    # Writes nothing.
    assert not ScoreHistory.objects.exists() and _gold(judged.cast).sha256 == change.old_sha256


def test_only_an_organizer_plans_and_only_a_published_round_is_applied(judged: Judged) -> None:
    with pytest.raises(NotFound):
        round_gold_additions_plan(round=judged.round, by=judged.cast.alice)
    with pytest.raises(Conflict, match="once it is published"):
        round_gold_additions_apply(round=judged.round, by=judged.cast.oscar, reason="too early")


# --------------------------------------------------------------------------- applying


def test_applying_rescores_with_history_and_the_board_rises(judged: Judged, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    _published(judged)
    old = _gold(judged.cast)
    before_f1, before_primary = _f1(judged.alpha), judged.alpha.primary_score
    board_before = {r.submission_id: r.rank_value for r in board_build(phase=judged.cast.dev, viewer=judged.cast.alice).rows}
    _apply(judged, django_capture_on_commit_callbacks)
    new = _gold(judged.cast)
    assert new.sha256 != old.sha256 and new.qids == old.qids
    judged.alpha.refresh_from_db()
    assert _f1(judged.alpha) == pytest.approx(before_f1 + (50 + 100 / 3) / 100)
    (entry,) = ScoreHistory.objects.filter(submission=judged.alpha)
    assert {(s["dataset"], s["metric"]): s["value"] for s in entry.scores}[("xquad-en", "f1")] == before_f1
    assert entry.primary_score == before_primary
    assert ScoreHistory.objects.filter(submission=judged.charlie).count() == 1
    board_after = {r.submission_id: r.rank_value for r in board_build(phase=judged.cast.dev, viewer=judged.cast.alice).rows}
    rise = board_after[judged.alpha.pk] - board_before[judged.alpha.pk]  # type: ignore[operator]
    assert rise == pytest.approx((50 + 100 / 3) / 100 / 2)  # the macro F1 over SQuAD and XQuAD-en
    assert judged.alpha.primary_score == pytest.approx(board_after[judged.alpha.pk])
    (audit,) = AuditEntry.objects.filter(action="judging.gold_answers_add")
    assert audit.details["answers"] == {Q_POINTS: ["just 308 points"], Q_STEELERS: ["the Steelers"]}
    assert audit.reason == "answers the judges accepted" and audit.details["new_sha256"] == new.sha256


def test_applying_again_changes_nothing(judged: Judged, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    _published(judged)
    _apply(judged, django_capture_on_commit_callbacks)
    sha, histories = _gold(judged.cast).sha256, ScoreHistory.objects.count()
    plan = round_gold_additions_plan(round=judged.round, by=judged.cast.oscar)
    assert not plan.has_additions and plan.datasets[0].present == 2
    assert "nothing to add" in plan.lines()[0]
    _apply(judged, django_capture_on_commit_callbacks)
    assert _gold(judged.cast).sha256 == sha and ScoreHistory.objects.count() == histories
    assert AuditEntry.objects.filter(action="judging.gold_answers_add").count() == 1


def _lines(record: DatasetFile) -> list[bytes]:
    with record.gold.open("rb") as fh:
        return gzip.decompress(fh.read()).split(b"\n")


def test_the_gold_file_changes_only_by_the_added_answers(judged: Judged, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    _published(judged)
    before = _lines(_gold(judged.cast))
    _apply(judged, django_capture_on_commit_callbacks)
    after = _lines(_gold(judged.cast))
    assert len(after) == len(before)
    added = {Q_POINTS: "just 308 points", Q_STEELERS: "the Steelers"}
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(changed) == 2  # the two questions are in two contexts
    for i in changed:
        old, new = json.loads(before[i]), json.loads(after[i])
        for qa in old["qas"]:
            if qa["qid"] in added:
                qa["answers"].append(added[qa["qid"]])
        assert new == old
        assert after[i] == json.dumps(old, ensure_ascii=False).encode()


def test_gold_with_answers_is_byte_stable_and_keeps_a_line_layout() -> None:
    compact = json.dumps({"id": "c", "context": "é", "qas": [{"qid": "q", "answers": ["a"]}]},
                         separators=(",", ":"), ensure_ascii=True)
    content = b'{"header": {"dataset": "X"}}\n' + compact.encode() + b"\n"
    out = gold_with_answers(content, {"q": ["b"]})
    assert out.split(b"\n")[0] == b'{"header": {"dataset": "X"}}'
    assert out.split(b"\n")[1] == compact.replace('["a"]', '["a","b"]').encode()
    assert gold_with_answers(gzip.compress(content), {"q": ["b"]}) == gzip.compress(out, mtime=0)


def test_the_f1_after_is_the_scoring_command_on_the_new_gold(judged: Judged, django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
                                                             tmp_path: Path) -> None:
    _published(judged)
    _apply(judged, django_capture_on_commit_callbacks)
    predictions = tmp_path / "preds.json"
    predictions.write_text(json.dumps(judged.predictions["xquad-en"]))
    result = subprocess.run([sys.executable, "-m", "scoring", "mrqa", _gold(judged.cast).gold.path, str(predictions)],
                            capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["f1"] == pytest.approx(_f1(judged.alpha), abs=1e-9)
    assert json.loads(result.stdout)["exact_match"] == pytest.approx(
        Score.objects.get(submission=judged.alpha, dataset__slug="xquad-en", metric="em").value, abs=1e-9)


def test_the_command_prints_the_plan_and_applies_it(judged: Judged, django_capture_on_commit_callbacks, capsys) -> None:  # type: ignore[no-untyped-def]
    _published(judged)
    call_command("gold_answers_add", "demo", str(judged.round.pk), "--by", "oscar")
    out = capsys.readouterr().out
    assert "2 answer(s) to add" in out and "(+0.83)" in out and not ScoreHistory.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("gold_answers_add", "demo", str(judged.round.pk), "--by", "oscar", "--apply",
                     "--reason", "accepted by the judges")
    assert "applied: xquad-en (dev): 2 answer(s) added" in capsys.readouterr().out
    assert ScoreHistory.objects.filter(submission=judged.alpha).count() == 1


# --------------------------------------------------------------------------- sealed data


def test_a_sealed_datasets_answers_are_held_until_it_is_revealed(cast: Cast, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    system_phases(cast)
    with django_capture_on_commit_callbacks(execute=True):
        run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                       kind="code_bundle")
        claimed = submission_run_claim(run.pk, worker="systems@host-a:101")
        assert claimed is not None
        outputs = gold_outputs(claimed)
        coqa = json.loads(outputs["coqa"])
        first = next(iter(coqa))
        coqa[first] = "an answer nobody wrote down"
        outputs["coqa"] = json.dumps(coqa).encode()
        submission_run_finish(run.pk, attempt=claimed.attempt, outcome=outcome(outputs=outputs))
    run.refresh_from_db()
    assert run.status == Status.FINISHED, run.failure_reason
    judges = [judge_invite(challenge=cast.challenge, user=u, by=cast.oscar) for u in (cast.oscar, cast.root)]
    round = round_open(round=round_create(phase=cast.test, by=cast.oscar, questions=5000, systems=[run.pk], seed=2),
                       by=cast.oscar)
    candidate = Candidate.objects.get(item__round=round, answer="an answer nobody wrote down")
    for judge in judges:
        judgment_give(judge=Judge.objects.get(pk=judge.pk), candidate=candidate, score=3, acceptable=True)
    round_publish(round=round_close(round=round, by=cast.oscar), by=cast.oscar)
    sealed_gold = _gold(cast, "coqa", "test").sha256

    plan = round_gold_additions_plan(round=round, by=cast.oscar)
    (coqa_additions,) = plan.datasets
    assert coqa_additions.held and not plan.has_additions and coqa_additions.change is None
    assert "held: the dataset is sealed" in "\n".join(plan.lines())
    with django_capture_on_commit_callbacks(execute=True):
        round_gold_additions_apply(round=round, by=cast.oscar, reason="accepted")
    assert _gold(cast, "coqa", "test").sha256 == sealed_gold and not ScoreHistory.objects.exists()

    dataset_reveal(dataset=Dataset.objects.get(challenge=cast.challenge, slug="coqa"))
    round.refresh_from_db()
    plan = round_gold_additions_plan(round=round, by=cast.oscar)
    assert plan.has_additions and plan.datasets[0].answers == {candidate.item.qid: ("an answer nobody wrote down",)}
    with django_capture_on_commit_callbacks(execute=True):
        round_gold_additions_apply(round=round, by=cast.oscar, reason="accepted, now revealed")
    assert _gold(cast, "coqa", "test").sha256 != sealed_gold
    assert ScoreHistory.objects.filter(submission=run).count() == 1
