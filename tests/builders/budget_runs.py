"""System runs with chosen costs, driven through the services a worker calls: for budget tracks."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from leaderboard.challenges.budget_tracks import MIB
from leaderboard.challenges.models import Phase, PhaseKind
from leaderboard.sandbox.contract import RunPlan
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import baseline_system_submit
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.worker_api import submission_run_claim_next
from tests.builders.cast import gold_predictions
from tests.builders.runs import gold_outputs, outcome


def padded_bundle(path: Path, pad_kib: int) -> Path:
    """A code bundle of about ``pad_kib`` KiB (stored, not compressed: its size is the pad's)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("run.py", "print('hi')\n")
        archive.writestr("model.bin", bytes(range(256)) * (4 * pad_kib))
    path.write_bytes(buffer.getvalue())
    return path


def _dev_outputs(plan: RunPlan, wrong_every: int) -> dict[str, bytes]:
    answers = gold_predictions("dev", wrong_every=wrong_every)
    return {ds.slug: json.dumps({system_qid: answers[ds.slug][qid] for system_qid, qid
                                 in ds.qids_for_system(list(answers[ds.slug])).items()}).encode()
            for ds in plan.datasets}


def budget_run(*, phase: Phase, team_name: str, tmp: Path, peak_mib: int, seconds: float, pad_kib: int = 1,
               wrong_every: int = 0, hardware: str = "test box, 2 vCPU") -> Submission:
    """A baseline system of ``team_name`` run to its score, as a worker stating ``hardware`` would:
    the engine measured ``peak_mib`` and ``seconds``; every ``wrong_every``-th dev answer is wrong."""
    path = padded_bundle(tmp / f"{team_name.replace(' ', '-')}.zip", pad_kib)
    submission = baseline_system_submit(phase=phase, team_name=team_name, path=str(path), kind="code_bundle")
    claim = submission_run_claim_next(queue="cpu", worker="tok/host:1", hardware_class=hardware)
    assert claim.plan is not None and claim.plan.submission_id == submission.pk
    outputs = _dev_outputs(claim.plan, wrong_every) if phase.portion == PhaseKind.DEV else gold_outputs(claim.plan)
    submission_run_finish(submission.pk, attempt=claim.plan.attempt, outcome=outcome(
        outputs=outputs, duration_s=seconds, peak_memory_bytes=peak_mib * MIB))
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission
