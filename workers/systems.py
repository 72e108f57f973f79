"""Running a submitted system end to end: claim, prepare, run sandboxed, hand the outputs back.

The platform's services own every state change (``leaderboard.submissions.system_services``);
this module owns the host side: the run folder, the engine, and the reaper's
clean-up of containers whose worker died.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
from pathlib import Path

import docker
from django.conf import settings

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
    ArchiveError,
    OutputTooLarge,
    RunDataset,
    RunOutcome,
    RunPlan,
    bundle_extract,
    output_read,
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


def system_evaluate(submission_id: int) -> None:
    """Run a queued system once; a second call for the same submission does nothing."""
    plan = submission_run_claim(submission_id, worker=worker_name())
    if plan is None:
        logger.info("submission %s: not queued any more (already claimed, final or gone)", submission_id)
        return
    attempt = plan.attempt
    run_dir = _run_dir(submission_id, attempt)
    _run_dir_remove(run_dir)
    try:
        client = runner.engine()
        with runner.run_area(run_dir, _run_area_mb(plan)):
            _run(plan, run_dir, client)
    except (runner.ImageError, ArchiveError) as exc:
        submission_run_fail(submission_id, attempt=attempt, reason=f"the system could not be started: {exc}")
    except runner.PlatformError as exc:
        logger.error("submission %s: platform error: %s", submission_id, exc)
        if submission_run_platform_failure(submission_id, attempt=attempt, reason=str(exc)):
            dispatch_again(submission_id)
    except Exception as exc:
        logger.exception("submission %s: the run failed", submission_id)
        if submission_run_platform_failure(submission_id, attempt=attempt, reason=type(exc).__name__):
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
    if plan.kind == "docker_image":
        image = runner.image_load(client, Path(plan.upload_path), expected_id=plan.image_digest)
    else:
        image = plan.base_image
        if not runner.image_exists(client, image):
            raise runner.PlatformError(f"the base image {image} is not built on this worker")
    output_dir = run_dir / "output"
    with runner.output_area(output_dir, plan.limits.output_mb) as capped:
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
    return reaped
