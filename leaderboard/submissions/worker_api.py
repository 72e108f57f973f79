"""The platform's side of compute workers: tokens, fair claims, tickets, files, and results.

A compute worker holds no database credentials and no gold (``workers.compute``); it reaches the
platform through the internal API (``internal_views``), which calls the services here:

    worker_token_create / worker_token_authenticate   one token per worker, stored as its sha256
    submission_run_claim_next   queued -> running: the next run of a queue, in a fair order
                                (``selectors.run_queue_order``; the transition is ``lifecycle``'s)
    run_ticket_build            what the worker may know of the run (``RunTicket``), and no more
    run_input_path              the file behind a ticket's input entry: answer-free (or re-keyed) inputs
    submission_run_live_log_store  what the system printed so far, while it runs (``attempts``)
    submission_run_result_store the outcome and outputs handed back, kept for the control worker
    submission_run_result_score scores them there (task FINISH_RUN, ``evaluation``), next to the gold
    run_results_waiting / run_results_kept   what the reaper sends again, removes, and leaves running

A result handed back is kept until the run it belongs to is final (scored, failed, cancelled) or is no
longer at that attempt: a control worker lost while scoring it (killed, its host gone) leaves it, and the
reaper sends its finish again once the scoring's short lease (``RESULT_SCORING_LEASE_S``) passed.  The
system is not run again for a lost scoring; only a result that cannot be read (or waits longer than
``SCORING_LEASE_S``) is dropped, and its run is then reaped as one whose worker is gone.

A run claimed with a token belongs to that token (``Submission.worker`` is ``<token>/<host:pid>``):
any other token asking about it gets 404, as does a call about an attempt that is not current.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import secrets
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Exists, F, OuterRef, QuerySet, Value
from django.db.models.functions import Concat
from django.db.models.lookups import StartsWith
from django.utils import timezone

from leaderboard.challenges.models import SYSTEM_KINDS
from leaderboard.challenges.selectors import phase_system_settings
from leaderboard.core.enqueue import FINISH_RUN, TASK_QUEUES, enqueue_on_commit
from leaderboard.core.errors import ServiceError
from leaderboard.core.run_wakeups import run_queue_wait
from leaderboard.sandbox.contract import (
    RunDataset,
    RunOutcome,
    RunPlan,
    RunTicket,
    TicketFile,
    log_cap_chars,
    log_clean,
    outcome_from_json,
)
from leaderboard.submissions.attempts import run_attempt_live_log_store
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.lifecycle import submission_run_take
from leaderboard.submissions.models import Status, Submission, WorkerToken
from leaderboard.submissions.selectors import run_queue_order, submission_run_plan
from scoring import inputs

logger = logging.getLogger(__name__)


LAST_SEEN_EVERY = dt.timedelta(seconds=5)


# How long a compute worker that found nothing to claim waits before it asks again (``retry_after``):
# the latency from a submission to its claim, against one idle request per worker this often.
CLAIM_RETRY_S = 2.0


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def worker_token_create(*, name: str, queues: Sequence[str] = ()) -> str:
    """A new token for the worker ``name`` (replacing its previous one): shown once, stored hashed.

    ``queues``: the only run queues it may claim from (none: any, for the platform's own workers)."""
    token = f"rbw_{secrets.token_urlsafe(32)}"
    WorkerToken.objects.update_or_create(name=name, defaults={"token_sha256": _digest(token), "revoked_at": None,
                                                              "queues": sorted(set(queues))})
    return token


def _tokens_valid(token: str) -> QuerySet[WorkerToken]:
    """The worker whose token this is, if it is not revoked (none for an empty token)."""
    return WorkerToken.objects.filter(token_sha256=_digest(token), revoked_at__isnull=True) if token else \
        WorkerToken.objects.none()


def worker_token_authenticate(token: str) -> WorkerToken | None:
    if not token:
        return None
    worker = _tokens_valid(token).first()
    now = timezone.now()
    # Written at most every few seconds: a run's downloads are a burst of calls, and each write
    # would take the database's write lock (SQLite) for a figure the console shows in seconds.
    if worker is not None and (worker.last_seen_at is None or now - worker.last_seen_at > LAST_SEEN_EVERY):
        WorkerToken.objects.filter(pk=worker.pk).update(last_seen_at=now)
    return worker


def worker_label(worker: WorkerToken, instance: str) -> str:
    """What ``Submission.worker`` says for a run this worker claimed: the token's name first."""
    return f"{worker.name}/{instance}"[:200]


def _attempt_running(*, submission_id: int, attempt: int) -> QuerySet[Submission]:
    return Submission.objects.filter(pk=submission_id, attempts=attempt, status=Status.RUNNING)


def submission_of_worker(*, worker: WorkerToken, submission_id: int, attempt: int) -> Submission | None:
    """The run, if it is this worker's current attempt and still running; else None (404)."""
    return (
        _attempt_running(submission_id=submission_id, attempt=attempt)
        .filter(worker__startswith=f"{worker.name}/")
        .select_related("phase__challenge")
        .first()
    )


def run_of_token(*, token: str, submission_id: int, attempt: int) -> QuerySet[Submission]:
    """The run as ``worker_token_authenticate`` and ``submission_of_worker`` find it, as one query
    not yet run: for a statement that writes only where the caller may (a turn of the interactive
    protocol, ``dialog_runs.dialog_turns_append``), so that the check costs no query of its own."""
    claimed_by_token = _tokens_valid(token).filter(StartsWith(OuterRef("worker"), Concat(F("name"), Value("/"))))
    return _attempt_running(submission_id=submission_id, attempt=attempt).filter(Exists(claimed_by_token))


@dataclass(frozen=True)
class Claim:
    plan: RunPlan | None
    # True when runs of the queue wait but none may start now (team limits).
    held_back: bool = False


def submission_run_claim_next(*, queue: str, worker: str, now: dt.datetime | None = None,
                              hardware_class: str = "") -> Claim:
    """Take the next queued run of ``queue`` for ``worker``: queued -> running, with a lease.

    Fair between teams, in ``run_queue_order``'s order: so one team's burst of twenty systems
    interleaves with everyone else's instead of going first, whatever the order in which the
    workers ask.  Atomic: of two workers asking at once, one takes each run (``submission_run_take``
    moves it only from its queued attempt); the other goes on to the next run or gets None.
    """
    now = now or timezone.now()
    order = run_queue_order(queue=queue, now=now)
    for run in order:
        if run.held_back or run.due_at is not None or run.held_for_review:
            break  # the rest are held back by their team's limit, backing off or held for review
        plan = submission_run_take(submission_id=run.submission_id, attempts=run.attempts, worker=worker, now=now,
                                   hardware_class=hardware_class)
        if plan is not None:  # else another worker took it a moment ago: the next one
            return Claim(plan)
    return Claim(None, held_back=any(run.due_at is None and not run.held_for_review for run in order))


# How long the API holds an idle worker's wait for a run (``run_queues_wait``): long enough that an idle
# worker costs a request every few seconds at most, short enough to stay well inside gunicorn's
# graceful shutdown and any proxy's read timeout.
CLAIM_WAIT_S = 10.0
# At most this many waits at once per web process; further ones are answered at once with
# ``CLAIM_RETRY_S`` (their workers poll as before).  gunicorn's threads serve pages and uploads too
# (deploy/gunicorn.conf.py: 8 a process by default): waits may take a quarter of them, no more.
CLAIM_WAITERS = 2
_waiters = threading.BoundedSemaphore(CLAIM_WAITERS)


def _due_in(queues: Sequence[str], now: dt.datetime) -> float | None:
    """Seconds until a run of ``queues`` may be claimed (0: now), as ``submission_run_claim_next``
    would see it; None when none waits.  Runs held back by their team's limit are looked at again
    after ``CLAIM_RETRY_S`` (a run that ends announces nothing); runs held for review never."""
    due: list[float] = []
    for queue in queues:
        for run in run_queue_order(queue=queue, now=now):
            if run.held_for_review:
                continue
            if run.held_back:
                due.append(CLAIM_RETRY_S)
            elif run.due_at is not None:
                due.append(max(0.0, (run.due_at - now).total_seconds()))
            else:
                return 0.0
    return min(due) if due else None


def run_queues_wait(*, queues: Sequence[str], seconds: float = CLAIM_WAIT_S) -> float:
    """Wait (at most ``seconds``) until a run of ``queues`` may be claimed; returns the worker's
    ``retry_after``: 0 to claim now (a run was announced, is due, or the wait ran out: a claim is
    one cheap request), else ``CLAIM_RETRY_S`` when no wait was possible (no broker, or this
    process's ``CLAIM_WAITERS`` busy): the worker then polls as it did before waits existed.

    A wait claims nothing, so a worker that stops while it waits loses no run."""
    if not _waiters.acquire(blocking=False):
        return CLAIM_RETRY_S
    try:
        woken = run_queue_wait(queues, seconds=min(seconds, CLAIM_WAIT_S),
                               due_in=lambda: _due_in(queues, timezone.now()))
    finally:
        _waiters.release()
    return CLAIM_RETRY_S if woken is None else 0.0


def _sha256_file(path: str | os.PathLike[str]) -> str:
    """The file's sha256, remembered per (path, size, modification time): inputs are hashed for
    every ticket and every download, and change only when an organizer reloads the data."""
    stat = os.stat(path)
    key = (os.fspath(path), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        if len(_HASHES) > 4096:
            _HASHES.clear()
        _HASHES[key] = _sha256_uncached(path)
    return _HASHES[key]


_HASHES: dict[tuple[str, int, int], str] = {}


def _sha256_uncached(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _input_file(ds: RunDataset) -> Path:
    """The file a system reads for ``ds``: its answer-free inputs, or for a sealed dataset their
    re-keyed copy (ids under HMAC, the alias for the name), made once per content and kept,
    content-addressed, in private storage (the key and label are part of the address)."""
    source = Path(ds.source)
    if not ds.sealed:
        return source
    address = hashlib.sha256(
        f"{_sha256_file(source)}\0{ds.id_key}\0{ds.label}\0{ds.format}".encode()
    ).hexdigest()
    target = Path(settings.PRIVATE_STORAGE_ROOT) / "run-inputs" / f"{address}{''.join(source.suffixes)}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        rekeyed, _ = inputs.rekey(ds.format, source.read_bytes(), key=bytes.fromhex(ds.id_key), label=ds.label)
        partial = target.with_name(target.name + f".{os.getpid()}.part")
        partial.write_bytes(rekeyed)
        os.replace(partial, target)  # atomic: a concurrent claim sees the whole file or none
    return target


def _entry(name: str, url: str, path: Path) -> TicketFile:
    return TicketFile(name=name, url=url, sha256=_sha256_file(path), size=path.stat().st_size)


def run_ticket_build(plan: RunPlan) -> RunTicket:
    submission = Submission.objects.select_related("phase__challenge").get(pk=plan.submission_id)
    system = phase_system_settings(phase=submission.phase)
    base = f"runs/{plan.submission_id}/{plan.attempt}"
    modes = submission.phase.protocol_modes
    protocol = {"modes": list(modes), "format": submission.phase.challenge.metric_suite} if modes else None
    missing = [ds.label for ds in plan.datasets if not ds.source]
    if missing:
        raise ServiceError(f"no input file for dataset {', '.join(missing)}")
    return RunTicket(
        submission_id=plan.submission_id,
        attempt=plan.attempt,
        kind=plan.kind,
        image_digest=plan.image_digest,
        base_image=plan.base_image,
        runtime=plan.runtime,
        gpus=system.gpus,
        limits=plan.limits,
        # The system reads its modes here too (and READERBOARD_MODE in each mode's container).
        manifest={**plan.manifest(), **({"protocol": {"modes": protocol["modes"], "transport": "stdio"}}
                                        if protocol else {})},
        inputs=[_entry(ds.input_name, f"{base}/inputs/{i}/", _input_file(ds)) for i, ds in enumerate(plan.datasets)],
        # An interactive run writes nothing: every answer is recorded as it is given (dialog_runs).
        output_names=[] if protocol else [ds.output_name for ds in plan.datasets],
        system=_entry("system", f"{base}/system/", Path(plan.upload_path))
        if plan.kind in SYSTEM_KINDS and plan.upload_path else None,
        heartbeat_s=settings.RUN_HEARTBEAT_S,
        max_bundle_uncompressed=settings.MAX_BUNDLE_UNCOMPRESSED_BYTES,
        max_image_uncompressed=settings.MAX_IMAGE_UNCOMPRESSED_BYTES,
        protocol=protocol,
        hidden_data=plan.hidden_data,
    )


def run_input_path(*, submission: Submission, index: int) -> Path | None:
    datasets = submission_run_plan(submission=submission).datasets
    if not 0 <= index < len(datasets) or not datasets[index].source:
        return None
    return _input_file(datasets[index])


def run_input_paths(*, submission: Submission) -> list[Path] | None:
    """The files behind all of a ticket's input entries, in its order (``run_input_path`` of each);
    None if one has no file."""
    datasets = submission_run_plan(submission=submission).datasets
    if not all(ds.source for ds in datasets):
        return None
    return [_input_file(ds) for ds in datasets]


def _results_dir(submission_id: int) -> Path:
    return Path(settings.PRIVATE_STORAGE_ROOT) / "run-results" / str(submission_id)


class ResultRefused(ServiceError):
    pass


def submission_run_result_store(*, submission: Submission, outcome: dict[str, Any],
                                 outputs: dict[str, UploadedFile]) -> None:
    """Keep what a compute worker handed back for the control worker to score, and extend the
    run's lease to the result's scoring lease meanwhile (the worker's heartbeats have stopped; while
    the result is kept the reaper sends it again rather than re-queue the run: ``run_results_kept``).

    Checked here, before anything is kept: the outcome's shape, and that every output is one the
    run has, no larger than the output limit (a worker sends what its system wrote, no more).
    """
    plan = submission_run_plan(submission=submission)
    slugs = plan.slugs_by_output()
    limit = plan.limits.output_mb * 1024 * 1024
    unknown = sorted(set(outputs) - set(slugs))
    if unknown:
        raise ResultRefused(f"outputs the run does not have: {', '.join(unknown)}")
    if any(f.size is None or f.size > limit for f in outputs.values()):
        raise ResultRefused("an output is larger than the run's output limit")
    try:
        outcome_from_json(outcome, outputs={name: b"" for name in outputs}, slugs=slugs)
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultRefused(f"the outcome is not of the expected shape ({exc})") from None
    folder = _results_dir(submission.pk)
    partial = folder.with_name(f"{submission.pk}.{submission.attempts}.part")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "outputs").mkdir(parents=True)
    for name, upload in outputs.items():
        with open(partial / "outputs" / slugs[name], "wb") as fh:
            for chunk in upload.chunks():
                fh.write(chunk)
    (partial / "outcome.json").write_text(json.dumps({"attempt": submission.attempts, "outcome": outcome}),
                                          encoding="utf-8")
    extended = Submission.objects.filter(pk=submission.pk, status=Status.RUNNING, attempts=submission.attempts).update(
        lease_expires_at=timezone.now() + dt.timedelta(seconds=settings.RESULT_SCORING_LEASE_S)
    )
    if extended != 1:
        shutil.rmtree(partial, ignore_errors=True)
        raise ResultRefused("the run is not this attempt's any more")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(partial, folder)
    enqueue_on_commit(FINISH_RUN, submission.pk, queue=TASK_QUEUES[FINISH_RUN])


class LiveLogRefused(ServiceError):
    pass


# The platform's notes a live log may carry (a cut, a lost stream): a few short sentences.
LIVE_LOG_NOTES = 4
LIVE_LOG_NOTE_CHARS = 500


def submission_run_live_log_store(*, submission: Submission, log: object, notes: object) -> bool:
    """Keep what the running system printed so far, as its worker captured it (``log``: the whole
    capture, under the run's log cap; ``notes``: the platform's notes on it, [{"text", "at"}]).

    ``submission`` is the worker's current attempt (the internal API's ``run_required``); the
    store checks it again as it writes (``run_attempt_live_log_store``).  Refused, with what is
    wrong: a log that is not text or is longer than the run's log can be (``log_cap_chars``, the
    cap of the final log), notes not of that shape.  False: the attempt ended meanwhile.
    """
    if not isinstance(log, str):
        raise LiveLogRefused("'log' is not text")
    plan = submission_run_plan(submission=submission)
    cap = log_cap_chars(plan.limits, containers=len(submission.phase.protocol_modes))
    if len(log) > cap:
        raise LiveLogRefused(f"the log has {len(log)} characters, more than the run's log can hold ({cap})")
    if not isinstance(notes, list) or len(notes) > LIVE_LOG_NOTES:
        raise LiveLogRefused(f"'notes' is not a list of at most {LIVE_LOG_NOTES} notes")
    kept: list[dict[str, Any]] = []
    for note in notes:
        text, at = (note.get("text"), note.get("at")) if isinstance(note, dict) else (None, None)
        if not isinstance(text, str) or len(text) > LIVE_LOG_NOTE_CHARS or not (
                at is None or (isinstance(at, int) and not isinstance(at, bool) and 0 <= at <= len(log))):
            raise LiveLogRefused('a note is not {"text": a short sentence, "at": a position in the log or null}')
        kept.append({"text": log_clean(text), "at": at})
    # Cleaned as the final log is (idempotent: the worker's capture cleaned it already, so positions stay).
    return run_attempt_live_log_store(submission_id=submission.pk, number=submission.attempts, log=log_clean(log),
                                      notes=kept)


def run_results_waiting(*, now: dt.datetime | None = None) -> tuple[list[int], list[int]]:
    """Results to send again and results removed, the reaper's question each round.

    Sent again: a result handed back and not scored after ``REDISPATCH_AFTER_S`` (its FINISH_RUN
    message was lost: a broker restarted empty), and a result whose scoring was lost (the run is
    ``scoring`` with its lease passed: the control worker died while scoring it).  Removed: results of
    runs that are no longer at that attempt or running or scoring (scored, cancelled, reaped), results
    that cannot be read, and results kept longer than ``SCORING_LEASE_S`` (scored again and again
    without an end): their runs are then reaped as any run whose worker is gone."""
    now = now or timezone.now()
    folders = _result_folders()
    current = {pk: (status, attempts, lease) for pk, status, attempts, lease in Submission.objects.filter(
        pk__in=list(folders), status__in=(Status.RUNNING, Status.SCORING)).values_list(
        "pk", "status", "attempts", "lease_expires_at")}
    resend, stale = [], []
    for pk, folder in folders.items():
        try:
            stored = json.loads((folder / "outcome.json").read_text(encoding="utf-8"))
            age = now.timestamp() - (folder / "outcome.json").stat().st_mtime
        except (OSError, ValueError):
            if pk in current:
                logger.warning("submission %s: its handed-back result cannot be read; dropped", pk)
            stale.append(pk)
            continue
        status, attempts, lease = current.get(pk, (None, None, None))
        if attempts is None or attempts != stored.get("attempt"):
            stale.append(pk)
        elif age > settings.SCORING_LEASE_S:
            logger.warning("submission %s: its handed-back result waited %.0f s unscored; dropped", pk, age)
            stale.append(pk)
        elif status == Status.RUNNING and age > settings.REDISPATCH_AFTER_S:
            resend.append(pk)
        elif status == Status.SCORING and (lease is None or lease < now):
            resend.append(pk)
    for pk in stale:
        shutil.rmtree(folders[pk], ignore_errors=True)
    return resend, stale


def run_results_kept() -> list[int]:
    """Runs whose handed-back result is kept: the reaper sends their finish again, it does not
    re-queue them (``lifecycle.submissions_reap``'s ``keep``).  Asked after ``run_results_waiting``,
    which removed the results of other attempts and those that cannot be read."""
    return sorted(pk for pk, folder in _result_folders().items() if (folder / "outcome.json").is_file())


def _result_folders() -> dict[int, Path]:
    root = Path(settings.PRIVATE_STORAGE_ROOT) / "run-results"
    return {int(p.name): p for p in root.iterdir() if p.name.isdigit()} if root.exists() else {}


def submission_run_result_score(submission_id: int) -> None:
    """Score a run's handed-back result (the control worker's task); safe twice and beside itself.

    The result is removed once the run moved on from it (scored, failed, re-queued, cancelled), not
    before: a scoring lost half-way is resumed from it (``run_results_waiting``).  A finish that finds
    the run scored by another within its lease does nothing and leaves the result to that one; a
    result that cannot be read is dropped, and its run reaped as one whose worker is gone."""
    folder = _results_dir(submission_id)
    try:
        stored = json.loads((folder / "outcome.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        logger.info("submission %s: no result waiting (scored already)", submission_id)
        return
    submission = Submission.objects.select_related("phase__challenge").get(pk=submission_id)
    try:
        attempt = int(stored["attempt"])
        outputs = {p.name: p.read_bytes() for p in (folder / "outputs").iterdir()}
        slugs = submission_run_plan(submission=submission).slugs_by_output()
        outcome: RunOutcome = outcome_from_json(stored["outcome"], outputs={}, slugs=slugs)
    except (OSError, KeyError, TypeError, ValueError):
        logger.exception("submission %s: its handed-back result cannot be read; dropped", submission_id)
        shutil.rmtree(folder, ignore_errors=True)
        return
    outcome.outputs = outputs
    submission_run_finish(submission_id, attempt=attempt, outcome=outcome, kept=True)
    if not Submission.objects.filter(pk=submission_id, attempts=attempt,
                                     status__in=(Status.RUNNING, Status.SCORING)).exists():
        shutil.rmtree(folder, ignore_errors=True)
