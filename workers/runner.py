"""Running one participant's system in a sandboxed container (Docker SDK; no Django here).

Every run gets the same cage, whatever the image asks for:

* no network (``network_mode="none"``; under gVisor the runtime itself also has none);
* a read-only root file system, a small ``/tmp`` tmpfs, a small ``/dev/shm``;
* all capabilities dropped, ``no-new-privileges`` (setuid binaries do not elevate),
  a fixed non-root uid whatever ``USER`` the image declares;
* limits on memory (swap included), CPUs, processes, open files, log volume,
  output size and wall-clock time, after which the container is killed;
* ``/input`` mounted read-only (questions only: gold never leaves the host),
  ``/output`` the only writable place.

The runner reports what happened (exit code, timeout, OOM, output too large);
turning that into a verdict a person can act on is the platform's job.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import secrets
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions

from leaderboard.sandbox.archives import ArchiveError, image_archive_inspect, image_archive_untagged
from leaderboard.sandbox.contract import (
    HiddenRuns,
    Limits,
    RunEnd,
    RunnerKill,
    RunNote,
    RunOutcome,
    log_clean,
    run_end_classify,
)

logger = logging.getLogger(__name__)

# The uid:gid every system runs as.  Not 0, not 65534 (nobody owns host files too).
SANDBOX_USER = "10001:10001"
SANDBOX_UID = 10001
LABEL_SUBMISSION = "readerboard.submission"
LABEL_ATTEMPT = "readerboard.attempt"
# On everything a platform instance makes in the engine (run containers, hidden copies and the
# containers that make them): the instance, so that its clean-up and its tests touch only their own
# and leave another platform's on the same engine (the demo, a test run, a compute host's) alone.
# Its value is the worker's run image repository, which each platform sharing an engine has its own.
LABEL_INSTANCE = "readerboard.instance"
GVISOR_PIDS_HEADROOM = 512
# The deadline a run container carries (epoch seconds: its creation plus its time limit), so that
# any worker of the instance on the engine can remove one past it whose worker is gone.
LABEL_DEADLINE = "readerboard.deadline"
# A limit that lives as long as the container: a static busybox (Debian's busybox-static), bound
# read-only into every run container, runs the system under `timeout -s KILL`, so that a container
# whose worker died (kill -9, a lost node) still ends DEADLINE_GRACE_S after its limit.  The
# engine's init (docker-init, `--init`) is PID 1: a SIGKILL from inside the container's own PID
# namespace to its PID 1 is ignored by the kernel, so the system must not be PID 1.
DEADLINE_HELPER = Path("/bin/busybox")
# Bound under the applet's name: busybox picks what to be from argv[0].
DEADLINE_MOUNT = "/.readerboard/timeout"
DEADLINE_GRACE_S = 5
# The helper's watcher and the init: two processes beside the system's own, not charged to its pids.
DEADLINE_PIDS = 2
# How long the log stream may take to deliver what a stopped container left in its pipe.
LOG_DRAIN_S = 10.0


class PlatformError(Exception):
    """The engine failed (unreachable daemon, API error): not the participant's fault."""


class ImageError(Exception):
    """The participant's image archive cannot be used; the message says why."""


@dataclass(frozen=True)
class RunSpec:
    image: str
    input_dir: Path
    output_dir: Path
    limits: Limits
    command: list[str] | None = None
    system_dir: Path | None = None
    runtime: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    gpus: int = 0  # GPUs requested from the engine (NVIDIA runtime's device request); 0: none
    environment: dict[str, str] = field(default_factory=dict)  # the platform's, on top of the usual ones
    # The static helper that ends the container at its limit without a worker (DEADLINE_HELPER, in
    # a folder the engine's host sees: ``deadline_helper_install``); None: the worker's loop alone.
    deadline_helper: Path | None = None


# --------------------------------------------------------------------------- runs on hidden data
#
# A run on hidden data (``RunTicket.hidden_data``, decided on the platform's side by
# ``phase_runs_on_hidden_data``) must leave nothing that a run whose output its team reads (a dev
# run's log, figures, outputs) can read later or at the same time.  Measured (tests/benchmarks/
# docs/explanation/threat-model.md, "Page-cache channel"): the files of the image a system runs on are the same host inodes
# for every container started from it (overlay lower layer), so their page-cache state carries a
# bit per file from one run to the next, and gVisor alone does not stop it (a hidden run under runsc
# cannot evict, but its reads still fill the host's cache of the shared files: 254 of 256 bits).
# So a hidden run gets, by ``sandbox_choose``:
#   * its own copy of the image (``hidden_copy``): the same files under inodes no other run reads;
#     the copy's pages are evicted before and after each hidden run, so every hidden run starts alike;
#   * the hidden runtime (gVisor by default): /proc, /sys and mountinfo are the sandbox's own, and
#     what it does reaches the host kernel through gVisor (no host processes, no host tmpfs);
#   * the host to itself (``host_slot``): no other run of any team runs beside it on the host, so
#     load, memory, disk and CPU contention are not shared while it runs.

HIDDEN_COPY_REPOSITORY = "readerboard-hidden"
# On a hidden copy: the id of the image it copies.  deploy/images/build.sh makes the base image's.
HIDDEN_COPY_LABEL = "org.readerboard.hidden-copy"
# The file that makes the copy's layer content (and so its layer, its inodes) its own: a random
# token, so nobody can build an image whose layer is byte for byte the copy's and share it.
HIDDEN_COPY_MARKER = ".readerboard-hidden-copy"
# On the copy of a team's image, made for one run and removed after it: one left is a dead worker's.
# Its value is the instance (LABEL_INSTANCE) whose worker made it.
HIDDEN_COPY_PER_RUN_LABEL = "org.readerboard.hidden-copy-per-run"


@dataclass(frozen=True)
class Sandbox:
    """What the run is given beyond its limits: the runtime, and for a hidden run its own copy of
    the image and the host to itself."""

    runtime: str | None
    hidden: bool
    private_image: bool
    exclusive: bool


def sandbox_choose(*, hidden: bool, challenge_runtime: str, worker_runtime: str, policy: HiddenRuns) -> Sandbox:
    """The one place that decides how a run is sandboxed; every run path calls it.

    The challenge's runtime, where it forces one, is kept (an organizer may need runc, for GPUs).
    Otherwise a hidden run gets the hidden runtime; every other run the worker's runtime, and where
    the worker names none, the hidden runtime too: a run whose output its team reads under runc
    reads the host's counters that only grow (``/proc/stat``'s ``processes``: every fork of an
    earlier hidden run, under gVisor's ptrace platform too), about 8 bits a hidden run (measured,
    tests/benchmarks/README.md); under gVisor it reads the sandbox's own.  The private copy and the
    exclusive host follow from ``hidden`` alone, whatever the runtime.
    """
    if challenge_runtime:
        runtime = challenge_runtime
    elif hidden and policy.runtime:
        runtime = policy.runtime
    elif worker_runtime:
        runtime = worker_runtime
    else:
        runtime = policy.runtime if policy.isolate else ""
    isolate = hidden and policy.isolate
    return Sandbox(runtime=runtime or None, hidden=hidden, private_image=isolate, exclusive=isolate)


def instance_filter(instance: str, *labels: str) -> dict[str, list[str]]:
    """The engine's filter for the objects of ``instance`` that also carry ``labels``."""
    return {"label": [f"{LABEL_INSTANCE}={instance}", *labels]}


def hidden_copy_reference(image_id: str, *, instance: str = "") -> str:
    """The reference of ``image_id``'s kept copy, or with ``instance`` of the per-run copy that
    instance makes (its own name: a run's copy is never another platform's on the same engine)."""
    tag = image_id.removeprefix("sha256:")
    if instance:
        tag += "-" + hashlib.sha256(instance.encode()).hexdigest()[:12]
    return f"{HIDDEN_COPY_REPOSITORY}:{tag}"


def _dockerfile_value(value: str) -> str:
    """A value for ENV/LABEL/WORKDIR/USER in a ``docker import --change`` line, read back as it is: the
    engine parses these lines as a Dockerfile, which unescapes a double-quoted value and expands
    ``$NAME`` in it, so ``$`` is escaped too (a test run must see the configuration a dev run sees)."""
    return json.dumps(value, ensure_ascii=False).replace("$", "\\$")


def _import_changes(config: dict[str, Any], source_id: str, *, per_run: str) -> list[str]:
    """The image's run configuration as Dockerfile lines: ``docker import`` keeps only the files."""
    changes = []
    for item in config.get("Env") or []:
        name, _, value = item.partition("=")
        changes.append(f"ENV {name}={_dockerfile_value(value)}")
    if config.get("Entrypoint"):
        changes.append(f"ENTRYPOINT {json.dumps(config['Entrypoint'])}")
    if config.get("Cmd"):
        changes.append(f"CMD {json.dumps(config['Cmd'])}")
    if config.get("WorkingDir"):
        changes.append(f"WORKDIR {_dockerfile_value(config['WorkingDir'])}")
    if config.get("User"):
        changes.append(f"USER {_dockerfile_value(config['User'])}")
    if config.get("Volumes"):
        # Under the read-only root a declared volume is where the image's code may write: without
        # it a system that works on dev would fail on test.
        changes.append(f"VOLUME {json.dumps(sorted(config['Volumes']))}")
    for name, value in (config.get("Labels") or {}).items():
        if name not in (HIDDEN_COPY_LABEL, HIDDEN_COPY_PER_RUN_LABEL):
            changes.append(f"LABEL {_dockerfile_value(name)}={_dockerfile_value(value)}")
    changes.append(f"LABEL {HIDDEN_COPY_LABEL}={source_id}")
    if per_run:
        changes.append(f"LABEL {HIDDEN_COPY_PER_RUN_LABEL}={_dockerfile_value(per_run)}")
    return changes


def _marker_tar() -> bytes:
    data = (secrets.token_hex(32) + "\n").encode("ascii")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(HIDDEN_COPY_MARKER)
        info.size, info.mode = len(data), 0o444
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def hidden_copy(client: docker.DockerClient, image: str, *, instance: str, per_run: bool = False) -> str:
    """The reference of ``image``'s hidden copy: its files flattened into one layer of their own
    (a random marker file in it), its run configuration kept.  Made when missing (``docker export``
    of a created, never started container, then ``docker import``), kept while it is current.
    ``per_run``: the copy of one run of ``instance`` (named and labelled as that instance's)."""
    try:
        source = client.api.inspect_image(image)
    except docker.errors.ImageNotFound:
        raise PlatformError(f"the image {image} is not in the engine") from None
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise PlatformError(f"the engine failed: {exc}") from None
    source_id = source["Id"]
    reference = hidden_copy_reference(source_id, instance=instance if per_run else "")
    try:
        copy = client.api.inspect_image(reference)
        if (copy["Config"].get("Labels") or {}).get(HIDDEN_COPY_LABEL) == source_id:
            return reference
    except docker.errors.ImageNotFound:
        pass
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise PlatformError(f"the engine failed: {exc}") from None
    started = time.monotonic()
    container = None
    try:
        # Created only, never started: the command is never run.
        container = client.containers.create(source_id, entrypoint=["/nonexistent"], command=[],
                                             network_mode="none",
                                             labels={HIDDEN_COPY_LABEL: source_id, LABEL_INSTANCE: instance})
        container.put_archive("/", _marker_tar())
        repository, _, tag = reference.partition(":")
        client.api.import_image(src=container.export(chunk_size=1024 * 1024), repository=repository, tag=tag,
                                changes=_import_changes(source["Config"] or {}, source_id,
                                                        per_run=instance if per_run else ""),
                                stream_src=True)
    except docker.errors.APIError as exc:
        logger.error("hidden copy of %s not made: %s", image, exc.explanation or exc)
        if exc.is_client_error():
            # The engine refuses the image's own configuration (an odd ENV or LABEL): the image's fault.
            raise ImageError("the image cannot be copied for a run on hidden data: the engine refuses its "
                             "configuration (ENV, LABEL, WORKDIR or USER)") from None
        raise PlatformError("the engine could not copy the image for a run on hidden data") from None
    except requests.exceptions.RequestException as exc:
        raise PlatformError(f"the engine failed: {exc}") from None
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)
    logger.info("hidden copy %s of %s made in %.1fs", reference, image, time.monotonic() - started)
    return reference


def image_pages_evict(client: docker.DockerClient, image: str) -> int:
    """Drop the page cache of every file of ``image``'s own layer (a hidden copy has one), so that
    whatever a run left there is gone; the number of files, 0 where the layer cannot be reached
    (a storage driver without an upper directory, an engine on another host)."""
    try:
        upper = (client.api.inspect_image(image).get("GraphDriver") or {}).get("Data", {}).get("UpperDir", "")
    except (docker.errors.APIError, requests.exceptions.RequestException):
        upper = ""
    if not upper or not os.path.isdir(upper):
        logger.warning("the layer of %s is not on this host's disk: its pages are not evicted", image)
        return 0
    count = 0
    for path in _regular_files(upper):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            count += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return count


def _regular_files(top: str) -> Iterator[str]:
    """Every regular file below ``top``, symbolic links not followed.  Regular files only: a team's
    layer may hold device nodes, never opened by the worker.  The type comes with the directory
    entry: no stat per file, which for the base image's 4,575 files was 18 ms of the 45."""
    folders = [top]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        yield entry.path
        except OSError:
            continue


@contextlib.contextmanager
def host_slot(path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold this host for the run: shared by runs not on hidden data, alone for a run on hidden data.

    Two ``flock`` files: the turnstile, taken in turn by every run before its slot, so that a hidden
    run waiting for the host keeps new runs from starting meanwhile (it is not starved by a stream
    of shared holders), and the slot itself.  Waiting happens under the run's lease (lease_kept).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        slot = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        turnstile = os.open(path.with_name(path.name + ".turnstile"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise PlatformError(f"the host's run lock {path} cannot be opened: {exc.strerror}") from None
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(slot, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
    finally:
        os.close(slot)  # closing releases the lock
        os.close(turnstile)


@contextlib.contextmanager
def sandboxed(client: docker.DockerClient, image: str, sandbox: Sandbox, policy: HiddenRuns, *,
              keep_copy: bool, instance: str) -> Iterator[str]:
    """Enter the sandbox ``sandbox_choose`` chose: yields the image the container is created from.

    A hidden run holds the host alone, runs its own copy of ``image`` (made if missing), with the
    copy's pages evicted before and after.  ``keep_copy``: the copy is the base image's, kept for the
    next hidden run on this host; a team's image's copy is removed after the run.  ``instance``: the
    platform instance the worker belongs to (``LABEL_INSTANCE``); only its own leftovers are removed.

    A kept copy's eviction before the run is skipped when the last run's eviction after it is known
    to have finished (``_evicted_mark``): only hidden runs read the copy's files, one at a time, so
    its pages are as that eviction left them.  The mark is taken before the container exists and
    made again only once the eviction after this run is done: a worker that dies in between leaves
    none, and the next run evicts first.  (A worker of an older release takes no mark: a host's
    workers are upgraded together, docs/operators/compute-hosts.md.)
    """
    with host_slot(policy.lock_path, exclusive=sandbox.exclusive):
        if not sandbox.private_image:
            yield image
            return
        # Alone on the host: a per-run copy of this instance still here is a dead worker's (its run
        # is over).  Another platform's on the same engine is its own to remove.
        for left in client.images.list(filters={"label": f"{HIDDEN_COPY_PER_RUN_LABEL}={instance}"}):
            for tag in left.tags:
                image_remove(client, tag)
        copy = hidden_copy(client, image, instance=instance, per_run=not keep_copy)
        mark = _evicted_mark(client, copy, policy.lock_path) if keep_copy else None
        try:
            if mark is None or not _mark_take(mark):
                image_pages_evict(client, copy)
            yield copy
        finally:
            if image_pages_evict(client, copy) and mark is not None:
                with contextlib.suppress(OSError):  # no mark: the next run evicts first
                    mark.touch(mode=0o600)
            if not keep_copy:
                image_remove(client, copy)


def _evicted_mark(client: docker.DockerClient, copy: str, lock_path: Path) -> Path | None:
    """The file that says ``copy``'s pages were evicted after its last run, beside the host's lock
    (every worker of the host sees it; under /run a reboot, which empties the page cache too, clears
    it).  Named by the copy's image id: a copy made again is another image.  None: not known."""
    try:
        image_id = str(client.api.inspect_image(copy)["Id"]).removeprefix("sha256:")
    except (docker.errors.APIError, requests.exceptions.RequestException, KeyError):
        return None
    return lock_path.with_name(f"{lock_path.name}.evicted-{image_id}")


def _mark_take(mark: Path) -> bool:
    """Remove the mark; whether it was there (anything else, such as a folder that cannot be written:
    not known, so the caller evicts)."""
    try:
        mark.unlink()
    except OSError:
        return False
    return True


def engine() -> docker.DockerClient:
    """A client for the local engine; PlatformError when it is not there."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise PlatformError(f"the container engine is not reachable: {exc}") from None
    return client


# --------------------------------------------------------------------------- the output area


def _mounted(path: Path) -> bool:
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            return any(line.split()[1] == str(path) for line in fh)
    except OSError:
        return False


def _tmpfs_mount(path: Path, options: str, name: str) -> bool:
    """Mount a tmpfs at ``path`` (root only); False, with a warning, where that is not possible."""
    if os.geteuid() != 0:
        return False
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, name, str(path)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        logger.warning("%s tmpfs not mounted at %s (%s)", name, path, result.stderr.strip())
    return result.returncode == 0


@contextlib.contextmanager
def run_area(path: Path, size_mb: int) -> Iterator[None]:
    """The run folder as a tmpfs of its own, so that what a system can learn of its mounts is neutral.

    A bind mount's source shows in the container's /proc/self/mountinfo as a path
    inside its file system: from a tmpfs mounted here that is ``/input``, not the
    host's storage path with the submission id.  Files placed in it are copies
    (no link count telling how many runs share an input) with fixed times.
    """
    path.mkdir(parents=True, exist_ok=True)
    if not _tmpfs_mount(path, f"size={size_mb}m,mode=0755,nosuid,nodev", "readerboard-run"):
        # Bind mounts of a plain folder would show the system this host's path, with the run's id
        # in it: no run rather than that.  The worker's fault (it must run as root), retried elsewhere.
        raise PlatformError("the run folder could not be made a tmpfs of its own (the compute worker must run "
                            "as root, with mount allowed)")
    try:
        yield
    finally:
        area_release(path)


@contextlib.contextmanager
def output_area(path: Path, limit_mb: int) -> Iterator[bool]:
    """Make ``path`` the system's writable output: a size-capped tmpfs where we may mount one.

    Yields True when the kernel enforces the cap (the system gets ENOSPC past it);
    False when it could not be mounted (not root), in which case the runner
    watches the directory's size and kills the run past the cap.
    """
    path.mkdir(parents=True, exist_ok=True)
    capped = _tmpfs_mount(
        path, f"size={limit_mb}m,nr_inodes=4096,mode=0700,uid={SANDBOX_UID},gid={SANDBOX_UID},nosuid,nodev,noexec",
        "readerboard-output",
    )
    if not capped:
        if os.geteuid() == 0:
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
        else:
            path.chmod(0o777)
    try:
        yield capped
    finally:
        if capped:
            area_release(path)


def files_neutralise(root: Path) -> None:
    """Give every file and folder below ``root`` the same times (epoch): a system learns
    nothing of when the gold was loaded or the run prepared."""
    for folder, dirs, files in os.walk(root):
        for name in (*files, *dirs):
            os.utime(os.path.join(folder, name), (0, 0), follow_symlinks=False)
    os.utime(root, (0, 0))


def area_release(path: Path) -> None:
    if _mounted(path):
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def directory_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _filled(path: Path) -> bool:
    """A capped output area with no room left: the system hit the cap (ENOSPC), its output is cut."""
    stats = os.statvfs(path)
    return stats.f_bavail == 0 or stats.f_favail == 0


# --------------------------------------------------------------------------- running


def deadline_helper_install(work_dir: Path) -> Path:
    """The deadline helper, copied into the work folder (a host folder the engine sees, also when
    the worker runs in a container or a pod); refreshed when the worker's copy differs."""
    if not DEADLINE_HELPER.is_file():
        raise PlatformError(f"{DEADLINE_HELPER} is missing on the compute worker (Debian's busybox-static)")
    target = work_dir / "bin" / "busybox"
    source = DEADLINE_HELPER.read_bytes()
    if not target.is_file() or target.read_bytes() != source:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".busybox.{os.getpid()}")
        partial.write_bytes(source)
        partial.chmod(0o755)
        os.replace(partial, target)
    return target


def _image_command(client: docker.DockerClient, spec: RunSpec) -> list[str]:
    """What the container runs: the bundle's command, or the image's ENTRYPOINT and CMD as the
    engine would join them ([] for an image with neither)."""
    if spec.command is not None:
        return list(spec.command)
    try:
        config = client.images.get(spec.image).attrs.get("Config") or {}
    except docker.errors.ImageNotFound:
        raise PlatformError(f"the image {spec.image} is not in the engine") from None
    return [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]


def _create_kwargs(spec: RunSpec, client: docker.DockerClient | None = None) -> dict[str, Any]:
    lim = spec.limits
    volumes = {
        str(spec.input_dir): {"bind": "/input", "mode": "ro"},
        str(spec.output_dir): {"bind": "/output", "mode": "rw"},
    }
    if spec.system_dir is not None:
        volumes[str(spec.system_dir)] = {"bind": "/system", "mode": "ro"}
    memory = f"{lim.memory_mb}m"
    kwargs: dict[str, Any] = {
        "image": spec.image,
        "command": spec.command,
        "detach": True,
        "user": SANDBOX_USER,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={lim.tmp_mb}m,mode=1777"},
        "shm_size": f"{lim.shm_mb}m",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": memory,
        "memswap_limit": memory,  # equal to the memory limit: no swap on top
        "nano_cpus": int(lim.cpus * 1e9),
        "pids_limit": lim.pids,
        # No RLIMIT_NPROC under runc: it counts every process of uid 10001 on the host,
        # so one team's fork bomb would stop another team's run from forking.
        "ulimits": [
            docker.types.Ulimit(name="nofile", soft=lim.nofile, hard=lim.nofile),
            docker.types.Ulimit(name="core", soft=0, hard=0),
        ],
        "volumes": volumes,
        "working_dir": "/system" if spec.system_dir is not None else None,
        "environment": {
            "READERBOARD_INPUT": "/input",
            "READERBOARD_OUTPUT": "/output",
            "HOME": "/tmp",
            **lim.as_env(),
            **spec.environment,
        },
        "labels": spec.labels,
        # Two rotated files: a flood costs the engine at most this much disk.
        "log_config": docker.types.LogConfig(
            type="json-file", config={"max-size": f"{max(lim.log_bytes, 65536)}", "max-file": "2"}
        ),
        "healthcheck": {"test": ["NONE"]},
        "stop_signal": "SIGKILL",
    }
    command = [] if spec.deadline_helper is None or client is None else _image_command(client, spec)
    if command:  # an image with no command at all is left to the engine to refuse
        kwargs["init"] = True
        volumes[str(spec.deadline_helper)] = {"bind": DEADLINE_MOUNT, "mode": "ro"}
        kwargs["entrypoint"] = [DEADLINE_MOUNT, "-s", "KILL",
                                str(math.ceil(lim.time_limit_s) + DEADLINE_GRACE_S), *command]
        kwargs["command"] = None
        kwargs["pids_limit"] = lim.pids + DEADLINE_PIDS
        kwargs["labels"] = {**spec.labels, LABEL_DEADLINE: str(math.ceil(time.time() + lim.time_limit_s))}
    if spec.runtime:
        kwargs["runtime"] = spec.runtime
    if spec.gpus:
        # What `docker run --gpus N` sends: the engine asks the NVIDIA container toolkit for N GPUs.
        # An engine without it refuses to create the container: the platform's fault (a GPU queue
        # served by a host without GPUs), retried, never the team's.
        kwargs["device_requests"] = [docker.types.DeviceRequest(driver="nvidia", count=spec.gpus,
                                                                capabilities=[["gpu"]])]
    if spec.runtime == "runsc":
        # gVisor's own kernel runs as host threads in the same pids cgroup (an idle sandbox
        # has ~40, and each guest process adds some): at the bare limit the sandbox itself
        # dies.  The guest's processes are limited by gVisor's RLIMIT_NPROC instead, which
        # counts only this sandbox's processes.
        nproc = kwargs["pids_limit"]  # the system's, and the deadline helper's two if it has them
        kwargs["pids_limit"] = nproc + GVISOR_PIDS_HEADROOM
        kwargs["ulimits"].append(docker.types.Ulimit(name="nproc", soft=nproc, hard=nproc))
    return kwargs


_CGROUP_PEAK_FILES = (
    "/sys/fs/cgroup/memory/docker/{id}/memory.max_usage_in_bytes",  # v1, cgroupfs driver
    "/sys/fs/cgroup/memory/system.slice/docker-{id}.scope/memory.max_usage_in_bytes",  # v1, systemd
    "/sys/fs/cgroup/docker/{id}/memory.peak",  # v2, cgroupfs driver
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.peak",  # v2, systemd
)


def _peak_memory_file(container_id: str) -> str | None:
    return next((p for p in (t.format(id=container_id) for t in _CGROUP_PEAK_FILES) if os.path.exists(p)), None)


def _read_peak(path: str | None) -> int | None:
    if path is None:
        return None
    try:
        with open(path, encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


class LogCapture:
    """A container's stdout and stderr as they are written, bounded: the first half of the cap
    and a rolling tail of the second half, counting the bytes dropped between them.

    Read as a stream while the system runs, because the engine's json-file rotation (two files
    of the cap each) has dropped the start of a long log by the time the run ends, and the start
    is half of what the cap promises to keep (the end is where errors usually are).
    """

    def __init__(self, limit: int) -> None:
        self._head_cap = limit // 2
        self._tail_cap = limit - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self._lock = threading.Lock()
        self.dropped = 0
        self.broken = False  # the stream ended before the container did
        self.fed = 0  # bytes fed in all: a live log is sent again only when it grew

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            self.fed += len(chunk)
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            if not chunk:
                return
            self._tail += chunk
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]
                self.dropped += excess

    def result(self) -> tuple[str, list[RunNote]]:
        """The log as kept (control characters removed) and the platform's notes about it."""
        with self._lock:
            head, tail, dropped = bytes(self._head), bytes(self._tail), self.dropped
        notes = []
        if not dropped:
            text = log_clean((head + tail).decode("utf-8", errors="replace"))
        else:
            kept = log_clean(head.decode("utf-8", errors="replace"))
            text = kept + log_clean(tail.decode("utf-8", errors="replace"))
            notes.append(RunNote(
                f"{dropped} bytes of log cut between the head and the tail: a log keeps its first "
                f"{self._head_cap} and its last {self._tail_cap} bytes", at=len(kept)))
        if self.broken:
            notes.append(RunNote("the platform lost the log stream before the run ended: its end may be missing"))
        return text, notes


# How often a running system's log goes to the platform while it grows (``log_live``): the page a
# team watches asks every 2 s; a post costs at most the log's cap, and none while nothing is printed.
LIVE_LOG_EVERY_S = 3.0
# A live log: the text and the platform's notes on it, as ``LogCapture.result`` gives them.
LiveLogSend = Callable[[str, list[RunNote]], None]


@contextlib.contextmanager
def repeated(work: Callable[[], bool], *, every: float, name: str) -> Iterator[None]:
    """While the block runs, call ``work`` every ``every`` seconds in a daemon thread of its own,
    until it returns False; the block's end stops and joins it.  What a run keeps doing beside
    the container (its lease, its live log): a call in progress delays the block's end, never a
    kill, which the run's own loop makes."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            if not work():
                return

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def log_live(capture: LogCapture, send: LiveLogSend | None, *, every: float = LIVE_LOG_EVERY_S,
             name: str = "live-log") -> Iterator[None]:
    """While the block runs, send what ``capture`` holds every ``every`` seconds in a thread of its
    own, when something new was printed since the last send: the whole capture each time, capped as
    the final log is.  A send that fails is logged and the run goes on: the live log is a view, the
    outcome carries the log.  ``send`` None: nothing is sent."""
    if send is None:
        yield
        return
    sent = 0

    def follow() -> bool:
        nonlocal sent
        fed = capture.fed
        if fed == sent:
            return True
        text, notes = capture.result()
        try:
            send(text, notes)
        except Exception as exc:  # noqa: BLE001 - the platform away for a moment: the next one may go
            logger.warning("%s: not sent (%s)", name, exc)
        sent = fed
        return True

    with repeated(follow, every=every, name=name):
        yield


def _log_follow(client: docker.DockerClient, container_id: str, capture: LogCapture) -> Callable[[float], None]:
    """Attach to a created container's stdout and stderr and feed them to ``capture`` in a thread.

    Attached before the start, nothing the system writes is missed, and nothing depends on the
    log driver.  The stream ends when the container does.  Returns a function that waits (at
    most so long) for the rest of the stream, then closes it.
    """
    stream = client.api.attach(container_id, stdout=True, stderr=True, stream=True, logs=False)

    def follow() -> None:
        try:
            for chunk in stream:
                capture.feed(chunk)
        except Exception:  # noqa: BLE001 - the engine went away or the stream was closed: keep what came
            capture.broken = True

    thread = threading.Thread(target=follow, name=f"log-{container_id[:12]}", daemon=True)
    thread.start()

    def finish(timeout: float) -> None:
        thread.join(timeout)
        if thread.is_alive():
            capture.broken = True
        with contextlib.suppress(Exception):
            stream.close()

    return finish


def _start_refusal(explanation: str) -> str:
    """Why the engine could not start the container, in the platform's words: the engine's message
    quotes the image's command, which its team wrote, so it is only classified here."""
    message = explanation.lower()
    if "not a directory" in message:
        return ("the container could not start: a path the platform mounts (/input, /output, /system "
                "or /tmp) is a file in the image")
    if "permission denied" in message:
        return "the container could not start: its ENTRYPOINT/CMD cannot be executed (permission denied)"
    if "no such file or directory" in message or "not found" in message:
        return "the container could not start: its ENTRYPOINT/CMD was not found in the image"
    return "the container could not start: the engine refused its ENTRYPOINT/CMD"


# What `docker load` says when the host, not the archive, is at fault.
_HOST_FAULTS = ("no space left on device", "disk quota exceeded", "input/output error", "cannot allocate memory",
                "read-only file system")


def load_failure(exc: docker.errors.DockerException) -> Exception:
    """Whose fault a failed ``docker load`` is: the archive's (ImageError, e.g. more than the engine's
    125 layers, a hard link out of its layer, a damaged layer) unless the engine says the host is
    out of room or failing (PlatformError, retried).  ``ImageLoadError`` comes from the progress
    stream, ``APIError`` from the request itself; both can be either.  An engine that cannot be
    reached at all raises neither (a ``requests`` error: the platform's)."""
    message = str(getattr(exc, "explanation", None) or exc)
    if any(fault in message.lower() for fault in _HOST_FAULTS):
        return PlatformError(f"the engine could not store the image: {message}")
    return ImageError(f"the engine could not load the image: {message}")


def run_container(
    client: docker.DockerClient,
    spec: RunSpec,
    *,
    output_capped: bool,
    heartbeat: Callable[[], bool],
    heartbeat_every: float,
    live_log: LiveLogSend | None = None,
) -> tuple[RunOutcome, bool]:
    """Run ``spec`` to completion (or its limits) and remove the container, whatever happens.

    Returns the outcome (without outputs: reading them is the caller's job) and whether
    the run was aborted.  ``heartbeat`` is called every ``heartbeat_every`` seconds while
    the system runs; when it returns False (the submission was cancelled or re-assigned)
    the run stops, aborted.  ``live_log`` is given what the system printed so far while it
    runs (``log_live``).
    """
    outcome = RunOutcome(exit_code=None, timed_out=False, oom_killed=False, output_too_large=False,
                         duration_s=0.0, logs="", runtime=spec.runtime or "runc")
    # The runner's own kill, if it made one: the evidence that a kill was the platform's rule
    # applied (run_end_classify); a kill it did not make is someone else's.
    killed: RunnerKill | None = None
    limit_bytes = spec.limits.output_mb * 1024 * 1024
    try:
        container = client.containers.create(**_create_kwargs(spec, client))
    except docker.errors.ImageNotFound:
        # It was there a moment ago (loaded, or the base image checked): removed under the run.
        raise PlatformError(f"the image {spec.image} is not in the engine") from None
    except docker.errors.APIError as exc:
        if exc.is_client_error() and "no command specified" in str(exc.explanation or "").lower():
            # An image with neither ENTRYPOINT nor CMD (refused at upload since; kept for older ones).
            raise ImageError("the image has no ENTRYPOINT or CMD, so there is nothing to run") from None
        # The engine's words can hold this host's paths, and a team reads a dev run's reason: they go
        # to the worker's log, for the operators, and the reason says where to look.
        logger.error("the engine refused to create the container of %s (%s): %s", spec.image, spec.labels,
                     exc.explanation or exc)
        raise PlatformError("the engine refused to create the container (the compute worker's log says why)") from None
    capture = LogCapture(spec.limits.log_bytes)
    try:
        if not heartbeat():  # cancelled (or taken over) while the run was being prepared: start nothing
            outcome.end = RunEnd.ABORTED
            return outcome, True
        log_finish = _log_follow(client, container.id, capture)
        try:
            container.start()
        except docker.errors.APIError as exc:
            log_finish(0)
            if not exc.is_client_error():
                raise PlatformError(f"the engine could not start the container: {exc.explanation or exc}") from None
            # The engine answers 400 when the image's command is missing or not executable, or
            # a mount point is a file in it: the image's fault.  Anything else is the engine's.
            logger.info("container of %s could not start: %s", spec.labels, exc.explanation or exc)
            outcome.exit_code = 127
            outcome.not_started = _start_refusal(str(exc.explanation or exc))
            outcome.notes.append(RunNote(outcome.not_started))
            outcome.end = RunEnd.NOT_STARTED
            return outcome, False
        started = time.monotonic()
        # The engine removes the cgroup with the container, so its high-water mark is read
        # while the system runs; the last reading stands (a spike in its final second is missed).
        peak_file = _peak_memory_file(container.id)
        next_beat = started + heartbeat_every
        deadline = started + spec.limits.time_limit_s
        # What it prints goes to the platform while it runs (a team reads a dev run's as it grows);
        # the sends stop once the container is killed, so a slow send never delays a kill.
        with log_live(capture, live_log, name=f"live-log-{spec.labels.get(LABEL_SUBMISSION, '')}"):
            while True:
                outcome.peak_memory_bytes = _read_peak(peak_file) or outcome.peak_memory_bytes
                try:
                    result = container.wait(timeout=max(0.05, min(1.0, deadline - time.monotonic())))
                    outcome.exit_code = int(result.get("StatusCode", -1))
                    break
                except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                    pass
                now = time.monotonic()
                if now >= deadline:
                    outcome.timed_out, killed = True, RunnerKill.TIME_LIMIT
                    break
                if not output_capped and directory_bytes(spec.output_dir) > limit_bytes:
                    outcome.output_too_large, killed = True, RunnerKill.OUTPUT_LIMIT
                    break
                if now >= next_beat:
                    next_beat = now + heartbeat_every
                    if not heartbeat():
                        killed = RunnerKill.ABORT
                        break
            outcome.duration_s = time.monotonic() - started
            outcome.peak_memory_bytes = _read_peak(peak_file) or outcome.peak_memory_bytes
            if killed is None and outcome.exit_code == 137 and spec.deadline_helper is not None \
                    and outcome.duration_s >= spec.limits.time_limit_s:
                # The deadline helper's kill, a grace past the limit (this loop was late): the limit's.
                outcome.timed_out, killed = True, RunnerKill.TIME_LIMIT
            if outcome.exit_code is None:
                with contextlib.suppress(docker.errors.APIError):
                    container.kill()
                with contextlib.suppress(Exception):
                    container.wait(timeout=30)
        container.reload()
        state = container.attrs.get("State", {})
        outcome.oom_killed = bool(state.get("OOMKilled"))
        # The container has stopped, so its stream is at its end: what is left is in the pipe.
        log_finish(LOG_DRAIN_S)
        outcome.logs, notes = capture.result()
        outcome.notes.extend(notes)
        if not outcome.output_too_large and (
            directory_bytes(spec.output_dir) > limit_bytes or (output_capped and _filled(spec.output_dir))
        ):
            outcome.output_too_large = True
        outcome.end = run_end_classify(runner_killed=killed, oom_killed=outcome.oom_killed,
                                       exit_code=outcome.exit_code, output_too_large=outcome.output_too_large,
                                       peak_memory_bytes=outcome.peak_memory_bytes,
                                       memory_limit_mb=spec.limits.memory_mb)
        return outcome, killed is RunnerKill.ABORT
    except docker.errors.APIError as exc:
        raise PlatformError(f"the engine failed during the run: {exc.explanation or exc}") from None
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)


# --------------------------------------------------------------------------- images


def image_load(
    client: docker.DockerClient, path: Path, *, expected_id: str, reference: str, max_uncompressed: int
) -> str:
    """Make ``reference`` name the image of the archive at ``path``, and return it: what the run runs.

    The archive is checked again here, layers included (``image_archive_inspect``): the engine
    knows an image by its config's hash alone and skips layers it already has, so only an archive
    whose layers hash to its config's diff_ids may stand for that image.  Once they do, an image
    with that id in the engine has exactly those layers, and is tagged instead of loaded again.
    """
    try:
        archive = image_archive_inspect(path, max_uncompressed=max_uncompressed)
    except ArchiveError as exc:
        raise ImageError(str(exc)) from None
    if archive.image_id != expected_id:
        raise ImageError(f"the archive now holds image {archive.image_id}, not {expected_id} as at upload")
    try:
        if not _tag_existing(client, expected_id, reference):
            with tempfile.TemporaryFile(suffix=".tar") as copy:
                try:
                    # Loaded under the run's reference only: no tag of the archive's own can move.
                    image_archive_untagged(path, copy, reference=reference)
                except ArchiveError as exc:
                    raise ImageError(str(exc)) from None
                copy.seek(0)
                try:
                    client.images.load(copy)
                except (docker.errors.APIError, docker.errors.ImageLoadError) as exc:
                    raise load_failure(exc) from None
        loaded = client.images.get(reference).id
    except docker.errors.NotFound:
        raise ImageError(f"after loading, the engine has no image {reference}") from None
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise PlatformError(f"the engine failed: {exc}") from None
    if loaded != expected_id:
        image_remove(client, reference)
        raise ImageError(f"the engine loaded image {loaded}, not {expected_id} as the archive says")
    return reference


def _tag_existing(client: docker.DockerClient, image_id: str, reference: str) -> bool:
    """Tag the image ``image_id`` as ``reference`` if the engine has it; False if it has not
    (or it was removed meanwhile, by another run's clean-up)."""
    repository, _, tag = reference.rpartition(":")
    try:
        return bool(client.images.get(image_id).tag(repository, tag))
    except docker.errors.NotFound:
        return False


def image_remove(client: docker.DockerClient, reference: str) -> bool:
    """Remove a run's reference, and with it the image unless another name (the base image's tag,
    another run's reference) still holds it; never forced, so an image a container still uses
    stays.  True if the reference is gone."""
    try:
        client.images.remove(reference, noprune=False)
    except docker.errors.NotFound:
        return True
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        logger.warning("image %s not removed: %s", reference, exc)
        return False
    return True


def image_exists(client: docker.DockerClient, image: str) -> bool:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True
