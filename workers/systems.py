"""Running a submitted system end to end: claim, prepare, run sandboxed, hand the outputs back.

The platform's services own every state change (``leaderboard.submissions.system_services``);
this module owns the host side: the run folder, the engine, and the reaper's
clean-up of containers whose worker died.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests.exceptions
from django import db
from django.conf import settings

from leaderboard.submissions.storage import run_images_in_use
from leaderboard.submissions.system_services import (
    Reaped,
    submission_run_claim,
    submission_run_fail,
    submission_run_finish,
    submission_run_heartbeat,
    submission_run_platform_failure,
    submissions_reap,
)
from leaderboard.submissions.systems import (
    PLATFORM_ERRNOS,
    ArchiveError,
    OutputTooLarge,
    RunDataset,
    RunOutcome,
    RunPlan,
    bundle_extract,
    output_read,
    run_image_reference,
)
from scoring import inputs
from workers import runner
from workers.dispatch import dispatch_again

logger = logging.getLogger(__name__)


def worker_name() -> str:
    """host:pid; a restarted worker on the same host can tell its predecessors are dead."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _run_dir(submission_id: int, attempt: int) -> Path:
    return Path(settings.RUNS_DIR) / f"{submission_id}-{attempt}"


def _place_input(ds: RunDataset, target: Path) -> None:
    """Copy one dataset's answer-free inputs into the run (never a link: see runner.run_area).

    A sealed dataset is re-keyed on the way: the system reads HMAC ids and the alias,
    not the dataset's own ids (``CoQA``'s ``<story>_<turn>``, DuoRC's ``/m/...``)
    or name; scoring maps the answers back (``submission_run_finish``).
    """
    if ds.sealed:
        data = Path(ds.source).read_bytes()
        rekeyed, _ = inputs.rekey(ds.format, data, key=bytes.fromhex(ds.id_key), label=ds.label)
        target.write_bytes(rekeyed)
    else:
        shutil.copyfile(ds.source, target)
    target.chmod(0o644)


def run_prepare(plan: RunPlan, run_dir: Path) -> tuple[Path, Path | None, list[str] | None]:
    """The run folder: input/ (questions only, manifest.json) and, for bundles, system/.

    Returns the input folder and, for bundles, the system folder and the bundle's command.
    """
    input_dir = run_dir / "input"
    input_dir.mkdir(parents=True)
    for ds in plan.datasets:
        if not ds.source:
            raise runner.PlatformError(f"no input file for dataset {ds.label}")
        _place_input(ds, input_dir / ds.input_name)
    manifest = input_dir / "manifest.json"
    manifest.write_text(json.dumps(plan.manifest(), indent=2, ensure_ascii=False), encoding="utf-8")
    manifest.chmod(0o644)
    input_dir.chmod(0o755)
    run_dir.chmod(0o755)
    system_dir, command = None, None
    if plan.kind == "code_bundle":
        system_dir = run_dir / "system"
        info = bundle_extract(plan.upload_path, system_dir, max_uncompressed=settings.MAX_BUNDLE_UNCOMPRESSED_BYTES)
        command = info.command
    runner.files_neutralise(run_dir)
    return input_dir, system_dir, command


def _run_area_mb(plan: RunPlan) -> int:
    """Room for the inputs (re-keyed ones are about as large), the manifest and an unpacked bundle."""
    inputs_bytes = sum(os.path.getsize(ds.source) for ds in plan.datasets if ds.source)
    bundle = settings.MAX_BUNDLE_UNCOMPRESSED_BYTES if plan.kind == "code_bundle" else 0
    return (2 * inputs_bytes + bundle) // 2**20 + 16


def outputs_collect(plan: RunPlan, output_dir: Path, outcome: RunOutcome) -> None:
    limit = plan.limits.output_mb * 1024 * 1024
    for ds in plan.datasets:
        try:
            outcome.outputs[ds.slug] = output_read(output_dir, ds.output_name, limit_bytes=limit)
        except ArchiveError as exc:
            outcome.output_errors[ds.slug] = str(exc)
            if isinstance(exc, OutputTooLarge):
                outcome.outputs_too_large.add(ds.slug)


@dataclass(frozen=True)
class RunFailure:
    """Why a run ended before it produced an outcome, and whose fault that is."""

    participant: bool  # the team's: final at once, counted; else the platform's: retried, not counted
    reason: str  # for the failure reason (a team reads it in full on public data)
    detail: str = ""  # for the organizers' alert only (a traceback)


def run_failure_classify(exc: Exception) -> RunFailure:
    """Whose fault a run that stopped with ``exc`` is: the one place that decides it.

    The team's: the engine refuses its image (no command, more layers than the engine takes, a
    hard link out of a layer: ``runner.ImageError``) or its bundle cannot be unpacked (a file and
    a folder of one name, over-long names: ``ArchiveError``).  It would fail the same way again.
    Everything else is the platform's: the engine unreachable or failing (``PlatformError``, a
    Docker or HTTP error), the host's disk full or failing (``OSError``: what the bundle causes
    is an ``ArchiveError`` by then), or a bug.  A worker that dies is the reaper's to find.
    """
    if isinstance(exc, (runner.ImageError, ArchiveError)):
        return RunFailure(True, f"the system could not be started: {exc}")
    if isinstance(exc, runner.PlatformError):
        return RunFailure(False, str(exc))
    if isinstance(exc, OSError) and exc.errno in PLATFORM_ERRNOS:
        return RunFailure(False, f"the worker's disk or memory failed: {exc.strerror}", _traceback(exc))
    if isinstance(exc, (docker.errors.DockerException, requests.exceptions.RequestException)):
        return RunFailure(False, "the container engine failed", _traceback(exc))
    return RunFailure(False, type(exc).__name__, _traceback(exc))


def _traceback(exc: Exception) -> str:
    return "".join(traceback.format_exception(exc))


@contextlib.contextmanager
def lease_kept(submission_id: int, *, attempt: int) -> Iterator[None]:
    """Renew the run's lease in a thread for as long as the worker holds the run.

    Preparing a run (copying inputs, unpacking a bundle, ``docker load`` of an image of up to
    gigabytes, 8 s for 130 small layers) can take longer than the lease, and the container's own
    heartbeat starts only with the container: without this the reaper would take a busy worker
    for a dead one and queue the run again, to load everything again.  The beats stop once the
    run is not this attempt's any more (scoring, cancelled, reaped); the container's heartbeat
    is what stops a cancelled run.
    """
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.RUN_HEARTBEAT_S):
                if not submission_run_heartbeat(submission_id, attempt=attempt):
                    return
        except Exception:  # a database that went away: the reaper will judge the lease
            logger.exception("submission %s: lease not renewed", submission_id)
        finally:
            db.connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"lease-{submission_id}-{attempt}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def system_evaluate(submission_id: int) -> None:
    """Run a queued system once; a second call for the same submission does nothing.

    A run that cannot produce an outcome ends by whose fault that is (``run_failure_classify``):
    the team's fails at once and counts; the platform's is queued again after a back-off (the
    next attempt loads nothing that is still in place), at most ``MAX_RUN_ATTEMPTS`` in all, and
    then fails without counting and alerts the organizers.
    """
    plan = submission_run_claim(submission_id, worker=worker_name())
    if plan is None:
        logger.info("submission %s: not queued any more (already claimed, final or gone)", submission_id)
        return
    attempt = plan.attempt
    run_dir = _run_dir(submission_id, attempt)
    _run_dir_remove(run_dir)
    try:
        client = runner.engine()
        with lease_kept(submission_id, attempt=attempt), runner.run_area(run_dir, _run_area_mb(plan)):
            _run(plan, run_dir, client)
    except Exception as exc:
        failure = run_failure_classify(exc)
        if failure.participant:
            logger.info("submission %s: %s", submission_id, failure.reason)
            submission_run_fail(submission_id, attempt=attempt, reason=failure.reason)
        else:
            logger.error("submission %s: attempt %s ended by the platform: %s\n%s", submission_id, attempt,
                         failure.reason, failure.detail)
            if submission_run_platform_failure(submission_id, attempt=attempt, reason=failure.reason,
                                               detail=failure.detail):
                dispatch_again(submission_id)
    finally:
        # The areas are unmounted on the way out of their blocks, whatever happened inside.
        _run_dir_remove(run_dir)


def _run_dir_remove(run_dir: Path) -> None:
    runner.area_release(run_dir / "output")
    runner.area_release(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)


def _run(plan: RunPlan, run_dir: Path, client: docker.DockerClient) -> None:
    """Prepare the run folder, run the container, and hand the outcome to the platform."""
    submission_id, attempt = plan.submission_id, plan.attempt
    input_dir, system_dir, command = run_prepare(plan, run_dir)
    output_dir = run_dir / "output"
    with run_image(plan, client) as image, runner.output_area(output_dir, plan.limits.output_mb) as capped:
        spec = runner.RunSpec(
            image=image,
            command=command,
            input_dir=input_dir,
            output_dir=output_dir,
            system_dir=system_dir,
            limits=plan.limits,
            runtime=plan.runtime or settings.CONTAINER_RUNTIME or None,
            labels={runner.LABEL_SUBMISSION: str(submission_id), runner.LABEL_ATTEMPT: str(attempt)},
        )
        outcome, aborted = runner.run_container(
            client,
            spec,
            output_capped=capped,
            heartbeat=lambda: submission_run_heartbeat(submission_id, attempt=attempt),
            heartbeat_every=settings.RUN_HEARTBEAT_S,
        )
        if aborted:
            logger.info("submission %s: attempt %s stopped (cancelled or re-assigned)", submission_id, attempt)
            return
        if not (outcome.timed_out or outcome.output_too_large):
            outputs_collect(plan, output_dir, outcome)
    submission_run_finish(submission_id, attempt=attempt, outcome=outcome)


@contextlib.contextmanager
def run_image(plan: RunPlan, client: docker.DockerClient) -> Iterator[str]:
    """The image the run runs, by a name of its own: a bundle's base image, or the submission's
    archive, checked layer by layer and loaded under ``<RUN_IMAGE_REPOSITORY>/<id>:<attempt>``,
    then removed with every run reference nothing needs once the run is over."""
    if plan.kind != "docker_image":
        if not runner.image_exists(client, plan.base_image):
            raise runner.PlatformError(f"the base image {plan.base_image} is not built on this worker")
        yield plan.base_image
        return
    reference = run_image_reference(settings.RUN_IMAGE_REPOSITORY, plan.submission_id, plan.attempt)
    release = True
    try:
        # The lease is renewed meanwhile (lease_kept): a large image outlasts a lease.
        yield runner.image_load(client, Path(plan.upload_path), expected_id=plan.image_digest, reference=reference,
                                max_uncompressed=settings.MAX_IMAGE_UNCOMPRESSED_BYTES)
    except Exception as exc:
        # A platform fault queues the run again: its image stays for the next attempt (it is
        # pinned by the queued run), and the reaper's sweep removes it once the run is final.
        release = run_failure_classify(exc).participant
        raise
    finally:
        if release:
            run_images_release(client, finished=(plan.submission_id, plan.attempt))


def run_images_release(client: docker.DockerClient, *, finished: tuple[int, int] | None = None) -> list[str]:
    """Remove the run references no run needs (``storage.run_images_in_use``); the engine drops an
    image with its last name, so a base image (its own tag) or an image another run holds stays.

    ``finished``: the run that just ended, whose own reference goes even if its row still says running.
    """
    try:
        # The engine first, then the database (see run_images_in_use).
        images = runner.run_images(client, repository=settings.RUN_IMAGE_REPOSITORY)
        in_use = run_images_in_use(finished=finished)
        return [i.reference for i in images if not in_use.needs(i) and runner.image_remove(client, i.reference)]
    except runner.PlatformError as exc:
        logger.warning("run images not released: %s", exc)
        return []


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_local_workers(names: list[str]) -> list[str]:
    """Workers named host:pid on this host whose process is gone."""
    host = socket.gethostname()
    dead = []
    for name in names:
        worker_host, _, pid = name.rpartition(":")
        if worker_host == host and pid.isdigit() and not _pid_alive(int(pid)):
            dead.append(name)
    return dead


def runs_reap() -> Reaped:
    """Re-queue runs whose worker died, and stop the containers they left running."""
    from leaderboard.submissions.models import Status, Submission

    running_workers = list(
        Submission.objects.filter(status__in=(Status.RUNNING, Status.SCORING)).values_list("worker", flat=True)
    )
    reaped = submissions_reap(dead_workers=dead_local_workers(running_workers))
    if reaped.stopped:
        try:
            client = runner.engine()
        except runner.PlatformError as exc:
            logger.error("reaper: cannot stop containers: %s", exc)
        else:
            for pk in reaped.stopped:
                killed = runner.containers_kill(client, submission_id=pk)
                if killed:
                    logger.warning("reaper: removed %s container(s) of submission %s", killed, pk)
        for pk in reaped.stopped:
            for run_dir in Path(settings.RUNS_DIR).glob(f"{pk}-*"):
                _run_dir_remove(run_dir)
    _run_images_sweep()
    return reaped


def _run_images_sweep() -> None:
    """The images of runs whose worker died (or whose clean-up failed) go too."""
    try:
        client = runner.engine()
    except runner.PlatformError as exc:
        logger.debug("reaper: no engine to sweep run images: %s", exc)
        return
    removed = run_images_release(client)
    if removed:
        logger.warning("reaper: removed run images no run needs: %s", ", ".join(removed))
