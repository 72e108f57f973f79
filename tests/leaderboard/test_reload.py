"""Reloading a challenge reconciles it, and scores follow the gold (issue 16, section 3).

A challenge is loaded from a spec whose gold files live in the test's own folder, scored by a
prediction file (dev) and a system run (test, outputs given as a worker would hand them over);
then the spec is reloaded with XQuAD-en's dev and test gold changed (answers changed, a question
removed, one added) and SQuAD removed.  Celery is eager (``CELERY_TASK_ALWAYS_EAGER``), so the
background rescoring runs right after the load's commit: the tests are transactional.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models.fields.files import FieldFile
from django.test import Client
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge, Dataset, DatasetFile, Phase, RetiredGold
from leaderboard.challenges.spec import SpecError
from leaderboard.rankings.selectors import board_build
from leaderboard.sandbox.contract import RunOutcome
from leaderboard.submissions import rescore
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import Score, ScoreHistory, Status, Submission, Verdict
from leaderboard.submissions.reload import challenge_load, dataset_gold_replace
from leaderboard.submissions.rescore import Rescored, submission_rescore
from leaderboard.submissions.scores import score_dataset
from leaderboard.submissions.storage import run_answers_name, storage_report
from scoring import mrqa
from tests.builders.cast import DEMO_DATA

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = """
slug: reload
title: Reload
metric_suite: mrqa
staff: [oscar]
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z, closes_at: 2099-01-01T00:00:00Z,
     allowed_kinds: [predictions]}}
  - {{slug: test, name: Test, kind: test, portion: test, opens_at: 2020-01-01T00:00:00Z,
     closes_at: {test_closes}, allowed_kinds: [code_bundle]}}
datasets:
{squad}  - {{slug: xquad-en, name: XQuAD-en, split: II, files: {{dev: data/xquad-dev.jsonl.gz, test: data/xquad-test.jsonl.gz}}}}
  - {{slug: coqa, name: CoQA, split: III, sealed_alias: Hidden-07, files: {{test: data/coqa-test.jsonl.gz}}}}
"""
SQUAD = "  - {slug: squad, name: SQuAD, split: I, files: {dev: data/squad-dev.jsonl.gz}}\n"
FILES = {"squad-dev": "SQuAD.dev", "xquad-dev": "XQuAD-en.dev", "xquad-test": "XQuAD-en.test", "coqa-test": "CoQA.test"}


def read_lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def write_lines(path: Path, objs: list[dict]) -> None:
    path.write_bytes(gzip.compress("".join(json.dumps(o) + "\n" for o in objs).encode(), mtime=0))


def answers_of(path: Path) -> dict[str, list[str]]:
    return {q["qid"]: q["answers"] for o in read_lines(path)[1:] for q in o["qas"]}


def change_gold(path: Path) -> None:
    """Three questions' answers changed (to another question's span of the same context), the
    last question removed, one added (a copy of the first under a new id)."""
    objs = read_lines(path)
    contexts = objs[1:]
    changed = 0
    for context in contexts:
        qas = context["qas"]
        if changed < 3 and len(qas) >= 2 and qas[0]["answers"] != qas[1]["answers"]:
            qas[0]["answers"] = list(qas[1]["answers"])
            qas[0]["detected_answers"] = copy.deepcopy(qas[1]["detected_answers"])
            changed += 1
    assert changed == 3
    contexts[-1]["qas"].pop()
    added = copy.deepcopy(contexts[0]["qas"][0])
    added["qid"] = "added-question-1"
    contexts[0]["qas"].append(added)
    write_lines(path, objs)


@dataclass
class Loaded:
    spec: Path
    data: Path
    challenge: Challenge
    dev: Phase
    test: Phase
    alpha: Team
    alice: User
    oscar: User

    def write_spec(self, *, squad: bool = True, test_closes: str = "2099-01-01T00:00:00Z") -> Path:
        self.spec.write_text(SPEC.format(squad=SQUAD if squad else "", test_closes=test_closes))
        return self.spec


def bundle() -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run.py", "print('hi')\n")
    return SimpleUploadedFile("system.zip", buffer.getvalue())


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[Loaded]:
    data = tmp_path / "data"
    data.mkdir()
    for name, demo in FILES.items():
        shutil.copy(DEMO_DATA / "mrqa" / f"{demo}.jsonl.gz", data / f"{name}.jsonl.gz")
    oscar = User.objects.create_user("oscar", password="oscar-pw")
    alice = User.objects.create_user("alice", password="alice-pw")
    spec = tmp_path / "reload.yaml"
    spec.write_text(SPEC.format(squad=SQUAD, test_closes="2099-01-01T00:00:00Z"))
    challenge = challenge_load(spec_path=spec)
    alpha = team_create(challenge=challenge, owner=alice, name="Alpha")
    yield Loaded(spec, data, challenge, challenge.phases.get(slug="dev"), challenge.phases.get(slug="test"),
                 alpha, alice, oscar)


def predictions_submit(loaded: Loaded) -> Submission:
    """Dev: every original gold answer (so 100 before the change)."""
    preds = {slug: {qid: answers[0] for qid, answers in answers_of(loaded.data / f"{name}.jsonl.gz").items()}
             for slug, name in (("squad", "squad-dev"), ("xquad-en", "xquad-dev"))}
    upload = SimpleUploadedFile("preds.json", json.dumps(preds).encode(), content_type="application/json")
    submission = submission_create_predictions(team=loaded.alpha, phase=loaded.dev, user=loaded.alice, upload=upload,
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def system_run(loaded: Loaded) -> Submission:
    """Test: a system run whose outputs are the original gold answers, under the ids it read."""
    submission = submission_create_system(team=loaded.alpha, phase=loaded.test, user=loaded.alice, upload=bundle(),
                                          kind="code_bundle")
    plan = submission_run_claim(submission.pk, worker="host:1")
    assert plan is not None
    gold = {"xquad-en": answers_of(loaded.data / "xquad-test.jsonl.gz"),
            "coqa": answers_of(loaded.data / "coqa-test.jsonl.gz")}
    outputs = {
        ds.slug: json.dumps({seen: gold[ds.slug][qid][0] for seen, qid in ds.qids_for_system(list(gold[ds.slug])).items()})
        .encode()
        for ds in plan.datasets
    }
    submission_run_finish(submission.pk, attempt=plan.attempt, outcome=RunOutcome(
        exit_code=0, timed_out=False, oom_killed=False, output_too_large=False, duration_s=1.0, logs="",
        runtime="runc", outputs=outputs))
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def expected_f1(gold_path: Path, predictions: dict[str, str]) -> float:
    """What the MRQA script gives, computed apart from the platform."""
    f1: float = mrqa.evaluate_mrqa(mrqa.load_mrqa_gold(str(gold_path)), predictions).metrics["f1"]
    return f1


def name_of(file: FieldFile) -> str:
    """A stored file's name: every file field these tests read holds one."""
    assert file.name, file
    return file.name


def score(submission: Submission, dataset: str | None, metric: str) -> Score:
    if dataset is None:
        return Score.objects.get(submission=submission, dataset__isnull=True, metric=metric)
    return Score.objects.get(submission=submission, dataset__slug=dataset, metric=metric)


def assert_no_score_refers_to_a_deleted_file() -> None:
    """Every per-dataset score names the gold it was computed against, and that gold is stored."""
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    for s in Score.objects.filter(dataset__isnull=False, submission__kind__in=["predictions", "code_bundle"]) \
            .select_related("submission__phase"):
        assert s.gold_sha256, f"score {s.pk} records no gold"
        assert s.dataset is not None
        portion = s.submission.phase.portion
        stored = [name_of(f.gold) for f in DatasetFile.objects.filter(dataset=s.dataset, portion=portion,
                                                                  sha256=s.gold_sha256)]
        stored += [name_of(r.gold) for r in RetiredGold.objects.filter(dataset=s.dataset, portion=portion,
                                                                   sha256=s.gold_sha256)]
        assert stored, f"score {s.pk} ({s.dataset.slug}, {s.metric}) refers to gold {s.gold_sha256[:12]}, which is gone"
        assert all((root / name).is_file() for name in stored), stored


def reload_changed(loaded: Loaded) -> None:
    change_gold(loaded.data / "xquad-dev.jsonl.gz")
    change_gold(loaded.data / "xquad-test.jsonl.gz")
    loaded.write_spec(squad=False, test_closes="2099-06-01T00:00:00Z")


# --------------------------------------------------------------------------- the reload


def test_a_reload_prints_its_plan_removes_a_dataset_only_when_allowed_and_rescores_with_history(
    loaded: Loaded, capsys: pytest.CaptureFixture[str]
) -> None:
    dev_run = predictions_submit(loaded)
    test_run = system_run(loaded)
    assert default_storage_has(run_answers_name(test_run.pk))  # kept before scoring
    old = {p: DatasetFile.objects.get(dataset__slug="xquad-en", portion=p) for p in ("dev", "test")}
    old_names = {p: (name_of(f.gold), name_of(f.inputs)) for p, f in old.items()}
    squad_names = [n for f in DatasetFile.objects.filter(dataset__slug="squad")
                   for n in (name_of(f.gold), name_of(f.inputs))]
    assert score(dev_run, "xquad-en", "f1").gold_sha256 == old["dev"].sha256
    assert score(test_run, "xquad-en", "f1").gold_sha256 == old["test"].sha256
    reload_changed(loaded)

    # The plan, and nothing else, with --dry-run.
    call_command("challenge_load", str(loaded.spec), "--dry-run")
    plan = capsys.readouterr().out
    assert "dataset removed: squad: 1 submission(s) lose their scores on it (kept in their history)" in plan
    assert "gold changed: xquad-en (dev)" in plan and "gold changed: xquad-en (test)" in plan
    assert "100 questions: 1 added, 1 removed, 3 with changed answers; 1 submission(s) will be rescored" in plan
    assert "53 questions: 1 added, 1 removed, 3 with changed answers; 1 submission(s) will be rescored" in plan
    assert "phase changed: test: closes_at: 2099-01-01T00:00:00Z -> 2099-06-01T00:00:00Z" in plan
    assert "the load would be refused" in plan and "dry run: nothing changed" in plan
    assert Dataset.objects.filter(slug="squad").exists()
    assert DatasetFile.objects.get(pk=old["dev"].pk).sha256 == old["dev"].sha256
    assert not ScoreHistory.objects.exists()

    # Removing a dataset with scores needs the flag; refused whole, with the reason.
    with pytest.raises(CommandError, match=r"no longer has dataset\(s\) squad \(1 submission\(s\) have scores on it\)"
                                           r".*--allow-remove"):
        call_command("challenge_load", str(loaded.spec))
    assert Dataset.objects.filter(slug="squad").exists()
    assert DatasetFile.objects.filter(pk=old["test"].pk).exists()
    capsys.readouterr()

    call_command("challenge_load", str(loaded.spec), "--allow-remove")
    out = capsys.readouterr().out
    assert "dataset removed: squad" in out and "loaded reload: 2 phase(s), 2 dataset(s)" in out
    assert not Dataset.objects.filter(slug="squad").exists()
    assert Phase.objects.get(pk=loaded.test.pk).closes_at.month == 6

    # The prediction file, rescored against the new dev gold: as the MRQA script scores it.
    new = {p: DatasetFile.objects.get(dataset__slug="xquad-en", portion=p) for p in ("dev", "test")}
    dev_preds = json.loads(dev_run.file.open("rb").read())["xquad-en"]
    dev_f1 = score(dev_run, "xquad-en", "f1")
    assert dev_f1.gold_sha256 == new["dev"].sha256
    assert dev_f1.value == pytest.approx(expected_f1(loaded.data / "xquad-dev.jsonl.gz", dev_preds))
    assert dev_f1.value is not None and dev_f1.value < 100
    dev_run.refresh_from_db()
    assert dev_run.primary_score == pytest.approx(dev_f1.value)  # squad no longer averaged in
    assert not Score.objects.filter(submission=dev_run, dataset__slug="squad").exists()
    history = list(ScoreHistory.objects.filter(submission=dev_run).order_by("recorded_at", "id"))
    assert [h.reason for h in history] == ["dataset squad removed from the challenge",
                                           "gold of xquad-en (dev) changed"]
    assert {r["dataset"] for r in history[0].scores} == {"squad", "xquad-en", None}
    assert {r["gold_sha256"] for r in history[1].scores if r["dataset"]} == {old["dev"].sha256}
    assert history[0].primary_score == pytest.approx(100)

    # The system, rescored from its stored outputs (not run again): the sealed dataset's too.
    test_run.refresh_from_db()
    assert test_run.attempts == 1 and test_run.status == Status.FINISHED
    test_answers = {qid: answers[0] for qid, answers in answers_of_original(loaded, "xquad-test").items()}
    test_f1 = score(test_run, "xquad-en", "f1")
    assert test_f1.gold_sha256 == new["test"].sha256
    assert test_f1.value == pytest.approx(expected_f1(loaded.data / "xquad-test.jsonl.gz", test_answers))
    assert score(test_run, "coqa", "f1").value == pytest.approx(100)
    assert test_f1.value is not None
    assert test_run.primary_score == pytest.approx((test_f1.value + 100) / 2)
    (entry,) = ScoreHistory.objects.filter(submission=test_run)
    assert entry.reason == "gold of xquad-en (test) changed"
    assert entry.primary_score == pytest.approx(100) and entry.image_digest == test_run.image_digest

    # The board reads the new scores.
    rows = board_build(phase=loaded.dev, viewer=loaded.oscar).rows
    assert [r.submission_id for r in rows] == [dev_run.pk]
    assert rows[0].values["agg:macro_f1"] == pytest.approx(dev_f1.value)

    # The replaced files: nobody refers to them after the rescores, so they are gone.
    assert_no_score_refers_to_a_deleted_file()
    assert not RetiredGold.objects.exists()
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    for gold_name, inputs_name in old_names.values():
        assert not (root / gold_name).exists() and not (root / inputs_name).exists()
    assert squad_names and not any((root / name).exists() for name in squad_names)  # the removed dataset's too

    # Running a rescore again changes nothing: one history entry per real change.
    assert submission_rescore(dev_run.pk) == Rescored.UP_TO_DATE
    assert submission_rescore(test_run.pk) == Rescored.UP_TO_DATE
    call_command("rescore", "reload")
    assert "0 submission(s) queued for rescoring, 0 cannot be rescored" in capsys.readouterr().out
    assert ScoreHistory.objects.count() == 3
    # Reloading the same spec again is a no-op.
    call_command("challenge_load", str(loaded.spec))
    assert "challenge reload: no changes" in capsys.readouterr().out
    assert ScoreHistory.objects.count() == 3


def answers_of_original(loaded: Loaded, name: str) -> dict[str, list[str]]:
    return answers_of(DEMO_DATA / "mrqa" / f"{FILES[name]}.jsonl.gz")


def default_storage_has(name: str) -> bool:
    return (Path(settings.PRIVATE_STORAGE_ROOT) / name).is_file()


def test_a_dataset_without_scores_is_removed_without_the_flag(loaded: Loaded) -> None:
    challenge_load(spec_path=loaded.write_spec(squad=False))
    assert not Dataset.objects.filter(challenge=loaded.challenge, slug="squad").exists()


# --------------------------------------------------------------------------- the rescore task


def test_two_rescores_of_one_change_write_one_history_entry(loaded: Loaded, monkeypatch: pytest.MonkeyPatch) -> None:
    dev_run = predictions_submit(loaded)
    change_gold(loaded.data / "xquad-dev.jsonl.gz")
    xquad = Dataset.objects.get(challenge=loaded.challenge, slug="xquad-en")
    # The change queues a rescore (a broker would hold it); this test runs the rescores itself.
    queued: list[tuple[str, int]] = []
    monkeypatch.setattr(rescore, "enqueue_on_commit", lambda task, pk: queued.append((task, pk)))
    dataset_gold_replace(dataset=xquad, portion="dev", content=(loaded.data / "xquad-dev.jsonl.gz").read_bytes(),
                         filename="xquad-dev.jsonl.gz")
    assert queued == [("readerboard.rescore_submission", dev_run.pk)]
    retired = RetiredGold.objects.get()
    assert (Path(settings.PRIVATE_STORAGE_ROOT) / name_of(retired.gold)).is_file()  # kept: scores refer to it
    assert_no_score_refers_to_a_deleted_file()

    # Another worker rescores the submission while this one scores: this one then leaves it.
    real = score_dataset  # what rescore calls it by
    inner: list[Rescored] = []
    started: list[bool] = []

    def meanwhile(**kwargs: Any) -> object:
        if not started:
            started.append(True)
            inner.append(submission_rescore(dev_run.pk))
        return real(**kwargs)

    monkeypatch.setattr(rescore, "score_dataset", meanwhile)
    assert submission_rescore(dev_run.pk) == Rescored.RACED
    assert inner == [Rescored.RESCORED]
    monkeypatch.setattr(rescore, "score_dataset", real)
    assert submission_rescore(dev_run.pk) == Rescored.UP_TO_DATE
    assert [h.reason for h in ScoreHistory.objects.filter(submission=dev_run)] == ["gold of xquad-en (dev) changed"]
    assert Score.objects.filter(submission=dev_run, dataset__slug="xquad-en", metric="f1").count() == 1
    assert_no_score_refers_to_a_deleted_file()


def test_a_submission_that_cannot_be_rescored_keeps_its_gold(loaded: Loaded,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    dev_run = predictions_submit(loaded)
    dev_run.file.delete(save=False)
    Submission.objects.filter(pk=dev_run.pk).update(file="")  # as storage retention leaves it
    change_gold(loaded.data / "xquad-dev.jsonl.gz")
    challenge_load(spec_path=loaded.spec)
    retired = RetiredGold.objects.get()
    assert score(dev_run, "xquad-en", "f1").gold_sha256 == retired.sha256
    assert (Path(settings.PRIVATE_STORAGE_ROOT) / name_of(retired.gold)).is_file()
    assert_no_score_refers_to_a_deleted_file()
    assert not ScoreHistory.objects.exists()
    call_command("rescore", "reload", "--dataset", "xquad-en")
    out = capsys.readouterr().out
    assert (f"submission {dev_run.pk} (Alpha, dev): gold of xquad-en (dev) changed: cannot be rescored: its "
            "prediction file was deleted by storage retention") in out
    assert RetiredGold.objects.filter(pk=retired.pk).exists()


def test_a_run_keeps_its_answers_for_rescoring_and_the_report_counts_them(loaded: Loaded) -> None:
    run = system_run(loaded)
    with zipfile.ZipFile(Path(settings.PRIVATE_STORAGE_ROOT) / run_answers_name(run.pk)) as archive:
        kept = {name: json.loads(archive.read(name)) for name in archive.namelist()}
    # Under the datasets' own ids, the sealed one's mapped back from the ids its system read.
    assert set(kept) == {"xquad-en.json", "coqa.json"}
    assert set(kept["coqa.json"]) == set(answers_of(loaded.data / "coqa-test.jsonl.gz"))
    report = storage_report(challenge=loaded.challenge)
    assert any(line.kind == "system outputs (kept for rescoring)" and line.owner == "Alpha" and line.files == 1
               for line in report.lines)


# --------------------------------------------------------------------------- who sees what


def test_only_organizers_see_the_gold_hashes_and_the_history(loaded: Loaded) -> None:
    run = system_run(loaded)
    reload_changed(loaded)
    challenge_load(spec_path=loaded.spec, allow_remove=True)
    new_test = DatasetFile.objects.get(dataset__slug="xquad-en", portion="test")
    url = f"/c/reload/submissions/{run.pk}/"
    organizer = Client()
    organizer.force_login(loaded.oscar)
    page = organizer.get(url).content.decode()
    assert "Gold (sha256)" in page and new_test.sha256[:12] in page
    assert "Earlier scores" in page and "gold of xquad-en (test) changed" in page and "CoQA" in page
    # In the board's words, as the current scores: "Split II F1", not the stored key.
    history = page.split('id="score-history"', 1)[1]
    assert ">Split II F1<" in history and ">split_II_macro_f1<" not in history
    team = Client()
    team.force_login(loaded.alice)
    page = team.get(url).content.decode()
    assert "Earlier scores" not in page and "Gold (sha256)" not in page
    assert new_test.sha256[:12] not in page and "CoQA" not in page and "gold of" not in page


def test_the_plan_says_what_cannot_be_rescored_and_what_is_evaluated_again(
    loaded: Loaded, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 16: "N will be rescored" counted runs whose answers were not kept; the plan now says
    which cannot be and why, and how many that failed on the organizers' gold go again."""

    test_run = system_run(loaded)
    default_storage.delete(run_answers_name(test_run.pk))  # as a run scored before answers were kept
    failed = system_run(loaded)
    Submission.objects.filter(pk=failed.pk).update(status=Status.FAILED, verdict=Verdict.GOLD,
                                                   verdict_dataset=Dataset.objects.get(slug="xquad-en"))
    reload_changed(loaded)
    call_command("challenge_load", str(loaded.spec), "--dry-run", "--allow-remove")
    plan = capsys.readouterr().out
    line = next(x for x in plan.splitlines() if "gold changed: xquad-en (test)" in x)
    assert "0 submission(s) will be rescored" in line
    assert "1 cannot be, and keep their scores on the old gold (the answers of its run were not kept" in line
    assert "1 that failed on the organizers' gold will be evaluated again" in line


def test_a_reload_that_changes_the_challenges_own_settings_follows_them_through(
    loaded: Loaded, capsys: pytest.CaptureFixture[str],
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    """Issue 16: suite options, the suite and the ranking rule were ignored by a reload (scores
    stayed those of the old options, with no sign they were stale)."""
    dev_run = predictions_submit(loaded)
    before = Submission.objects.get(pk=dev_run.pk).scoring_version
    text = loaded.spec.read_text()
    loaded.spec.write_text(text.replace("metric_suite: mrqa\n", "metric_suite: mrqa\nsuite_options: {tokenization: cjk}\n"
                                        "ranking_rule: latest\n"))
    call_command("challenge_load", str(loaded.spec), "--dry-run")
    plan = capsys.readouterr().out
    assert "challenge changed: suite_options: {} -> {'tokenization': 'cjk'} (every gold file is checked again" in plan
    assert "challenge changed: ranking_rule: 'best' -> 'latest' (each team's board row is chosen again" in plan
    with django_capture_on_commit_callbacks(execute=True):
        challenge_load(spec_path=loaded.spec)
    after = Submission.objects.get(pk=dev_run.pk)
    assert after.scoring_version != before and "+options-" in after.scoring_version  # rescored under cjk
    assert ScoreHistory.objects.filter(submission=after).exists()
    # The suite itself cannot change under scored submissions.
    loaded.spec.write_text(loaded.spec.read_text().replace("metric_suite: mrqa\n", "metric_suite: squad2\n")
                           .replace("suite_options: {tokenization: cjk}\n", ""))
    with pytest.raises(SpecError, match="metric_suite cannot change from mrqa to squad2 once submissions are scored"):
        challenge_load(spec_path=loaded.spec)
