"""Evaluation: a submission's answers judged and scored, on one path for every kind.

``submission_evaluate`` scores a prediction file; ``submission_run_finish`` records a run, fails
it with a verdict (``run_verdict``) or scores its outputs (batch) or its recorded answers
(interactive, ``dialog_runs``).  All three score through ``submission_score``: one ladder of the
team's fault, the gold's fault and the platform's fault.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from leaderboard.challenges.models import Dataset, DatasetFile, SubmissionKind
from leaderboard.challenges.selectors import dataset_upload_names, phase_prediction_targets
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import DatasetResult, Suite
from leaderboard.sandbox.answers_json import NotJson, WrongShape, answers_decode, answers_refusal
from leaderboard.sandbox.contract import RunDataset, RunEnd, RunOutcome, RunPlan, log_clean, outcome_end
from leaderboard.submissions import dialog_runs
from leaderboard.submissions.alerts import submission_staff_alert
from leaderboard.submissions.attempts import run_attempt_end, run_attempt_record
from leaderboard.submissions.board import board_changed_if_shown
from leaderboard.submissions.lifecycle import (
    failure_traceback,
    submission_fail,
    submission_run_platform_failure,
)
from leaderboard.submissions.models import AttemptEnd, FailureCause, Status, Submission, Verdict
from leaderboard.submissions.scores import score_dataset, scores_write
from leaderboard.submissions.selectors import submission_run_gold, submission_run_plan
from leaderboard.submissions.storage import run_answers_store
from leaderboard.submissions.uploads import DatasetTarget, UploadError, check_qids, parse_upload
from scoring.errors import ScoringError

logger = logging.getLogger(__name__)


# The platform's ends of a run (run_end_classify), by the reason code the failure shows.
PLATFORM_END_REASONS: dict[RunEnd, str] = {
    RunEnd.KILLED_OUTSIDE: "RUN_KILLED_OUTSIDE: the system was stopped by something other than its limits",
    RunEnd.NO_STATUS: "RUN_NO_STATUS: the engine gave no exit status for the system",
}


def _mib(value: int) -> str:
    return f"{value} MiB"


def run_verdict(plan: RunPlan, outcome: RunOutcome) -> tuple[Verdict, str] | None:
    """Why a run failed: the verdict (fixed vocabulary) and the full reason in words a
    person can act on; None if it ran to a clean exit."""
    limits = plan.limits
    end = outcome_end(outcome, memory_limit_mb=limits.memory_mb)
    if end is RunEnd.NOT_STARTED:
        return Verdict.NOT_STARTED, outcome.not_started
    if end is RunEnd.TIMED_OUT:
        return Verdict.TIME_LIMIT, (f"timed out: still running after {limits.time_limit_s:g} s (the time limit) "
                                    "and was killed; the log shows how far it got")
    if end is RunEnd.OUTPUT_CAPPED:
        return Verdict.OUTPUT_TOO_LARGE, (f"wrote more than {_mib(limits.output_mb)} to /output (the output limit); "
                                          "nothing of it is scored")
    if end is RunEnd.OUT_OF_MEMORY:
        return Verdict.MEMORY_LIMIT, (f"ran out of memory: it used more than {_mib(limits.memory_mb)} "
                                      "(the memory limit, swap included)")
    # KILLED_OUTSIDE and NO_STATUS are the platform's (submission_run_finish never asks for
    # them); an exit code is then the system's own.
    if outcome.exit_code is not None and outcome.exit_code != 0:
        return Verdict.CRASHED, f"exited with code {outcome.exit_code}; the log shows its last output"
    return None


class _OutputRejected(Exception):
    """A dataset's output cannot be scored: the verdict, the dataset, and the full reason."""

    def __init__(self, verdict: Verdict, dataset: RunDataset, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.dataset = dataset
        self.reason = reason


def _output_predictions(suite: Suite, ds: RunDataset, outcome: RunOutcome, qids: list[str]) -> Any:
    """One dataset's output, decoded and checked; each way it can be wrong is its own verdict."""
    where = f"/output/{ds.output_name} (dataset {ds.label})"
    if ds.slug in outcome.output_errors:
        verdict = Verdict.OUTPUT_TOO_LARGE if ds.slug in outcome.outputs_too_large else Verdict.OUTPUT_MISSING
        raise _OutputRejected(verdict, ds, f"dataset {ds.label}: {outcome.output_errors[ds.slug]}")
    # Read with the shape in mind (answers_json): an output the size of the output limit costs
    # the worker memory in proportion to the dataset's questions, whatever it holds.
    try:
        answers = answers_decode(outcome.outputs[ds.slug], where=where, qids=qids)
    except NotJson as exc:
        raise _OutputRejected(Verdict.OUTPUT_NOT_JSON, ds, exc.message) from None
    except WrongShape as exc:
        raise _OutputRejected(Verdict.OUTPUT_WRONG_SHAPE, ds, exc.message) from None
    # The rule a prediction file meets, in the same words: what no store takes (a lone surrogate,
    # NUL) is the team's fault here, counted, and never reaches run_answers_store.
    refused = answers_refusal(answers.by_qid, where=where)
    if refused is not None:
        verdict = Verdict.OUTPUT_WRONG_SHAPE if refused.of_shape else Verdict.ANSWER_REFUSED
        raise _OutputRejected(verdict, ds, refused.message)
    try:
        suite.check_predictions(answers.by_qid, where=where)
    except ScoringError as exc:
        raise _OutputRejected(Verdict.OUTPUT_WRONG_SHAPE, ds, str(exc)) from None
    try:
        check_qids(answers, qids=qids, where=where)
    except UploadError as exc:
        verdict = Verdict.UNKNOWN_IDS if answers.n_unknown else Verdict.ANSWERS_MISSING
        raise _OutputRejected(verdict, ds, str(exc)) from None
    return answers.by_qid


class AnswersRejected(Exception):
    """A submission's answers cannot be scored, by its team's fault: the verdict, the full reason,
    and the dataset whose answers are at fault (None when it is the whole file)."""

    def __init__(self, verdict: Verdict, reason: str, dataset: Dataset | None = None) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason
        self.dataset = dataset


@dataclass(frozen=True)
class Scored:
    """What ``submission_score`` scores, in the words its failures use."""

    noun: str  # "this submission" / "this run" in the platform fault's reason
    checked: str  # what passed every check, in the gold fault's alert
    # The platform fault's alert to the organizers ("" for none).
    platform_alert: str = ""


PREDICTION_FILE = Scored("submission", "a prediction file")
SYSTEM_RUN = Scored("run", "output", platform_alert="the platform failed while scoring this run's output")


def submission_score(
    submission: Submission,
    *,
    scored: Scored,
    answers: Callable[[], Mapping[DatasetFile, Any]],
    score: Callable[[DatasetFile, Any], DatasetResult] | None = None,
) -> None:
    """Score a submission that is ``scoring`` and write its scores, or fail it: the one ladder of
    faults for prediction files, batch runs and interactive runs.

    - The team's: ``answers`` (which reads, checks and keeps them, per dataset file) raises
      ``AnswersRejected``.  Counted.
    - The gold's: scoring refuses answers that passed every check a team can be told about.  Not
      counted; the dataset being scored is named (the team reads the verdict for it,
      ``verdict_sentence``), and the organizers get the full reason, which names the gold file.
    - The platform's: anything else (a bug, the disk, the database).  Not counted; its traceback
      goes on the organizers' page.  On hidden data the team sees no figure of a run failed so
      (``submission_run_report``), and its team's next hidden runs wait for a look once such
      failures pass the challenge's ``platform_failures_per_day`` (``selectors.run_queue_order``).
      Not retried: it would be repeated for a fault of the scoring code, likely again.

    ``score`` scores one dataset's answers; by default the suite's scorer against the dataset's gold.
    """
    submission_id = submission.pk
    scoring: Dataset | None = None  # the dataset being scored, named by a gold failure's verdict
    try:
        read = answers()
        results: dict[Dataset, DatasetResult] = {}
        for dataset_file, predictions in read.items():
            scoring = dataset_file.dataset
            results[scoring] = (score(dataset_file, predictions) if score is not None else
                                score_dataset(submission=submission, dataset_file=dataset_file, predictions=predictions))
        scores_write(submission=submission, results=results, gold={f.dataset: f.sha256 for f in read})
    except AnswersRejected as exc:
        submission_fail(submission_id, reason=exc.reason, cause=FailureCause.PARTICIPANT,
                        from_statuses=[Status.SCORING], verdict=exc.verdict, dataset=exc.dataset)
    except ScoringError as exc:
        logger.error("submission %s: scoring failed on checked %s: %s", submission_id, scored.checked, exc)
        submission_fail(submission_id, reason=f"scoring failed: {exc}", cause=FailureCause.PLATFORM,
                        from_statuses=[Status.SCORING], verdict=Verdict.GOLD, dataset=scoring)
        submission_staff_alert(submission_id, reason=f"scoring failed on {scored.checked} that passed every "
                                                     f"check: {exc}")
    except Exception as exc:
        logger.exception("submission %s: scoring failed", submission_id)
        submission_fail(
            submission_id,
            reason=f"the platform failed while scoring this {scored.noun}; it does not count against your quota",
            cause=FailureCause.PLATFORM,
            from_statuses=[Status.SCORING],
            verdict=Verdict.PLATFORM,
            detail=failure_traceback(exc),
        )
        if scored.platform_alert:
            submission_staff_alert(submission_id, reason=f"{scored.platform_alert}: {type(exc).__name__}: {exc}")


def submission_evaluate(submission_id: int) -> None:
    """Score a queued prediction submission; safe to call twice (the second call does nothing)."""
    now = timezone.now()
    claimed = Submission.objects.filter(
        pk=submission_id, status=Status.QUEUED, kind=SubmissionKind.PREDICTIONS
    ).update(
        status=Status.SCORING,
        started_at=now,
        attempts=F("attempts") + 1,
        # Named as compute workers are, for the console's queue page: which process scores it.
        worker=f"scoring@{socket.gethostname()}:{os.getpid()}"[:200],
        # A worker that dies mid-scoring leaves this lease to expire; the reaper re-queues it.
        lease_expires_at=now + dt.timedelta(seconds=settings.SCORING_LEASE_S),
    )
    if claimed != 1:
        logger.info("submission %s: not queued any more (already claimed, final or gone)", submission_id)
        return
    submission = Submission.objects.select_related("phase__challenge", "team").get(pk=submission_id)

    def answers() -> dict[DatasetFile, Any]:
        name = submission.original_name or "predictions"
        with submission.file.open("rb") as fh:
            raw = fh.read()
        targets = phase_prediction_targets(phase=submission.phase)
        try:
            per_dataset = parse_upload(
                raw,
                filename=name,
                targets=[DatasetTarget(ds.slug, dataset_upload_names(ds), f.qids) for ds, f in targets],
                max_expanded_bytes=settings.MAX_PREDICTION_ARCHIVE_BYTES,
            )
            # Checked at the upload already; again here, as the answers are read again from the
            # stored file: what reaches the scorer is what the one rule takes.
            for ds, _ in targets:
                refused = answers_refusal(per_dataset[ds.slug].by_qid, where=f"{name} [{ds.slug}]")
                if refused is not None:
                    raise UploadError(refused.message)
        except UploadError as exc:
            raise AnswersRejected(Verdict.OUTPUT_WRONG_SHAPE, str(exc)) from None
        return {f: per_dataset[ds.slug].by_qid for ds, f in targets}

    submission_score(submission, scored=PREDICTION_FILE, answers=answers)


def submission_run_finish(submission_id: int, *, attempt: int, outcome: RunOutcome, kept: bool = False) -> None:
    """Record the run (log always), then fail it with a verdict or score its outputs.

    The gold and the plan are the attempt's: what its claim stamped and kept (``submission_run_gold``,
    ``submission_run_plan``), not derived again from the challenge now (a dataset revealed meanwhile
    keeps the alias and id key the system read); a gold replaced meanwhile sends the run round again.

    ``kept``: the outcome is a result kept in private storage until it is scored
    (``worker_api.submission_run_result_score``).  Its scoring has the short ``RESULT_SCORING_LEASE_S``,
    and a run whose scoring was lost (``scoring`` with that lease passed) is taken and scored again
    from it; a scoring still within its lease is left alone, so a second delivery does nothing.
    """
    now = timezone.now()
    current = Q(status=Status.RUNNING)
    if kept:
        current |= Q(status=Status.SCORING, lease_expires_at__lt=now)
    base = Submission.objects.filter(current, pk=submission_id, attempts=attempt)
    submission = base.select_related("phase__challenge", "team").first()
    if submission is None:
        logger.info("submission %s: attempt %s is no longer the running one; result dropped", submission_id, attempt)
        return
    gold = submission_run_gold(submission=submission)
    if gold.replaced:
        # Its answers are to data the platform no longer scores: neither the team's fault nor a
        # result; it runs again on the new data (an attempt of the platform's, not counted).
        reason = f"the organizers replaced the data of {', '.join(gold.replaced)} while it ran"
        submission_run_platform_failure(submission_id, attempt=attempt, reason=reason)  # queued again, due later
        return
    plan = submission_run_plan(submission=submission)
    end = outcome_end(outcome, memory_limit_mb=plan.limits.memory_mb)
    if end in PLATFORM_END_REASONS:
        # Killed by neither a limit nor the engine's OOM flag (an operator, a node drain, another
        # tenant): the platform's, run again, not counted.  The reason holds no figure of the
        # run (exit code, time, memory): on hidden data a team reads none (submission_run_report).
        logger.warning("submission %s: attempt %s ended %s", submission_id, attempt, end.value)
        # Queued again (a state change: compute workers claim it over the internal API) or failed.
        submission_run_platform_failure(submission_id, attempt=attempt, reason=PLATFORM_END_REASONS[end])
        return
    peak_mib = None if outcome.peak_memory_bytes is None else -(-outcome.peak_memory_bytes // 2**20)
    record = {
        "log": log_clean(outcome.logs),  # the runner cleaned it already; idempotent, so positions stay
        # The platform's own messages, apart from the log: nothing the system printed can pass for one.
        "log_notes": [note.as_json() for note in outcome.notes],
        "exit_code": outcome.exit_code,
        "run_seconds": outcome.duration_s,
        "peak_memory_mb": peak_mib,
        "runtime": outcome.runtime,
        "lease_expires_at": None,
    }
    figures: dict[str, Any] = {"exit_code": outcome.exit_code, "run_seconds": outcome.duration_s,
                               "peak_memory_mb": peak_mib}
    failed = run_verdict(plan, outcome)
    if failed is not None:
        verdict, reason = failed
        with transaction.atomic():
            if base.update(status=Status.FAILED, failure_reason=reason, failure_cause=FailureCause.PARTICIPANT,
                           verdict=verdict, finished_at=timezone.now(), **record):
                run_attempt_record(submission_id=submission_id, number=attempt, **figures)
                run_attempt_end(submission_id=submission_id, number=attempt, end=AttemptEnd.FAILED, verdict=verdict,
                                cause=FailureCause.PARTICIPANT, reason=reason)
                board_changed_if_shown(submission_id)
        return
    # Scoring has its own lease: a worker that dies while scoring is noticed too (a kept result's
    # short one: its scoring is resumed from it; else the run is reaped as any other).  Taking it is
    # the claim of this scoring: of two finishes of one result, one moves on.
    lease_s = settings.RESULT_SCORING_LEASE_S if kept else settings.SCORING_LEASE_S
    with transaction.atomic():
        moved = base.update(status=Status.SCORING, lease_expires_at=timezone.now() + dt.timedelta(seconds=lease_s),
                            **{k: v for k, v in record.items() if k != "lease_expires_at"})
        if moved == 1:
            run_attempt_record(submission_id=submission_id, number=attempt, **figures)
    if moved != 1:
        return
    by_slug = {f.dataset.slug: f for f in gold.files}
    files = [by_slug[ds.slug] for ds in plan.datasets]
    modes = submission.phase.protocol_modes
    if modes:
        index = {f.pk: n for n, f in enumerate(files)}

        def dialog_answers() -> dict[DatasetFile, Any]:
            # Interactive: the answers are the trusted side's record, by gold qid (dialog_runs).
            by_mode = dialog_runs.dialog_run_predictions(submission=submission, files=files)
            # Kept before scoring: when the gold changes, the run is rescored from these, not run
            # again (but an interactive run, whose history held the old gold: rescore.rescore_problem).
            run_answers_store(submission_id=submission_id,
                              answers={f.dataset.slug: played[modes[0]] for f, played in by_mode.items()})
            return by_mode

        def dialog_score(dataset_file: DatasetFile, by_mode: Any) -> DatasetResult:
            return dialog_runs.dialog_run_result(submission=submission, index=index[dataset_file.pk],
                                                 dataset_file=dataset_file, by_mode=by_mode,
                                                 peak_memory_mib=peak_mib)

        submission_score(submission, scored=SYSTEM_RUN, answers=dialog_answers, score=dialog_score)
        return

    def output_answers() -> dict[DatasetFile, Any]:
        suite = suite_for(submission.phase.challenge)
        answers: dict[DatasetFile, dict[str, Any]] = {}
        for ds, dataset_file in zip(plan.datasets, files, strict=True):
            # A sealed dataset's system answered under re-keyed ids: map them back to score.
            own_id = ds.qids_for_system(dataset_file.qids)
            try:
                predictions = _output_predictions(suite, ds, outcome, list(own_id))
            except _OutputRejected as exc:
                raise AnswersRejected(exc.verdict, f"invalid output: {exc.reason}", dataset_file.dataset) from None
            answers[dataset_file] = {own_id[qid]: answer for qid, answer in predictions.items()}
        # Kept before scoring: when the gold changes, the run is rescored from these, not run again.
        run_answers_store(submission_id=submission_id, answers={f.dataset.slug: a for f, a in answers.items()})
        return answers

    submission_score(submission, scored=SYSTEM_RUN, answers=output_answers)
