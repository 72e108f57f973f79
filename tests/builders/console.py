"""A challenge with something to organize, for the console's tests.

On the cast (conftest): olga organizes another challenge (she must see nothing of this one);
Alpha has a finished prediction file on the dev phase and a test-phase submission scored on
XQuAD-en and on the sealed CoQA ("Hidden-07"); Charlie's has a system that failed on the test
phase (exit code 3) with a log that quotes hidden data.  Runs are driven through the services a
worker calls, so no engine is needed.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import Challenge, Dataset
from leaderboard.challenges.suites.base import DatasetResult
from leaderboard.sandbox.contract import RunOutcome, RunPlan
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.scores import scores_write
from tests.builders.cast import DEMO_DATA, Cast, gold_predictions, mrqa_gold, upload
from tests.builders.systems import system_phases

# What Charlie's failed system printed: it read the hidden questions (organizers only).
FAILED_LOG = "reading /input/hidden-07.jsonl.gz\nTraceback: KeyError 'context'\n"
GOLD_FILES = {"xquad-en": "XQuAD-en.test.jsonl.gz", "coqa": "CoQA.test.jsonl.gz"}
ROLES = ("anonymous", "dave", "bob", "charlie", "olga", "oscar", "root")
ORGANIZERS = ("oscar", "root")


def bundle() -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run.py", "print('reading')\n")
    return SimpleUploadedFile("system.zip", buffer.getvalue())


def outcome(**changes: object) -> RunOutcome:
    base: dict[str, object] = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_too_large": False,
                               "duration_s": 12.5, "logs": "ran fine\n", "runtime": "runc"}
    base.update(changes)
    return RunOutcome(**base)  # type: ignore[arg-type]


def gold_outputs(plan: RunPlan) -> dict[str, bytes]:
    """Gold answers as a system writes them: under the ids it reads (a sealed dataset's are re-keyed)."""
    out = {}
    for ds in plan.datasets:
        gold = mrqa_gold(DEMO_DATA / "mrqa" / GOLD_FILES[ds.slug])
        out[ds.slug] = json.dumps({sid: gold[qid][0] for sid, qid in ds.qids_for_system(list(gold)).items()}).encode()
    return out


def run_as_worker(submission: Submission, *, worker: str = "systems@host-a:101", **changes: object) -> Submission:
    """Claim the queued system and finish its run with ``changes`` (default: a clean run answering gold)."""
    plan = submission_run_claim(submission.pk, worker=worker)
    assert plan is not None, "the submission was not queued"
    if "outputs" not in changes and changes.get("exit_code", 0) == 0:
        changes["outputs"] = gold_outputs(plan)
    submission_run_finish(submission.pk, attempt=plan.attempt, outcome=outcome(**changes))
    submission.refresh_from_db()
    return submission


@dataclass
class ConsoleWorld:
    cast: Cast
    olga: User
    other: Challenge
    alpha_dev: Submission
    alpha_test: Submission
    charlie_run: Submission
    coqa: Dataset

    def user(self, role: str) -> User:
        return self.olga if role == "olga" else getattr(self.cast, role)

    def client(self, role: str) -> Client:
        client = Client()
        if role != "anonymous":
            client.force_login(self.user(role))
        return client


def console_world_build(cast: Cast) -> ConsoleWorld:
    olga = User.objects.create_user("olga", password="olga-pw")
    other = Challenge.objects.create(slug="other", title="Another challenge", metric_suite="mrqa")
    other.staff.add(olga)
    system_phases(cast)
    alpha_dev = submission_create_predictions(
        team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions(wrong_every=4)),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    with transaction.atomic():  # scored (with fabricated CoQA scores) before an eager scoring could claim it
        alpha_test, _ = _scored_run(cast, team=cast.alpha, user=cast.bob, scores=ALPHA_TEST)
    charlie_run = submission_create_system(team=cast.charlies, phase=cast.test, user=cast.charlie, upload=bundle(),
                                           kind="code_bundle")
    run_as_worker(charlie_run, exit_code=3, logs=FAILED_LOG)
    assert charlie_run.status == Status.FAILED
    return ConsoleWorld(cast, olga, other, alpha_dev, alpha_test, charlie_run,
                        Dataset.objects.get(challenge=cast.challenge, slug="coqa"))


# Fabricated test-phase scores.  The values are >= 60 so that no timestamp (seconds.micros)
# can contain them by accident, and odd enough not to collide with any other number shown.
ALPHA_TEST = {"xquad-en": {"f1": 81.25, "em": 70.5}, "coqa": {"f1": 67.8912, "em": 61.2345}}


def _scored_run(cast: Cast, *, team: Team, user: User, scores: dict[str, dict[str, float]]) -> tuple[Submission, bytes]:
    """A test-phase submission scored on XQuAD-en and on sealed CoQA, as a worker would write it.

    Prediction uploads never cover Split III (teams never see its questions), so the
    CoQA scores are fabricated; the state machine is followed (queued -> scoring -> finished).
    """
    content = upload(gold_predictions("test"))
    raw = content.read()
    content.seek(0)
    submission = submission_create_predictions(
        team=team, phase=cast.test, user=user, upload=content, limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES
    )
    assert Submission.objects.filter(pk=submission.pk, status=Status.QUEUED).update(status=Status.SCORING) == 1
    datasets = {d.slug: d for d in cast.challenge.datasets.all()}
    scores_write(
        submission=submission,
        results={datasets[slug]: DatasetResult(metrics=dict(m), per_example=[]) for slug, m in scores.items()},
    )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED
    return submission, raw
