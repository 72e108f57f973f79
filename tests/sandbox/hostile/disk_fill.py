"""Hostile system: fill every writable place in the container.

EXPECT: exit:3

Writes /tmp/fill 1 MiB at a time until ENOSPC (the sandbox's /tmp is a 64 MiB tmpfs: anything past
about 64 MiB is a breach; the script stops itself at 256 MiB), then tries to create a file in /,
/input, /system, /var/tmp, /dev/shm, /run, /var/lock, $HOME and in every other mount point listed in
/proc/self/mounts except /tmp and /output. Each place that takes data is a breach (it is then filled
the same way to report how much it holds); one where a file can be created but holds no data (a
POSIX message queue in /dev/mqueue) is only noted. Everything written is deleted again.
/dev/shm is capped scratch space like /tmp: the platform keeps it (multiprocessing needs it) at a
16 MiB tmpfs whose pages count against the memory limit. READERBOARD_HOSTILE_ALLOW_SHM=0 makes any
writable /dev/shm a breach (for a sandbox run with --ipc none).

Prints "BLOCKED: <what>" / "BREACH: <what>"; exits 3 when everything was blocked, 4 otherwise.
"""

from __future__ import annotations

import errno
import os
import sys

BREACHES: list[str] = []
MIB = 1024 * 1024
TMP_LIMIT_MIB = 64
SAFETY_CAP_MIB = 256
ALLOWED = {"/tmp", "/output"}
# Docker mounts a tmpfs on /dev/shm (its pages count against --memory); --ipc none removes it but
# also breaks multiprocessing, so the platform keeps a small one (--shm-size 16m).
ALLOW_SHM = os.environ.get("READERBOARD_HOSTILE_ALLOW_SHM", "1") == "1"


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def fill(path: str) -> tuple[int, str]:
    """Write path until an error or the safety cap; returns (MiB written, why it stopped)."""
    block = b"\xa5" * MIB
    written = 0
    reason = f"stopped by the script at {SAFETY_CAP_MIB} MiB"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while written < SAFETY_CAP_MIB * MIB:
            try:
                n = os.write(fd, block)
            except OSError as exc:
                reason = errno.errorcode.get(exc.errno or 0, str(exc.errno))
                break
            written += n
            if n < len(block):
                reason = "short write"
                break
    finally:
        os.close(fd)
        os.unlink(path)
    return written // MIB, reason


def fill_scratch(directory: str) -> None:
    mib, reason = fill(os.path.join(directory, "fill"))
    print(f"SCRATCH: wrote {mib} MiB to {directory} before {reason}", flush=True)
    if mib > TMP_LIMIT_MIB + 1:
        breach(f"{directory} took {mib} MiB ({reason}): more than a {TMP_LIMIT_MIB} MiB tmpfs")
    else:
        blocked(f"{directory} filled at {mib} MiB ({reason})")


def mount_points() -> list[str]:
    points: list[str] = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 1:
                    points.append(fields[1].replace("\\040", " "))
    except OSError as exc:
        note(f"cannot read /proc/self/mounts: {exc!r}")
    return points


def skip(point: str) -> bool:
    if point in ALLOWED:
        return True
    # pseudo file systems where a plain file cannot be created anyway
    return point.startswith(("/proc", "/sys"))


def try_place(directory: str) -> None:
    path = os.path.join(directory, f".readerboard-hostile-{os.getpid()}")
    what = f"create a file in {directory}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        blocked(f"{what} ({exc.strerror})")
        return
    os.close(fd)
    try:
        mib, reason = fill(path)
    except OSError as exc:
        mib, reason = 0, repr(exc)
    if mib == 0:
        note(f"{what}: created, but it holds no data ({reason}), e.g. a message queue in /dev/mqueue")
    else:
        breach(f"{what}: writable, took {mib} MiB before {reason}")


def main() -> int:
    note(f"uid={os.getuid()} gid={os.getgid()} HOME={os.environ.get('HOME')!r}")
    fill_scratch("/tmp")
    if ALLOW_SHM and os.path.isdir("/dev/shm"):
        ALLOWED.add("/dev/shm")
        fill_scratch("/dev/shm")
    home = os.environ.get("HOME") or "/"
    places = ["/", "/input", "/system", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run", "/var/lock", home]
    places = [p for p in places if p not in ALLOWED]
    places += [p for p in mount_points() if not skip(p)]
    for place in dict.fromkeys(places):
        if os.path.isdir(place):
            try_place(place)
        elif not os.path.exists(place):
            note(f"{place} does not exist")
    print(f"SUMMARY: {len(BREACHES)} breach(es)", flush=True)
    return 4 if BREACHES else 3


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
