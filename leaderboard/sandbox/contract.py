"""The run contract: what the platform and a compute worker agree on about one system's run.

Settings of a challenge's systems (``SystemSettings``, ``Limits``), how runs on hidden data are
sandboxed apart (``HiddenRuns``), the plan the trusted side makes once per attempt and keeps
(``RunPlan``, ``RunDataset``; ``RunPlan.as_json``/``from_json``), the ticket a compute worker is
given (``RunTicket``, ``TicketFile``) and the outcome it hands back (``RunOutcome``, ``RunNote``,
``outcome_as_json``/``outcome_from_json``).  The web process and the workers both use it, so it
imports nothing from Django, from the rest of ``leaderboard`` or from ``workers`` (an import-linter
contract checks it).

The contract a system follows (docs/participants/systems.md):

* it reads ``/input/manifest.json`` and the files it lists (``/input/<name>.jsonl.gz``,
  MRQA format with every answer field removed; Split III datasets under their
  sealed alias) and writes ``/output/<name>.json`` = ``{qid: answer}`` for each;
* a Docker image runs its own ENTRYPOINT/CMD; a code bundle (zip) is unpacked
  read-only at ``/system`` and runs as ``sh /system/run.sh`` or
  ``python3 /system/run.py`` on the challenge's base image;
* it runs as uid 10001 without network, with the limits of :class:`Limits`.
"""

from __future__ import annotations

import enum
import errno
import functools
import hashlib
import os
import re
import signal
import tarfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scoring import inputs

DEFAULT_BASE_IMAGE = "readerboard/python:bookworm"
# The trusted side's queues (prediction files, the reaper and finishing runs): never a run queue.
RESERVED_QUEUES = frozenset({"celery", "control"})
BUNDLE_ENTRY_POINTS = (("run.sh", ["sh", "/system/run.sh"]), ("run.py", ["python3", "/system/run.py"]))
# How a system declares that it answers turn by turn: an image by its label, a bundle by
# {"protocol": "interactive"} in a readerboard.json at its top.
PROTOCOL_LABEL = "org.readerboard.protocol"
BUNDLE_DECLARATION = "readerboard.json"
INTERACTIVE = "interactive"
PROTOCOLS = ("batch", INTERACTIVE)
# What a team may keep stored per challenge (its uploads: prediction files, image archives,
# bundles) unless the challenge's ``systems: {storage_mb_per_team: N}`` says otherwise.
DEFAULT_STORAGE_MB_PER_TEAM = 4096
# OSErrors that say the host is out of room or failing, whatever is being written: the platform's
# fault, retried, never the team's.
PLATFORM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.ENOMEM, errno.EROFS})


@dataclass(frozen=True)
class Limits:
    """What a system gets; stated up front on the challenge page and in the manifest."""

    cpus: float = 1.0
    memory_mb: int = 1024
    pids: int = 128
    nofile: int = 1024
    tmp_mb: int = 64
    shm_mb: int = 16
    output_mb: int = 64
    time_limit_s: float = 600.0
    log_bytes: int = 256 * 1024
    # The interactive protocol's time per request: an answer later than this ends the dialogs.
    turn_limit_s: float = 10.0

    def as_env(self) -> dict[str, str]:
        return {
            "READERBOARD_CPUS": f"{self.cpus:g}",
            "READERBOARD_MEMORY_MB": str(self.memory_mb),
            "READERBOARD_TIME_LIMIT_S": f"{self.time_limit_s:g}",
            "READERBOARD_OUTPUT_MB": str(self.output_mb),
        }


def limits_stated(limits: Limits, *, batch: bool, interactive: bool) -> tuple[str, ...]:
    """What a system gets, in words, for the protocols a challenge's phases run: the challenge page
    and the starting kit state these.  A batch run is held to the size of what it writes to
    ``/output`` (the platform reads its answers there); an interactive run writes nothing there
    (``/output`` is not read) and is held to a time per answer instead."""
    both = batch and interactive
    terms = [f"{limits.cpus:g} CPU", f"{limits.memory_mb} MiB of memory (swap included)", f"{limits.pids} processes",
             f"{limits.nofile} open files", f"{limits.time_limit_s:g} s of wall-clock time"
             + (" per mode" if interactive and not batch else "")]
    if batch:
        terms.append(f"{limits.output_mb} MiB of output" + (" (batch phases)" if both else ""))
    if interactive:
        terms.append(f"{limits.turn_limit_s:g} s per answer" + (" (turn-by-turn phases)" if both else ""))
    return tuple(terms)


# The queue runs go to unless the challenge names another: compute workers consume it with -Q cpu.
DEFAULT_RUN_QUEUE = "cpu"
# Systems of one team that may run at once (on all compute workers together), unless the challenge
# says otherwise: a team's burst cannot hold every worker while other teams wait.
DEFAULT_MAX_RUNNING_PER_TEAM = 2
# Runs of one team on hidden data the platform may fail in a day (not counted, so free) before the
# team's next hidden runs wait for an organizer's look (submissions.selectors.run_queue_order), unless the
# challenge says otherwise.
DEFAULT_PLATFORM_FAILURES_PER_DAY = 3
_QUEUE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


@dataclass(frozen=True)
class SystemSettings:
    """A challenge's ``system_settings``: base image for bundles, runtime, limits, storage budget,
    and where its runs go: the queue (``cpu``, ``gpu`` or an organizer's own), the GPUs a run is given,
    and how many runs of one team may run at once."""

    base_image: str = DEFAULT_BASE_IMAGE
    # "" means the platform default (READERBOARD_CONTAINER_RUNTIME); "runc" or "runsc" to force one.
    runtime: str = ""
    limits: Limits = field(default_factory=Limits)
    # Bytes of uploads (all kinds) each team may keep stored in the challenge, in MiB.
    storage_mb_per_team: int = DEFAULT_STORAGE_MB_PER_TEAM
    queue: str = DEFAULT_RUN_QUEUE
    # GPUs requested from the engine per run (Docker device requests, NVIDIA runtime); 0: none.
    gpus: int = 0
    max_running_per_team: int = DEFAULT_MAX_RUNNING_PER_TEAM
    platform_failures_per_day: int = DEFAULT_PLATFORM_FAILURES_PER_DAY

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> SystemSettings:
        raw = dict(raw or {})
        limits = raw.pop("limits", {}) or {}
        unknown = sorted(set(limits) - set(Limits.__dataclass_fields__)) + sorted(
            set(raw) - {"base_image", "runtime", "storage_mb_per_team", "queue", "gpus", "max_running_per_team",
                        "platform_failures_per_day"}
        )
        if unknown:
            raise ValueError(f"unknown system settings: {', '.join(unknown)}")
        storage = raw.get("storage_mb_per_team", DEFAULT_STORAGE_MB_PER_TEAM)
        if isinstance(storage, bool) or not isinstance(storage, int) or storage <= 0:
            raise ValueError(f"storage_mb_per_team must be a positive whole number of MiB, not {storage!r}")
        queue = raw.get("queue", DEFAULT_RUN_QUEUE)
        if not isinstance(queue, str) or not _QUEUE_NAME.match(queue) or queue in RESERVED_QUEUES:
            raise ValueError(f"queue must be a name of lower-case letters, digits, - and _ (cpu, gpu, or one of "
                             f"your own; not {', '.join(sorted(RESERVED_QUEUES))}), not {queue!r}")
        gpus = raw.get("gpus", 0)
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            raise ValueError(f"gpus must be a whole number of GPUs per run (0 for none), not {gpus!r}")
        running = raw.get("max_running_per_team", DEFAULT_MAX_RUNNING_PER_TEAM)
        if isinstance(running, bool) or not isinstance(running, int) or running <= 0:
            raise ValueError(f"max_running_per_team must be a positive whole number, not {running!r}")
        failures = raw.get("platform_failures_per_day", DEFAULT_PLATFORM_FAILURES_PER_DAY)
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 0:
            raise ValueError(f"platform_failures_per_day must be a whole number (0: hold after the first), "
                             f"not {failures!r}")
        return cls(
            base_image=str(raw.get("base_image") or DEFAULT_BASE_IMAGE),
            runtime=str(raw.get("runtime") or ""),
            limits=Limits(**limits),
            storage_mb_per_team=storage,
            queue=queue,
            gpus=gpus,
            max_running_per_team=running,
            platform_failures_per_day=failures,
        )

    def as_json(self) -> dict[str, Any]:
        return {"base_image": self.base_image, "runtime": self.runtime, "limits": asdict(self.limits),
                "storage_mb_per_team": self.storage_mb_per_team, "queue": self.queue, "gpus": self.gpus,
                "max_running_per_team": self.max_running_per_team,
                "platform_failures_per_day": self.platform_failures_per_day}


@dataclass(frozen=True)
class RunDataset:
    """One dataset as the system sees it (``label`` is the alias while sealed)."""

    slug: str
    label: str
    format: str
    source: str  # path of the answer-free inputs on the platform's storage
    input_name: str
    output_name: str
    # Sealed: the system reads re-keyed ids (HMAC with this hex key) and the alias, never
    # the dataset's own ids or name; "" while the dataset is public.
    id_key: str = ""

    @property
    def sealed(self) -> bool:
        return bool(self.id_key)

    def qids_for_system(self, qids: Sequence[str]) -> dict[str, str]:
        """{the id the system reads and answers under: the dataset's own id}, every question.

        For a sealed dataset this is the map the re-keying made (recomputed from the
        stored inputs with the same key: cheaper to redo than to carry).
        """
        if not self.sealed:
            return {qid: qid for qid in qids}
        stat = os.stat(self.source)
        return dict(_system_qids(self.source, stat.st_size, stat.st_mtime_ns, self.format, self.id_key, self.label))


# A control worker scores run after run of the same sealed datasets: the map of each is made once
# per content (path, size, modification time: the inputs change only when an organizer reloads) and
# key.  Bounded: a few datasets' maps, a few MB each at the largest benchmarks' sizes.
@functools.lru_cache(maxsize=16)
def _system_qids(source: str, _size: int, _mtime_ns: int, fmt: str, id_key: str, label: str) -> dict[str, str]:
    _, visible = inputs.rekey(fmt, Path(source).read_bytes(), key=bytes.fromhex(id_key), label=label)
    return visible


@dataclass(frozen=True)
class RunPlan:
    submission_id: int
    attempt: int
    kind: str
    challenge: str
    phase: str
    portion: str
    upload_path: str
    image_digest: str
    base_image: str
    runtime: str
    limits: Limits
    datasets: list[RunDataset]
    # The run reads data its team never sees (``phase_runs_on_hidden_data``, the one rule): the worker
    # then sandboxes it apart (``workers.runner.sandbox_choose``).
    hidden_data: bool = False

    def manifest(self) -> dict[str, Any]:
        return {
            "challenge": self.challenge,
            "phase": self.phase,
            "portion": self.portion,
            "datasets": [
                {"name": d.label, "input": d.input_name, "output": d.output_name, "format": d.format}
                for d in self.datasets
            ],
            "limits": asdict(self.limits),
        }

    def slugs_by_output(self) -> dict[str, str]:
        """{output file name: dataset slug}: how a run's outputs are named back to its datasets."""
        return {d.output_name: d.slug for d in self.datasets}

    def as_json(self) -> dict[str, Any]:
        """The plan as its claim stores it on the attempt (``Submission.run_plan``), trusted side only:
        it names datasets, files and re-keying keys, never a gold answer."""
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> RunPlan:
        """The inverse of ``as_json``; a field the plan does not have is refused (TypeError)."""
        return cls(**{
            **raw,
            "limits": Limits(**raw["limits"]),
            "datasets": [RunDataset(**d) for d in raw["datasets"]],
        })


@dataclass(frozen=True)
class RunNote:
    """The platform's own message about a run, kept out of its log so that a system cannot imitate one.

    ``text`` is the platform's words only, never a quote of what the system or its image wrote;
    ``at`` is the position in the log the note is about (where bytes were cut), None for the run.
    """

    text: str
    at: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "at": self.at}


class RunnerKill(enum.StrEnum):
    """Why the runner itself killed a run: the evidence ``run_end_classify`` needs that a kill was
    the platform's rule, applied (a limit) or the platform's choice (an abort)."""

    TIME_LIMIT = "time_limit"
    OUTPUT_LIMIT = "output_limit"
    ABORT = "abort"  # cancelled or taken over: nothing is reported


class RunEnd(enum.StrEnum):
    """How a run ended, from the evidence the runner and the engine hold.  Whose it is:
    the team's for EXITED, TIMED_OUT, OUTPUT_CAPPED, OUT_OF_MEMORY, NOT_STARTED; the platform's
    (retried, not counted) for KILLED_OUTSIDE and NO_STATUS; ABORTED is nobody's (not reported)."""

    EXITED = "exited"  # the system's own exit, whatever its code (a crash by its own fault included)
    TIMED_OUT = "timed_out"
    OUTPUT_CAPPED = "output_capped"
    OUT_OF_MEMORY = "out_of_memory"
    NOT_STARTED = "not_started"
    ABORTED = "aborted"
    # Killed by a signal that neither the runner sent nor the engine explains (an operator's
    # `docker kill`, a node drain, another tenant of the engine).
    KILLED_OUTSIDE = "killed_outside"
    NO_STATUS = "no_status"  # the engine gave no exit status


# Signals that come from outside a process (someone sent them); the others (SIGSEGV, SIGABRT,
# SIGBUS, SIGFPE, SIGILL...) are a program's own fault, raised by what it ran.
_SENT_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT})


# A container's peak memory at this share of its limit or more, at a SIGKILL: the OOM killer's.
OOM_PEAK_SHARE = 0.95


def run_end_classify(*, runner_killed: RunnerKill | None, oom_killed: bool, exit_code: int | None,
                     not_started: bool = False, output_too_large: bool = False,
                     peak_memory_bytes: int | None = None, memory_limit_mb: int | None = None) -> RunEnd:
    """How a run ended: the one rule.  A kill is the team's only on evidence: the engine flagged
    it out of memory, or the runner killed it at a limit.  A death by a sent signal that neither
    explains is KILLED_OUTSIDE.  ``output_too_large`` is an output area found full or over the
    cap after the run (a fact about what it wrote, whoever stopped it).

    The engine's cgroup is evidence too: a SIGKILL with the container's peak memory at its limit
    (``OOM_PEAK_SHARE`` of it) is the kernel's OOM killer, though the engine may not flag it (it
    picked one process of several, or gVisor's sentry counted the memory)."""
    if not_started:
        return RunEnd.NOT_STARTED
    if runner_killed is RunnerKill.ABORT:
        return RunEnd.ABORTED
    if runner_killed is RunnerKill.TIME_LIMIT:
        return RunEnd.TIMED_OUT
    if runner_killed is RunnerKill.OUTPUT_LIMIT or output_too_large:
        return RunEnd.OUTPUT_CAPPED
    if oom_killed:
        return RunEnd.OUT_OF_MEMORY
    if (exit_code == 128 + signal.SIGKILL and peak_memory_bytes is not None and memory_limit_mb
            and peak_memory_bytes >= OOM_PEAK_SHARE * memory_limit_mb * 2**20):
        return RunEnd.OUT_OF_MEMORY
    if exit_code is None or exit_code < 0:
        return RunEnd.NO_STATUS
    if exit_code > 128 and exit_code - 128 in _SENT_SIGNALS:
        return RunEnd.KILLED_OUTSIDE
    return RunEnd.EXITED


def outcome_end(outcome: RunOutcome, *, memory_limit_mb: int | None = None) -> RunEnd:
    """The outcome's end: as its worker classified it, or (an older worker's, without ``end``)
    classified here by the same rule from the fields it has (``timed_out`` was only ever set by
    the runner's own kill)."""
    if outcome.end is not None:
        return outcome.end
    killed = RunnerKill.TIME_LIMIT if outcome.timed_out else None
    return run_end_classify(runner_killed=killed, oom_killed=outcome.oom_killed, exit_code=outcome.exit_code,
                            not_started=bool(outcome.not_started), output_too_large=outcome.output_too_large,
                            peak_memory_bytes=outcome.peak_memory_bytes, memory_limit_mb=memory_limit_mb)


@dataclass
class RunOutcome:
    """What a run produced, as the worker hands it to the platform to judge and score."""

    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    output_too_large: bool
    duration_s: float
    logs: str  # what the system wrote to stdout and stderr, capped and cleaned (log_clean)
    runtime: str
    # The container's peak memory use, where the engine's cgroup could be read.
    peak_memory_bytes: int | None = None
    # dataset slug -> the bytes written, or an error saying why none can be read
    outputs: dict[str, bytes] = field(default_factory=dict)
    output_errors: dict[str, str] = field(default_factory=dict)
    # slugs among output_errors whose file was over the output limit
    outputs_too_large: set[str] = field(default_factory=set)
    # Why the engine could not start the container (its command missing or not executable),
    # in the platform's words; "" when it started.
    not_started: str = ""
    notes: list[RunNote] = field(default_factory=list)
    # How it ended (run_end_classify), None from a worker older than the field.
    end: RunEnd | None = None


@dataclass(frozen=True)
class TicketFile:
    """A file a compute worker downloads for a run: where (a path under the internal API),
    what it must hash to, and how large it is (the worker stops reading past that)."""

    name: str
    url: str
    sha256: str
    size: int


# A run's inputs in one response (``runs/<id>/<attempt>/inputs/``): an uncompressed ustar stream of
# regular files named by their position in ``RunTicket.inputs`` ("0", "1", ...), in that order.  One
# request instead of one per file (each cost about 7 ms before any byte moved); each file is still
# streamed to disk in chunks and checked against its ticket entry's size and sha256 as it arrives.
TAR_BLOCK = 512
TAR_CHUNK = 1024 * 1024


class InputsStreamError(Exception):
    """The inputs stream is not the one the ticket describes (a file's name, size or sha256)."""


def inputs_tar_stream(paths: Sequence[Path], *, chunk: int = TAR_CHUNK) -> Iterator[bytes]:
    """The files at ``paths`` as the inputs stream, read a chunk at a time (never a whole file)."""
    for index, path in enumerate(paths):
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            info = tarfile.TarInfo(str(index))
            info.size, info.mode = size, 0o644
            yield info.tobuf(format=tarfile.USTAR_FORMAT)
            left = size
            while left > 0:
                data = fh.read(min(chunk, left))
                if not data:  # shorter than it was a moment ago (replaced meanwhile): the worker's check fails
                    break
                left -= len(data)
                yield data
            yield b"\0" * (left + (-size % TAR_BLOCK))
    yield b"\0" * (2 * TAR_BLOCK)


def inputs_tar_read(read: Callable[[int], bytes], items: Sequence[TicketFile], folder: Path, *,
                    chunk: int = TAR_CHUNK) -> None:
    """Write the inputs stream's files to ``folder`` under their ticket names, checking each as it
    arrives: its name (its position), its size, its sha256.  ``read(n)`` returns up to ``n`` bytes
    (b"" at the end).  A file that does not match is removed and InputsStreamError raised."""

    def exactly(n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            data = read(min(n - got, chunk))
            if not data:
                raise InputsStreamError(f"the inputs stream ended early ({got} of {n} bytes of a block)")
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    for index, item in enumerate(items):
        try:
            info = tarfile.TarInfo.frombuf(exactly(TAR_BLOCK), "utf-8", "strict")
        except tarfile.HeaderError as exc:
            raise InputsStreamError(f"input {index} ({item.name}): not a tar header ({exc})") from None
        if info.name != str(index) or info.type != tarfile.REGTYPE or info.size != item.size:
            raise InputsStreamError(f"input {index} ({item.name}): the stream holds {info.name!r} of "
                                    f"{info.size} bytes, the ticket {item.size} bytes")
        target = folder / item.name
        digest = hashlib.sha256()
        try:
            with open(target, "wb") as fh:
                left = item.size
                while left > 0:
                    data = read(min(chunk, left))
                    if not data:
                        raise InputsStreamError(f"input {index} ({item.name}): the stream ended early")
                    left -= len(data)
                    digest.update(data)
                    fh.write(data)
            if digest.hexdigest() != item.sha256:
                raise InputsStreamError(f"input {index} ({item.name}) did not match its sha256")
            exactly(-item.size % TAR_BLOCK)
        except BaseException:
            target.unlink(missing_ok=True)
            raise


@dataclass(frozen=True)
class RunTicket:
    """What a compute worker is given for one run, and all it is given (``RunPlan`` stays on the
    trusted side): the files to fetch, the manifest, the cage's settings.  No storage path, no
    dataset slug (a sealed dataset's slug is its real name), no re-keying secret, no gold."""

    submission_id: int
    attempt: int
    kind: str
    image_digest: str
    base_image: str
    runtime: str
    gpus: int
    limits: Limits
    manifest: dict[str, Any]
    inputs: list[TicketFile]
    output_names: list[str]
    system: TicketFile | None
    heartbeat_s: float
    max_bundle_uncompressed: int
    max_image_uncompressed: int
    # The interactive protocol, None for a batch run: {"modes": [...], "format": "quac"
    # or "coqa"}.  The system answers turn by turn; the gold comes from the trusted side, turn by turn.
    protocol: dict[str, Any] | None = None
    # As RunPlan.hidden_data: the worker gives the run its own image copy, runtime and host.
    hidden_data: bool = False

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> RunTicket:
        return cls(**{
            **raw,
            "limits": Limits(**raw["limits"]),
            "inputs": [TicketFile(**f) for f in raw["inputs"]],
            "system": TicketFile(**raw["system"]) if raw.get("system") else None,
        })


def outcome_as_json(outcome: RunOutcome) -> dict[str, Any]:
    """A run's outcome without its outputs (they travel as files), for the trip from a compute
    worker to the platform; on the compute side outputs and their errors are keyed by output file
    name (it never learns a dataset's slug)."""
    return {
        "exit_code": outcome.exit_code, "timed_out": outcome.timed_out, "oom_killed": outcome.oom_killed,
        "output_too_large": outcome.output_too_large, "duration_s": outcome.duration_s, "logs": outcome.logs,
        "runtime": outcome.runtime, "peak_memory_bytes": outcome.peak_memory_bytes,
        "not_started": outcome.not_started, "notes": [n.as_json() for n in outcome.notes],
        "output_errors": dict(outcome.output_errors), "outputs_too_large": sorted(outcome.outputs_too_large),
        "end": None if outcome.end is None else outcome.end.value,
    }


def outcome_from_json(raw: dict[str, Any], *, outputs: dict[str, bytes], slugs: dict[str, str]) -> RunOutcome:
    """The inverse of ``outcome_as_json``: ``slugs`` maps output file names back to dataset slugs;
    a name the run does not have is refused (KeyError), never invented."""

    def typed(key: str, kind: type | tuple[type, ...]) -> Any:
        value = raw.get(key)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ValueError(f"outcome field {key!r} is not of the expected type")
        return value

    exit_code = raw.get("exit_code")
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise ValueError("outcome field 'exit_code' is not of the expected type")
    peak = raw.get("peak_memory_bytes")
    if peak is not None and (isinstance(peak, bool) or not isinstance(peak, int)):
        raise ValueError("outcome field 'peak_memory_bytes' is not of the expected type")
    notes = [RunNote(text=str(n["text"]), at=n.get("at") if isinstance(n.get("at"), int) else None)
             for n in typed("notes", list)]
    errors = typed("output_errors", dict)
    end = raw.get("end")
    if end is not None and end not in {e.value for e in RunEnd}:
        raise ValueError("outcome field 'end' is not one of the known ends")
    return RunOutcome(
        exit_code=exit_code,
        timed_out=typed("timed_out", bool),
        oom_killed=typed("oom_killed", bool),
        output_too_large=typed("output_too_large", bool),
        duration_s=float(typed("duration_s", (int, float))),
        logs=typed("logs", str),
        runtime=typed("runtime", str),
        peak_memory_bytes=peak,
        outputs={slugs[name]: data for name, data in outputs.items()},
        output_errors={slugs[name]: str(message) for name, message in errors.items()},
        outputs_too_large={slugs[name] for name in typed("outputs_too_large", list)},
        not_started=typed("not_started", str),
        notes=notes,
        end=None if end is None else RunEnd(end),
    )


# C0 and C1 control characters and DEL, but tab and newline: a log must not drive the reader's
# terminal (ESC sequences) or cut a string short (NUL) in whatever shows it.
_CONTROL = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)])


def log_clean(text: str) -> str:
    """A log as it can be shown anywhere: control characters removed, carriage returns as newlines
    (a progress bar's updates become lines instead of one overwritten line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_CONTROL)


# Room for the platform's line that heads each mode's part of an interactive run's log ("== Gold history ==").
LOG_MODE_HEADER_CHARS = 64


def log_cap_chars(limits: Limits, *, containers: int = 1) -> int:
    """The most characters a run's log can hold: its worker keeps ``log_bytes`` of each container's
    output (``workers.runner.LogCapture``), and a byte decodes to at most one character; an
    interactive run has a container per mode, each part headed by the platform's line."""
    containers = max(1, containers)
    return limits.log_bytes * containers + (LOG_MODE_HEADER_CHARS * containers if containers > 1 else 0)


# The lock file every compute worker of one host shares (READERBOARD_HOST_LOCK).
DEFAULT_HOST_LOCK = Path("/run/readerboard-compute.lock")


@dataclass(frozen=True)
class HiddenRuns:
    """How a worker runs systems on hidden data (``workers.runner.sandbox_choose``); its defaults are
    the compute worker's and the web app's settings' (READERBOARD_HIDDEN_RUNTIME, ...), written here once.

    ``runtime``: READERBOARD_HIDDEN_RUNTIME (default ``runsc``; empty for the worker's default).
    ``isolate``: READERBOARD_HIDDEN_ISOLATION (default on): the private image copy and the host to
    itself; off only for trials and for the test that shows the channel is there without it.
    ``lock_path``: READERBOARD_HOST_LOCK, a file every compute worker of a host opens (the same one).
    """

    runtime: str = "runsc"
    isolate: bool = True
    lock_path: Path = DEFAULT_HOST_LOCK
