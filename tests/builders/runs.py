"""System runs driven through the services a worker calls: a bundle, an outcome, gold outputs."""

from __future__ import annotations

import io
import json
import zipfile

from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.sandbox.contract import RunOutcome, RunPlan
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import submission_run_plan
from tests.builders.cast import DEMO_DATA, mrqa_gold


def bundle() -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run.py", "print('hi')\n")
    return SimpleUploadedFile("system.zip", buffer.getvalue())


def outcome(**changes: object) -> RunOutcome:
    base = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_too_large": False,
            "duration_s": 1.5, "logs": "the log", "runtime": "runc"}
    base.update(changes)
    return RunOutcome(**base)  # type: ignore[arg-type]


GOLD_FILES = {"xquad-en": "XQuAD-en.test.jsonl.gz", "coqa": "CoQA.test.jsonl.gz"}


def gold_outputs(plan: RunPlan | None = None, *, extra: dict[str, str] | None = None) -> dict[str, bytes]:
    """Gold answers as a system would write them: under the ids it read (a sealed dataset's
    are re-keyed), with ``extra`` answers added to every file."""
    plan = plan or submission_run_plan(submission=Submission.objects.get())
    out = {}
    for ds in plan.datasets:
        gold = mrqa_gold(DEMO_DATA / "mrqa" / GOLD_FILES[ds.slug])
        answers = {system_qid: gold[qid][0] for system_qid, qid in ds.qids_for_system(list(gold)).items()}
        out[ds.slug] = json.dumps({**answers, **(extra or {})}).encode()
    return out
