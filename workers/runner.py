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
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions

from leaderboard.submissions.systems import ArchiveError, Limits, RunOutcome, image_archive_untagged

logger = logging.getLogger(__name__)

# The uid:gid every system runs as.  Not 0, not 65534 (nobody owns host files too).
SANDBOX_USER = "10001:10001"
SANDBOX_UID = 10001
LABEL_SUBMISSION = "readerboard.submission"
LABEL_ATTEMPT = "readerboard.attempt"
GVISOR_PIDS_HEADROOM = 512


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
    mounted = _tmpfs_mount(path, f"size={size_mb}m,mode=0755,nosuid,nodev", "readerboard-run")
    try:
        yield
    finally:
        if mounted:
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


def _create_kwargs(spec: RunSpec) -> dict[str, Any]:
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
        },
        "labels": spec.labels,
        # Two rotated files: a flood costs the engine at most this much disk.
        "log_config": docker.types.LogConfig(
            type="json-file", config={"max-size": f"{max(lim.log_bytes, 65536)}", "max-file": "2"}
        ),
        "healthcheck": {"test": ["NONE"]},
        "stop_signal": "SIGKILL",
    }
    if spec.runtime:
        kwargs["runtime"] = spec.runtime
    if spec.runtime == "runsc":
        # gVisor's own kernel runs as host threads in the same pids cgroup (an idle sandbox
        # has ~40, and each guest process adds some): at the bare limit the sandbox itself
        # dies.  The guest's processes are limited by gVisor's RLIMIT_NPROC instead, which
        # counts only this sandbox's processes.
        kwargs["pids_limit"] = lim.pids + GVISOR_PIDS_HEADROOM
        kwargs["ulimits"].append(docker.types.Ulimit(name="nproc", soft=lim.pids, hard=lim.pids))
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


def cap_log(raw: bytes, limit: int) -> str:
    """Keep the start and the end of a log (where errors usually are), marking the cut."""
    if len(raw) <= limit:
        return raw.decode("utf-8", errors="replace")
    half = limit // 2
    dropped = len(raw) - 2 * half
    return (
        raw[:half].decode("utf-8", errors="replace")
        + f"\n[... {dropped} bytes of log cut: logs are capped at {limit} bytes ...]\n"
        + raw[-half:].decode("utf-8", errors="replace")
    )


def run_container(
    client: docker.DockerClient,
    spec: RunSpec,
    *,
    output_capped: bool,
    heartbeat: Callable[[], bool],
    heartbeat_every: float,
) -> tuple[RunOutcome, bool]:
    """Run ``spec`` to completion (or its limits) and remove the container, whatever happens.

    Returns the outcome (without outputs: reading them is the caller's job) and whether
    the run was aborted.  ``heartbeat`` is called every ``heartbeat_every`` seconds while
    the system runs; when it returns False (the submission was cancelled or re-assigned)
    the run stops, aborted.
    """
    outcome = RunOutcome(exit_code=None, timed_out=False, oom_killed=False, output_too_large=False,
                         duration_s=0.0, logs="", runtime=spec.runtime or "runc")
    aborted = False
    limit_bytes = spec.limits.output_mb * 1024 * 1024
    try:
        container = client.containers.create(**_create_kwargs(spec))
    except docker.errors.ImageNotFound:
        raise ImageError(f"the image {spec.image} is not in the engine") from None
    except docker.errors.APIError as exc:
        raise PlatformError(f"the engine refused to create the container: {exc.explanation or exc}") from None
    try:
        try:
            container.start()
        except docker.errors.APIError as exc:
            # e.g. an ENTRYPOINT that does not exist in the image: the image's fault.
            outcome.exit_code = 127
            outcome.logs = f"the container could not start: {exc.explanation or exc}"
            return outcome, False
        started = time.monotonic()
        # The engine removes the cgroup with the container, so its high-water mark is read
        # while the system runs; the last reading stands (a spike in its final second is missed).
        peak_file = _peak_memory_file(container.id)
        next_beat = started + heartbeat_every
        deadline = started + spec.limits.time_limit_s
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
                outcome.timed_out = True
                break
            if not output_capped and directory_bytes(spec.output_dir) > limit_bytes:
                outcome.output_too_large = True
                break
            if now >= next_beat:
                next_beat = now + heartbeat_every
                if not heartbeat():
                    aborted = True
                    break
        outcome.duration_s = time.monotonic() - started
        outcome.peak_memory_bytes = _read_peak(peak_file) or outcome.peak_memory_bytes
        if outcome.exit_code is None:
            with contextlib.suppress(docker.errors.APIError):
                container.kill()
            with contextlib.suppress(Exception):
                container.wait(timeout=30)
        container.reload()
        state = container.attrs.get("State", {})
        outcome.oom_killed = bool(state.get("OOMKilled"))
        try:
            raw = container.logs(stdout=True, stderr=True)
        except docker.errors.APIError as exc:
            raw = f"[logs unavailable: {exc}]".encode()
        outcome.logs = cap_log(raw, spec.limits.log_bytes)
        if not outcome.output_too_large and (
            directory_bytes(spec.output_dir) > limit_bytes or (output_capped and _filled(spec.output_dir))
        ):
            outcome.output_too_large = True
        return outcome, aborted
    except docker.errors.APIError as exc:
        raise PlatformError(f"the engine failed during the run: {exc.explanation or exc}") from None
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)


def containers_kill(client: docker.DockerClient, *, submission_id: int) -> int:
    """Remove every container of a submission (a run whose worker died keeps running otherwise)."""
    found = client.containers.list(all=True, filters={"label": f"{LABEL_SUBMISSION}={submission_id}"})
    for container in found:
        with contextlib.suppress(docker.errors.APIError):
            container.remove(force=True)
    return len(found)


# --------------------------------------------------------------------------- images


def image_load(client: docker.DockerClient, path: Path, *, expected_id: str) -> str:
    """Load an uploaded archive into the engine, untagged, and return its id: the pin.

    Loading again is a no-op; an archive whose image id differs from the one read
    at upload time is refused.
    """
    try:
        if image_exists(client, expected_id):
            return expected_id
    except docker.errors.APIError as exc:
        raise PlatformError(f"the engine failed: {exc}") from None
    with tempfile.TemporaryFile(suffix=".tar") as untagged:
        try:
            image_archive_untagged(path, untagged)
        except ArchiveError as exc:
            raise ImageError(str(exc)) from None
        untagged.seek(0)
        try:
            client.images.load(untagged)
        except docker.errors.APIError as exc:
            raise ImageError(f"the engine could not load the image: {exc.explanation or exc}") from None
    if not image_exists(client, expected_id):
        raise ImageError(f"after loading, the engine has no image {expected_id}")
    return expected_id


def image_exists(client: docker.DockerClient, image: str) -> bool:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True
