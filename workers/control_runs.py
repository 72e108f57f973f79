"""The trusted side of system runs: the reaper, and the run in-process without HTTP.

Compute workers (``workers.compute``) run systems on any host through the internal API.  Here:

* ``runs_reap``: the control worker's periodic check.  A run whose worker vanished is found by
  its lease alone (no process check: its worker may be on another host), queued again or failed
  after too many attempts; the dead worker's host cleans up its containers itself
  (``workers.run_system.leftovers_remove``).
* ``LocalTransport`` and ``system_evaluate``: the same run (``workers.run_system.run_ticket``)
  driven by direct service calls instead of HTTP, for tests of the run's failure paths and for
  tools on the web host.  Same ticket, same files, same checks.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from django import db
from django.conf import settings

from leaderboard.core.enqueue import FINISH_RUN, TASK_QUEUES, send_task
from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.contract import HiddenRuns, RunNote, RunOutcome, RunTicket, TicketFile
from leaderboard.submissions import dialog_runs, worker_api
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.lifecycle import (
    Reaped,
    submission_run_claim,
    submission_run_fail,
    submission_run_heartbeat,
    submission_run_platform_failure,
    submissions_reap,
)
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.selectors import submission_run_plan
from scoring.dialogs import Revealed
from workers import runner
from workers.run_system import ComputeConfig, RunFailure, run_ticket, worker_name

logger = logging.getLogger(__name__)


class LocalTransport:
    """A run's steps as direct service calls (this process has the database and the storage)."""

    def claim(self, hint: int | None = None) -> RunTicket | None:
        if hint is None:
            raise ValueError("a local run names its submission")
        plan = submission_run_claim(hint, worker=f"local/{worker_name()}")
        if plan is None:
            return None
        try:
            return worker_api.run_ticket_build(plan)
        except ServiceError as exc:
            submission_run_platform_failure(plan.submission_id, attempt=plan.attempt, reason=str(exc))
            return None

    def fetch(self, ticket: RunTicket, item: TicketFile, target: Path) -> None:
        submission = Submission.objects.select_related("phase__challenge").get(pk=ticket.submission_id)
        if item is ticket.system or item == ticket.system:
            shutil.copyfile(submission.file.path, target)
            return
        index = ticket.inputs.index(item)
        path = worker_api.run_input_path(submission=submission, index=index)
        if path is None:
            raise runner.PlatformError(f"no input file for {item.name}")
        shutil.copyfile(path, target)

    def heartbeat(self, submission_id: int, attempt: int) -> bool:
        try:
            return submission_run_heartbeat(submission_id, attempt=attempt)
        finally:
            if not _main_thread():
                db.connection.close()  # the lease thread's own connection

    def live_log(self, ticket: RunTicket, log: str, notes: Sequence[RunNote]) -> None:
        try:
            # The attempt while it runs (the store checks again as it writes), as run_required finds it.
            submission = Submission.objects.select_related("phase__challenge").filter(
                pk=ticket.submission_id, attempts=ticket.attempt, status=Status.RUNNING).first()
            if submission is not None:
                worker_api.submission_run_live_log_store(submission=submission, log=log,
                                                         notes=[n.as_json() for n in notes])
        finally:
            if not _main_thread():
                db.connection.close()  # the live log thread's own connection

    def finish(self, ticket: RunTicket, outcome: RunOutcome) -> None:
        submission = Submission.objects.select_related("phase__challenge").get(pk=ticket.submission_id)
        slugs = submission_run_plan(submission=submission).slugs_by_output()
        outcome.outputs = {slugs[k]: v for k, v in outcome.outputs.items()}
        outcome.output_errors = {slugs[k]: v for k, v in outcome.output_errors.items()}
        outcome.outputs_too_large = {slugs[k] for k in outcome.outputs_too_large}
        submission_run_finish(ticket.submission_id, attempt=ticket.attempt, outcome=outcome)

    def dialog_turn(self, ticket: RunTicket, *, mode: str, dataset: int, dialog: int, turn: int | None,
                    answers: Sequence[Mapping[str, str]] = (), latencies_s: Sequence[float | None] = ()) -> Revealed:
        submission = Submission.objects.select_related("phase__challenge").get(pk=ticket.submission_id)
        try:
            if turn is None:
                return dialog_runs.dialog_open(submission=submission, mode=mode, dataset=dataset, dialog=dialog)
            return dialog_runs.dialog_turns_answer(
                submission=submission, mode=mode, dataset=dataset, dialog=dialog, first=turn, answers=list(answers),
                latencies_ms=[None if s is None else s * 1000 for s in latencies_s])
        except dialog_runs.TurnRefused as exc:
            raise runner.PlatformError(f"the platform refused a turn: {exc}") from None

    def fail(self, ticket: RunTicket, failure: RunFailure) -> None:
        if failure.participant:
            submission_run_fail(ticket.submission_id, attempt=ticket.attempt, reason=failure.reason)
        else:  # queued again, due after its back-off: the next claim after that takes it
            submission_run_platform_failure(ticket.submission_id, attempt=ticket.attempt, reason=failure.reason,
                                            detail=failure.detail)


def _main_thread() -> bool:

    return threading.current_thread() is threading.main_thread()


def local_config() -> ComputeConfig:
    return ComputeConfig(work_dir=Path(settings.RUNS_DIR), run_image_repository=settings.RUN_IMAGE_REPOSITORY,
                         runtime=settings.CONTAINER_RUNTIME,
                         hidden=HiddenRuns(runtime=settings.HIDDEN_RUNTIME, isolate=settings.HIDDEN_ISOLATION,
                                           lock_path=settings.HOST_LOCK))


def system_evaluate(submission_id: int) -> None:
    """Run a queued system once, in this process; a second call for the same submission does nothing."""
    transport = LocalTransport()
    ticket = transport.claim(submission_id)
    if ticket is None:
        logger.info("submission %s: not queued any more (already claimed, final or gone)", submission_id)
        return
    run_ticket(transport, ticket, local_config())


def runs_reap() -> Reaped:
    """Re-queue (or fail) runs and scorings whose lease expired: their worker is gone.  Results a
    compute worker handed back whose scoring message or scoring was lost are sent again (their runs
    are not re-queued: the system ran to its end); leftovers go."""
    resend, _ = worker_api.run_results_waiting()
    reaped = submissions_reap(keep=worker_api.run_results_kept())
    for pk in resend:
        logger.warning("submission %s: its handed-back result waits unscored; sent again", pk)
        send_task(FINISH_RUN, pk, queue=TASK_QUEUES[FINISH_RUN])
    return reaped
