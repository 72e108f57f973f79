"""Running one submitted system on a compute worker: fetch, prepare, run sandboxed, hand back.

No Django here, no database, no gold: a compute worker knows a run only by its ``RunTicket`` and
talks to the platform through a ``RunTransport`` (``workers.internal_api`` over HTTP with a token
on compute hosts; ``workers.control_runs.LocalTransport`` in-process, for tests and tools on the web
host).  The platform owns every state change and every verdict; this module owns the host side:
the run folder, the engine, and the clean-up of what a dead worker on this host left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import docker
import docker.errors
import requests.exceptions

from leaderboard.sandbox.archives import (
    ArchiveError,
    OutputTooLarge,
    bundle_extract,
    output_read,
    run_image_reference,
)
from leaderboard.sandbox.contract import (
    PLATFORM_ERRNOS,
    HiddenRuns,
    RunNote,
    RunOutcome,
    RunTicket,
    TicketFile,
)
from scoring.dialogs import Mode, Revealed, Session, dialogs_of_file
from workers import runner
from workers.converse import Conversation, converse

logger = logging.getLogger(__name__)

# Containers carry the name of the worker that started them, so that a worker on the same
# host can tell which ones a dead worker left behind (and never touch a live sibling's).
LABEL_WORKER = "readerboard.worker"


def worker_name() -> str:
    """host:pid; a worker on the same host can tell whether the process is still there."""
    return f"{socket.gethostname()}:{os.getpid()}"


# Containers carry their worker's owner id too: the name of a lock file that the worker holds
# (flock) for its life, in ``readerboard-owners/`` beside the host lock (READERBOARD_HOST_LOCK), a
# folder of the engine's host (a hostPath in Kubernetes) that every worker of that engine shares.
# Any of them tells a dead owner by taking its lock, whatever its host name or PID namespace (a
# replacement pod); the lock file says the owner's instance and work folder, where its run
# folders (with their tmpfs mounts) and its image list are.
LABEL_OWNER = "readerboard.owner"
OWNERS_FOLDER = "readerboard-owners"
# A container this long past its deadline label is removed whoever owns it: its deadline helper
# (runner.DEADLINE_GRACE_S) should have ended it, and its worker killed it at the limit before.
DEADLINE_SWEEP_SLACK_S = 60
_owner: tuple[Path, int, str, int] | None = None  # work folder, pid, owner id, the locked file's fd
_owner_lock = threading.Lock()


def worker_owner(config: ComputeConfig) -> str:
    """This process's owner id (made and locked on first use, again after a fork): its lock file,
    ``<work_dir>/owners/<id>.lock``, stays locked until the process is gone, however it ends.  It
    holds the instance, so that a sweeper of another platform sharing the folder leaves it alone."""
    global _owner
    with _owner_lock:
        if _owner is not None and _owner[0] == config.work_dir and _owner[1] == os.getpid():
            return _owner[2]
        folder = owners_folder(config)
        folder.mkdir(parents=True, exist_ok=True)
        ident = f"{re.sub(r'[^A-Za-z0-9.-]', '_', socket.gethostname()[:40])}-{os.getpid()}-{secrets.token_hex(6)}"
        fd = os.open(folder / f"{ident}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps({"instance": config.instance, "work_dir": str(config.work_dir)}).encode())
        _owner = (config.work_dir, os.getpid(), ident, fd)
        return ident


def owners_folder(config: ComputeConfig) -> Path:
    return config.hidden.lock_path.parent / OWNERS_FOLDER


def _owner_dead(folder: Path, ident: str, instance: str) -> tuple[int, Path] | None:
    """The dead owner's lock, taken (its fd, to close once its leftovers are gone) and its work
    folder; None while its worker lives, when it is another instance's, or when the file is gone
    (another sweeper had it)."""
    try:
        fd = os.open(folder / f"{ident}.lock", os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        said = json.loads(os.pread(fd, 65536, 0) or b"{}")
        if isinstance(said, dict) and said.get("instance") == instance and isinstance(said.get("work_dir"), str):
            return fd, Path(said["work_dir"])
    except (BlockingIOError, ValueError):
        pass
    os.close(fd)
    return None


@dataclass(frozen=True)
class RunFailure:
    """Why a run ended before it produced an outcome, and whose fault that is."""

    participant: bool  # the team's: final at once, counted; else the platform's: retried, not counted
    reason: str  # for the failure reason (a team reads it in full on public data)
    detail: str = ""  # for the organizers' alert only (a traceback)


class RunTransport(Protocol):
    """How a compute worker reaches the platform: the only way, for every step of a run."""

    def claim(self, hint: int | None = None) -> RunTicket | None:
        """The next run of this worker's queue, or None (``hint``: the one run to take, for a local run)."""

    def fetch(self, ticket: RunTicket, item: TicketFile, target: Path) -> None:
        """Write ``item`` to ``target``, checked against its size and sha256 (PlatformError if not)."""

    def heartbeat(self, submission_id: int, attempt: int) -> bool:
        """Renew the run's lease; False once the run is not this attempt's any more."""

    def finish(self, ticket: RunTicket, outcome: RunOutcome) -> None:
        """Hand the outcome (log, figures, outputs keyed by output file name) to the platform."""

    def fail(self, ticket: RunTicket, failure: RunFailure) -> None:
        """The run produced no outcome: the team's fault (final) or the platform's (retried)."""

    def live_log(self, ticket: RunTicket, log: str, notes: Sequence[RunNote]) -> None:
        """What the system printed so far, while it runs (the whole capture, capped as the final log
        is): the platform shows it to whom it decides.  Sent once, never retried: the next one is due
        in seconds, and the outcome carries the log."""

    def dialog_turn(self, ticket: RunTicket, *, mode: str, dataset: int, dialog: int, turn: int | None,
                    answers: Sequence[Mapping[str, str]] = (), latencies_s: Sequence[float | None] = ()) -> Revealed:
        """The interactive protocol: record ``answers`` to turns ``turn``, ``turn + 1``... of a dialog on the
        trusted side (``turn`` None: open the dialog) and return what the mode reveals of the gold."""


@runtime_checkable
class InputsInOne(Protocol):
    """A transport that fetches all of a run's inputs in one call (the internal API over HTTP);
    one without it fetches them one by one (``RunTransport.fetch``)."""

    def fetch_inputs(self, ticket: RunTicket, folder: Path) -> None:
        """Write every input of the ticket into ``folder``, each checked (PlatformError if not)."""


class RemoteGold:
    """A session's gold source on a compute worker: the trusted side.  The answer goes first; the
    gold the mode allows comes back in the reply (nothing of it is held here).

    Every call costs the platform a request (a few milliseconds), so only the modes that reveal
    something call at each turn (gold, adversarial); in the others (own history, single question)
    a dialog's answers go in one call when it ends, or at ``flush`` for a dialog left unfinished.
    """

    def __init__(self, transport: RunTransport, ticket: RunTicket, mode: str, dataset: int, lengths: Sequence[int]
                 ) -> None:
        self.transport, self.ticket, self.mode, self.dataset = transport, ticket, Mode(mode), dataset
        self.lengths = lengths
        self.reveals = self.mode in (Mode.GOLD, Mode.ADVERSARIAL)
        self.pending: dict[int, tuple[int, list[Mapping[str, str]], list[float | None]]] = {}

    def opening(self, dialog: int) -> Revealed:
        if self.mode != Mode.ADVERSARIAL:
            return Revealed()  # nothing to show before an answer
        return self.transport.dialog_turn(self.ticket, mode=self.mode, dataset=self.dataset, dialog=dialog, turn=None)

    def answered(self, dialog: int, turn: int, answer: Mapping[str, str], latency_s: float | None = None) -> Revealed:
        if self.reveals:
            return self.transport.dialog_turn(self.ticket, mode=self.mode, dataset=self.dataset, dialog=dialog,
                                              turn=turn, answers=[answer], latencies_s=[latency_s])
        first, answers, latencies = self.pending.setdefault(dialog, (turn, [], []))
        answers.append(answer)
        latencies.append(latency_s)
        if turn == self.lengths[dialog] - 1:
            self._send(dialog)
        return Revealed()

    def flush(self) -> None:
        """Send the answers of dialogs left unfinished (the system stopped, or ran out of time)."""
        for dialog in list(self.pending):
            self._send(dialog)

    def _send(self, dialog: int) -> None:
        first, answers, latencies = self.pending.pop(dialog)
        self.transport.dialog_turn(self.ticket, mode=self.mode, dataset=self.dataset, dialog=dialog, turn=first,
                                   answers=answers, latencies_s=latencies)


@dataclass(frozen=True)
class ComputeConfig:
    work_dir: Path
    run_image_repository: str
    runtime: str = ""  # "" = the engine's default, unless the challenge forces one
    hidden: HiddenRuns = HiddenRuns()  # how runs on hidden data are sandboxed apart

    @property
    def instance(self) -> str:
        """The platform instance this worker belongs to (``runner.LABEL_INSTANCE`` on all it makes):
        its run image repository, which each platform sharing an engine has its own."""
        return self.run_image_repository


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
def lease_kept(heartbeat: Callable[[], bool], *, every: float, name: str = "lease") -> Iterator[None]:
    """Renew the run's lease in a thread for as long as the worker holds the run.

    Preparing a run (downloading inputs, unpacking a bundle, ``docker load`` of an image of up
    to gigabytes) can take longer than the lease, and the container's own heartbeat starts only
    with the container: without this the reaper would take a busy worker for a dead one and queue
    the run again.  The beats stop once the run is not this attempt's any more (scoring,
    cancelled, reaped); the container's heartbeat is what stops a cancelled run.
    """
    def beat() -> bool:
        try:
            return heartbeat()
        except Exception:  # the platform unreachable for a while: the reaper will judge the lease
            logger.exception("%s: lease not renewed", name)
            return False

    with runner.repeated(beat, every=every, name=name):
        yield


def run_ticket(transport: RunTransport, ticket: RunTicket, config: ComputeConfig) -> None:
    """Run a claimed ticket once and report how it ended; never raises for the run's own faults.

    A run that cannot produce an outcome ends by whose fault that is (``run_failure_classify``):
    the platform decides what follows (the team's fails at once; the platform's is queued again
    after a back-off, at most ``MAX_RUN_ATTEMPTS`` in all).
    """
    submission_id, attempt = ticket.submission_id, ticket.attempt
    began = time.monotonic()
    # Under a folder named after this process's owner id (no colon, which would end a bind mount's
    # path): any worker of the engine removes a dead one's (leftovers_remove).
    run_dir = config.work_dir / "runs" / worker_owner(config) / f"{submission_id}-{attempt}"
    run_dir_remove(run_dir)
    back = _HandBack(transport, ticket, began)
    try:
        client = runner.engine()
        with lease_kept(back.heartbeat, every=ticket.heartbeat_s, name=f"lease-{submission_id}-{attempt}"), \
                runner.run_area(run_dir, _run_area_mb(ticket)):
            _run(transport, ticket, config, run_dir, client, back)
    except Exception as exc:
        if back.done:
            # The platform has the outcome: what failed is this host's clean-up, which the next
            # sweep finishes (leftovers_remove); the run is not the platform's to retry.
            logger.error("submission %s: clean-up after the hand-back failed: %s\n%s", submission_id, exc,
                         _traceback(exc))
            return
        failure = run_failure_classify(exc)
        if failure.participant:
            logger.info("submission %s: %s", submission_id, failure.reason)
        else:
            logger.error("submission %s: attempt %s ended by the platform: %s\n%s", submission_id, attempt,
                         failure.reason, failure.detail)
        transport.fail(ticket, failure)
    finally:
        # The areas are unmounted on the way out of their blocks, whatever happened inside.
        run_dir_remove(run_dir)


class _HandBack:
    """The outcome's trip to the platform, made as soon as the outcome is whole: before the run's
    sandbox, image and folders are taken down (a hidden run's page eviction, unmounts), which
    then happen while the platform scores.  The lease's beats stop first: none renews the lease
    the stored result set (``worker_api.submission_run_result_store``), none is sent after it."""

    def __init__(self, transport: RunTransport, ticket: RunTicket, began: float) -> None:
        self.transport, self.ticket, self.began = transport, ticket, began
        self.lock = threading.Lock()
        self.beating = True  # the lease is renewed until the hand-back begins
        self.done = False  # the platform took the outcome

    def heartbeat(self) -> bool:
        with self.lock:
            return self.beating and self.transport.heartbeat(self.ticket.submission_id, self.ticket.attempt)

    def __call__(self, outcome: RunOutcome) -> None:
        ran = time.monotonic()
        with self.lock:
            self.beating = False
        self.transport.finish(self.ticket, outcome)
        self.done = True
        logger.info("submission %s: attempt %s done in %.2f s (container %.2f s), handed back in %.2f s",
                    self.ticket.submission_id, self.ticket.attempt, ran - self.began, outcome.duration_s,
                    time.monotonic() - ran)


def run_dir_remove(run_dir: Path) -> None:
    runner.area_release(run_dir / "output")
    runner.area_release(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)


def _run_area_mb(ticket: RunTicket) -> int:
    """Room for the inputs, the manifest and an unpacked bundle."""
    inputs_bytes = sum(f.size for f in ticket.inputs)
    bundle = ticket.max_bundle_uncompressed if ticket.kind == "code_bundle" else 0
    return (inputs_bytes + bundle) // 2**20 + 16


def run_prepare(transport: RunTransport, ticket: RunTicket, run_dir: Path) -> tuple[Path, Path | None, list[str] | None]:
    """The run folder: input/ (questions only, manifest.json) and, for bundles, system/.

    Inputs are copies written here (never links: see runner.run_area), fetched in one call where
    the transport can (``InputsInOne``), else one by one, each checked.  Returns the input folder
    and, for bundles, the system folder and the bundle's command.
    """
    input_dir = run_dir / "input"
    input_dir.mkdir(parents=True)
    if isinstance(transport, InputsInOne):
        transport.fetch_inputs(ticket, input_dir)
    else:
        for item in ticket.inputs:
            transport.fetch(ticket, item, input_dir / item.name)
    for item in ticket.inputs:
        (input_dir / item.name).chmod(0o644)
    manifest = input_dir / "manifest.json"
    manifest.write_text(json.dumps(ticket.manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    manifest.chmod(0o644)
    input_dir.chmod(0o755)
    run_dir.chmod(0o755)
    system_dir, command = None, None
    if ticket.kind == "code_bundle":
        assert ticket.system is not None
        archive = run_dir / "system.zip"
        transport.fetch(ticket, ticket.system, archive)
        system_dir = run_dir / "system"
        try:
            info = bundle_extract(archive, system_dir, max_uncompressed=ticket.max_bundle_uncompressed)
        finally:
            archive.unlink(missing_ok=True)
        command = info.command
    runner.files_neutralise(run_dir)
    return input_dir, system_dir, command


def outputs_collect(ticket: RunTicket, output_dir: Path, outcome: RunOutcome) -> None:
    limit = ticket.limits.output_mb * 1024 * 1024
    for name in ticket.output_names:
        try:
            outcome.outputs[name] = output_read(output_dir, name, limit_bytes=limit)
        except ArchiveError as exc:
            outcome.output_errors[name] = str(exc)
            if isinstance(exc, OutputTooLarge):
                outcome.outputs_too_large.add(name)


def _run(transport: RunTransport, ticket: RunTicket, config: ComputeConfig, run_dir: Path,
         client: docker.DockerClient, hand_back: Callable[[RunOutcome], None]) -> None:
    """Prepare the run folder, run the container and hand the outcome back (``hand_back``) before
    taking the sandbox down; nothing is handed back when the run was taken away meanwhile
    (cancelled, or re-queued by the reaper)."""
    submission_id, attempt = ticket.submission_id, ticket.attempt
    input_dir, system_dir, command = run_prepare(transport, ticket, run_dir)
    output_dir = run_dir / "output"
    sandbox = runner.sandbox_choose(hidden=ticket.hidden_data, challenge_runtime=ticket.runtime,
                                    worker_runtime=config.runtime, policy=config.hidden)
    with run_image(transport, ticket, config, run_dir, client) as loaded, \
            runner.sandboxed(client, loaded, sandbox, config.hidden, keep_copy=loaded == ticket.base_image,
                              instance=config.instance) as image, \
            runner.output_area(output_dir, ticket.limits.output_mb) as capped:
        spec = runner.RunSpec(
            image=image,
            command=command,
            input_dir=input_dir,
            output_dir=output_dir,
            system_dir=system_dir,
            limits=ticket.limits,
            runtime=sandbox.runtime,
            gpus=ticket.gpus,
            labels={runner.LABEL_SUBMISSION: str(submission_id), runner.LABEL_ATTEMPT: str(attempt),
                    LABEL_WORKER: worker_name(), LABEL_OWNER: worker_owner(config),
                    runner.LABEL_INSTANCE: config.instance},
            deadline_helper=runner.deadline_helper_install(config.work_dir),
        )
        if ticket.protocol is not None:
            hand_back(_converse_run(transport, ticket, config, client, input_dir, spec))
            return
        outcome, aborted = runner.run_container(
            client,
            spec,
            output_capped=capped,
            heartbeat=lambda: transport.heartbeat(submission_id, attempt),
            heartbeat_every=ticket.heartbeat_s,
            live_log=lambda log, notes: transport.live_log(ticket, log, notes),
        )
        if aborted:
            logger.info("submission %s: attempt %s stopped (cancelled or re-assigned)", submission_id, attempt)
            return
        if not (outcome.timed_out or outcome.output_too_large):
            outputs_collect(ticket, output_dir, outcome)
        hand_back(outcome)


def _converse_run(transport: RunTransport, ticket: RunTicket, config: ComputeConfig, client: docker.DockerClient,
                  input_dir: Path, base: runner.RunSpec) -> RunOutcome:
    """An interactive run: each mode in a container of its own (nothing learnt in one carries into
    the next), every dialog of every dataset in order.  The answers are on the trusted side already;
    the outcome holds the figures, the log of each mode, and how each mode ended, as notes.

    Whatever a mode's end (a verdict of ``workers.converse``), what was answered stays answered and
    is scored; only a system that cannot be started at all fails the run.
    """
    assert ticket.protocol is not None
    fmt = ticket.protocol["format"]
    datasets = [dialogs_of_file(fmt, input_dir / item.name, gold=False) for item in ticket.inputs]
    outcome = RunOutcome(exit_code=0, timed_out=False, oom_killed=False, output_too_large=False, duration_s=0.0,
                         logs="", runtime=base.runtime or "default")
    logs: list[str] = []
    for mode in ticket.protocol["modes"]:
        golds = [RemoteGold(transport, ticket, mode, d, [len(dialog.turns) for dialog in dialogs])
                 for d, dialogs in enumerate(datasets)]
        sessions = [Session(dialog, Mode(mode), golds[d], index=k)
                    for d, dialogs in enumerate(datasets) for k, dialog in enumerate(dialogs)]
        # The system learns from its environment that it answers on stdin, and in which mode.
        spec = dataclasses.replace(base, environment={"READERBOARD_PROTOCOL": "interactive", "READERBOARD_MODE": mode})
        header = f"== {Mode(mode).label} =="

        def live(log: str, _notes: list[RunNote], header: str = header) -> None:
            # As the outcome's log will read: the modes played so far, then this one's so far.
            transport.live_log(ticket, "\n".join([*logs, f"{header}\n{log}"]), [])

        talk: Conversation = converse(client, spec, sessions, turn_limit_s=ticket.limits.turn_limit_s,
                                      live_log=live)
        for gold in golds:
            gold.flush()
        if talk.not_started:
            outcome.not_started, outcome.exit_code = talk.not_started, 127
            outcome.notes.append(RunNote(talk.not_started))
            return outcome
        outcome.duration_s += talk.duration_s
        if talk.peak_memory_bytes is not None:
            outcome.peak_memory_bytes = max(outcome.peak_memory_bytes or 0, talk.peak_memory_bytes)
        total = sum(len(s.dialog.turns) for s in sessions)
        latencies = sorted(talk.latencies_s)
        figures = (f"; latency p50 {_ms(latencies, 0.5)} ms, p95 {_ms(latencies, 0.95)} ms" if latencies else "")
        ended = "" if talk.verdict == "finished" else f"; ended: {talk.verdict}: {talk.reason}"
        # In the platform's words only: counts, times and the verdict's own message (never the system's text).
        outcome.notes.append(RunNote(f"{Mode(mode).label}: {talk.turns_answered} of {total} turns answered"
                                     f"{figures}{ended}"))
        logs.append(f"{header}\n{talk.log}")
    outcome.logs = "\n".join(logs)
    return outcome


def _ms(ordered: list[float], q: float) -> str:
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


@contextlib.contextmanager
def run_image(transport: RunTransport, ticket: RunTicket, config: ComputeConfig, run_dir: Path,
              client: docker.DockerClient) -> Iterator[str]:
    """The image the run runs, by a name of its own: a bundle's base image, or the submission's
    archive (fetched, checked layer by layer, loaded under ``<repository>/<id>:<attempt>``), whose
    reference is removed once the run is over (the engine drops the image with its last name).

    A platform fault after the load keeps the image on this host under ``<repository>/<id>:kept``
    for a while (``KEPT_FOR``): the retry, if it comes here, tags it instead of copying and loading
    an archive of up to gigabytes again.  It was loaded from this submission's own archive, checked
    layer by layer, so its id stands for exactly that content.  A team's fault keeps nothing."""
    if ticket.kind != "docker_image":
        if not runner.image_exists(client, ticket.base_image):
            raise runner.PlatformError(f"the base image {ticket.base_image} is not built on this worker")
        yield ticket.base_image
        return
    assert ticket.system is not None
    reference = run_image_reference(config.run_image_repository, ticket.submission_id, ticket.attempt)
    kept = _KeptImages(config.work_dir, client, config.run_image_repository)
    kept.prune()
    archive = run_dir.parent / f"{ticket.submission_id}-{ticket.attempt}.tar"  # outside the run's tmpfs
    images = _ImageRegistry(config.work_dir, worker_owner(config))
    images.add(reference)
    try:
        loaded = kept.take(ticket.submission_id, expected_id=ticket.image_digest, reference=reference)
        if loaded is None:
            transport.fetch(ticket, ticket.system, archive)
            # The lease is renewed meanwhile (lease_kept): a large image outlasts a lease.
            loaded = runner.image_load(client, archive, expected_id=ticket.image_digest, reference=reference,
                                       max_uncompressed=ticket.max_image_uncompressed)
            archive.unlink(missing_ok=True)
        yield loaded
    except Exception as exc:
        if not run_failure_classify(exc).participant and runner.image_exists(client, reference):
            kept.keep(ticket.submission_id, reference)
        raise
    else:
        kept.drop(ticket.submission_id)  # the run is over: no retry will want it
    finally:
        archive.unlink(missing_ok=True)
        if runner.image_remove(client, reference):
            images.discard(reference)


# How long an image stays on a host after a platform fault, for the run's retry.
KEPT_FOR = dt.timedelta(hours=1)


class _KeptImages:
    """Images kept after a platform fault, one file each under ``<work>/kept/`` (its mtime: when)."""

    def __init__(self, work_dir: Path, client: docker.DockerClient, repository: str) -> None:
        self.folder = work_dir / "kept"
        self.client = client
        self.repository = repository

    def _reference(self, submission_id: int) -> str:
        return f"{self.repository}/{submission_id}:kept"

    def keep(self, submission_id: int, reference: str) -> None:
        kept = self._reference(submission_id)
        try:
            self.client.images.get(reference).tag(kept)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            logger.warning("image %s not kept for a retry: %s", reference, exc)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / str(submission_id)).touch()
        logger.info("kept %s for the run's retry on this host", kept)

    def take(self, submission_id: int, *, expected_id: str, reference: str) -> str | None:
        """Tag the kept image as this attempt's ``reference``; None if there is none (or not that id)."""
        kept = self._reference(submission_id)
        try:
            image = self.client.images.get(kept)
        except docker.errors.ImageNotFound:
            return None
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return None
        if image.id != expected_id:
            self.drop(submission_id)
            return None
        image.tag(reference)
        logger.info("the retry of %s runs the image kept on this host (no copy, no load)", submission_id)
        return reference

    def drop(self, submission_id: int) -> None:
        reference = self._reference(submission_id)
        if (self.folder / str(submission_id)).exists() or runner.image_exists(self.client, reference):
            runner.image_remove(self.client, reference)
        (self.folder / str(submission_id)).unlink(missing_ok=True)

    def prune(self) -> None:
        """Drop what was kept longer than ``KEPT_FOR`` (its retry went to another host, or never came)."""
        limit = time.time() - KEPT_FOR.total_seconds()
        for path in sorted(self.folder.glob("*")) if self.folder.exists() else []:
            if path.name.isdigit() and path.stat().st_mtime < limit:
                self.drop(int(path.name))


class _ImageRegistry:
    """The run references this worker process loaded, in a file of its own under the work folder,
    so that a worker on the same host can remove those of a worker that died mid-run."""

    def __init__(self, work_dir: Path, name: str) -> None:
        self.folder = work_dir / "images"
        self.path = self.folder / name

    def add(self, reference: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(reference + "\n")

    def discard(self, reference: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            kept = [r for r in self.path.read_text(encoding="utf-8").split() if r != reference]
            self.path.write_text("".join(f"{r}\n" for r in kept), encoding="utf-8")

    def references(self) -> list[str]:
        try:
            return self.path.read_text(encoding="utf-8").split()
        except FileNotFoundError:
            return []


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dead_here(name: str) -> bool:
    """A worker named host:pid on this host whose process is gone."""
    host, _, pid = name.rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not _pid_alive(int(pid))


def leftovers_remove(config: ComputeConfig, *, starting: bool = False, now: float | None = None) -> list[str]:
    """Remove what workers of this engine that died (kill -9, power loss, a pod replaced) left
    behind: their containers, their run images, their run folders; and any container of this
    instance past its deadline label by more than ``DEADLINE_SWEEP_SLACK_S``.  A live worker's
    are never touched, nor another instance's (``runner.instance_filter``).

    A dead worker is one whose owner lock (``worker_owner``) can be taken, whatever its host name;
    an older worker's containers (no owner label) by host:pid, on this host only.  Any loop calls
    it: at a worker's start, before each run, and periodically (``leftovers_sweeper``).
    ``starting``: this process has run nothing yet, so anything under its own host:pid name is a
    predecessor's (a worker in a container that restarted is pid 1 again, on the same host name).
    """
    me = worker_name()
    mine = worker_owner(config)
    now = time.time() if now is None else now

    def dead(name: str) -> bool:
        return (starting and name == me) or _dead_here(name)

    removed: list[str] = []
    try:
        client = runner.engine()
        # This instance's only: a dead worker of another platform on the same engine is its own.
        containers = client.containers.list(all=True, filters=runner.instance_filter(config.instance))
    except (runner.PlatformError, docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        logger.warning("leftovers not checked: %s", exc)
        return removed
    owners = owners_folder(config)
    taken: dict[str, tuple[int, Path] | None] = {}  # owner id -> its lock taken and work folder (dead), or None

    def owner_dead(ident: str) -> bool:
        if ident == mine or "/" in ident or ident.startswith("."):
            return False
        if ident not in taken:
            taken[ident] = _owner_dead(owners, ident, config.instance)
        return taken[ident] is not None

    try:
        for container in containers:
            labels = container.labels
            owner, ident = labels.get(LABEL_WORKER, ""), labels.get(LABEL_OWNER, "")
            deadline = labels.get(runner.LABEL_DEADLINE, "")
            why = ""
            if ident and owner_dead(ident):
                why = f"of dead worker {ident}"
            elif not ident and owner and dead(owner):
                why = f"of {owner}"
            elif deadline.isdigit() and now > int(deadline) + DEADLINE_SWEEP_SLACK_S:
                why = f"past its deadline ({deadline})"
            if why:
                with contextlib.suppress(docker.errors.APIError):
                    container.remove(force=True)
                    removed.append(f"container {container.name} {why}")
        # Owners with no container left: their images and run folders, then their lock files.
        for path in sorted(owners.glob("*.lock")) if owners.exists() else []:
            owner_dead(path.stem)
        # Image lists and run folders: an older worker's in this work folder by host:pid, a dead
        # owner's in the work folder its lock file names (another worker's, on the same host).
        lists = [(config.work_dir, p.name) for p in sorted((config.work_dir / "images").glob("*")) if dead(p.name)]
        runs = config.work_dir / "runs"
        folders = [d for d in (sorted(runs.iterdir()) if runs.exists() else [])
                   if d.name.isdigit() and (not _pid_alive(int(d.name)) or (starting and int(d.name) == os.getpid()))]
        for ident, found in taken.items():
            if found is not None:
                lists.append((found[1], ident))
                folders.append(found[1] / "runs" / ident)
        for work_dir, name in lists:
            registry = _ImageRegistry(work_dir, name)
            for reference in registry.references():
                if runner.image_remove(client, reference):
                    removed.append(f"image {reference}")
            registry.path.unlink(missing_ok=True)
        for owner_dir in folders:
            if owner_dir.is_dir():
                for run_dir in owner_dir.iterdir():
                    run_dir_remove(run_dir)
                shutil.rmtree(owner_dir, ignore_errors=True)
                removed.append(f"run folders of {owner_dir.name}")
        for ident, found in taken.items():
            if found is not None:
                (owners / f"{ident}.lock").unlink(missing_ok=True)
    finally:
        for found in taken.values():
            if found is not None:
                os.close(found[0])
    if removed:
        logger.warning("removed what a dead worker on this host left: %s", "; ".join(removed))
    return removed


def leftovers_sweeper_start(config: ComputeConfig, *, every: float = 60.0) -> Callable[[], None]:
    """``leftovers_remove`` every ``every`` seconds in a thread of its own; returns what stops it.
    What a worker loop (Celery's or ``python -m workers.compute``) starts beside itself, so that a
    dead worker's leftovers go even on an engine whose live workers are all idle."""
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(every):
            try:
                leftovers_remove(config)
            except Exception:
                logger.exception("the periodic sweep of dead workers' leftovers failed")

    thread = threading.Thread(target=sweep, name="leftovers-sweeper", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join()

    return halt
