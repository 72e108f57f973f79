"""Hostile system: write, change or take over files outside /output and /tmp.

EXPECT: exit:3

Tries to create files in /, /etc, /input, /system, /usr/lib/python3*/ (and its site-packages),
/usr/local/bin, /usr/bin, /var, /root, /home, /opt; to open /etc/passwd, /etc/hosts and the python3
binary for writing; to delete or change /input files; to chmod /input, /system, /etc/passwd and /tmp;
to chown /output and a file in it to root or another user; to create device nodes; to set the clock
and to raise the open-files hard limit. All of these must fail. Changing the mode of its own /output
(which it owns) is allowed and only noted.

Prints "BLOCKED: <what>" / "BREACH: <what>"; exits 3 when everything was blocked, 4 otherwise.
"""

from __future__ import annotations

import glob
import os
import resource
import stat
import sys
import time
from collections.abc import Callable
from functools import partial

BREACHES: list[str] = []
MARK = f".readerboard-hostile-{os.getpid()}"


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def attempt(what: str, action: Callable[[], object], undo: Callable[[], object] | None = None) -> None:
    try:
        action()
    except (OSError, ValueError) as exc:
        blocked(f"{what} ({getattr(exc, 'strerror', None) or exc!r})")
        return
    breach(what)
    if undo is not None:
        try:
            undo()
        except OSError:
            pass


def create_in(directory: str) -> None:
    path = os.path.join(directory, MARK)

    def create() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"hostile\n")
        os.close(fd)

    attempt(f"create {path}", create, lambda: os.unlink(path))


def append_to(path: str) -> None:
    def append() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.close(fd)  # opening for writing is enough to prove it; never change the file

    attempt(f"open {path} for writing", append)


def main() -> int:
    note(f"uid={os.getuid()} gid={os.getgid()} euid={os.geteuid()} groups={os.getgroups()}")
    pylibs = sorted(glob.glob("/usr/lib/python3*/")) or ["/usr/lib/python3/"]
    for directory in ["/", "/etc", "/input", "/system", *pylibs, "/usr/local/bin", "/usr/bin", "/var", "/root",
                      "/home", "/opt"]:
        if os.path.isdir(directory):
            create_in(directory)
    create_in(os.path.join(pylibs[-1], "site-packages") if os.path.isdir(pylibs[-1] + "site-packages")
              else pylibs[-1])
    for path in ["/etc/passwd", "/etc/hosts", "/etc/resolv.conf", os.path.realpath("/usr/bin/python3")]:
        append_to(path)
    for path in sorted(glob.glob("/input/*"))[:3]:
        append_to(path)
        attempt(f"unlink {path}", partial(os.unlink, path))
    for path in sorted(glob.glob("/system/*"))[:1]:
        append_to(path)
    for path in ["/input", "/system", "/etc/passwd", "/tmp"]:
        if os.path.exists(path):
            old = stat.S_IMODE(os.stat(path).st_mode)
            attempt(f"chmod 0777 {path}", partial(os.chmod, path, 0o777), partial(os.chmod, path, old))

    if os.path.isdir("/output"):
        st = os.stat("/output")
        note(f"/output is owned by {st.st_uid}:{st.st_gid} mode {oct(stat.S_IMODE(st.st_mode))}")
        try:
            os.chmod("/output", stat.S_IMODE(st.st_mode))
            note("chmod on /output (its owner may): allowed")
        except OSError as exc:
            note(f"chmod on /output refused ({exc.strerror})")
        attempt("chown /output to root", lambda: os.chown("/output", 0, 0))
        attempt("chown /output to uid 4242", lambda: os.chown("/output", 4242, 4242))
        probe = os.path.join("/output", MARK)
        try:
            with open(probe, "w") as f:
                f.write("probe\n")
        except OSError as exc:
            note(f"cannot write a probe file in /output ({exc.strerror})")
        else:
            attempt(f"chown {probe} to root", lambda: os.chown(probe, 0, 0))
            attempt(f"chown {probe} to uid 4242", lambda: os.chown(probe, 4242, 4242))
            try:
                os.chmod(probe, 0o4755)
                note(f"chmod u+s {probe}: allowed, harmless (setuid to its own uid)")
            except OSError as exc:
                note(f"chmod u+s {probe} refused ({exc.strerror})")
            os.unlink(probe)

    for where in ["/tmp", "/output"]:
        try_device_node(os.path.join(where, MARK + ".dev"))
    attempt("set the system clock", lambda: time.clock_settime(time.CLOCK_REALTIME, time.time()))
    attempt("raise the open-files hard limit", raise_nofile)
    print(f"SUMMARY: {len(BREACHES)} breach(es)", flush=True)
    return 4 if BREACHES else 3


def try_device_node(node: str) -> None:
    """mknod needs CAP_MKNOD; a node that exists must still not open (nodev mounts, no such device)."""
    what = f"mknod a character device (1,1 = /dev/mem) at {node}"
    try:
        os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 1))
    except OSError as exc:
        blocked(f"{what} ({exc.strerror})")
        return
    note(f"{what}: the node was created (CAP_MKNOD not enforced by this runtime)")
    try:
        fd = os.open(node, os.O_RDONLY)
    except OSError as exc:
        blocked(f"open the device node {node} ({exc.strerror})")
    else:
        try:
            data = os.read(fd, 16)
        except OSError as exc:
            data = repr(exc).encode()
        os.close(fd)
        breach(f"opened the device node {node} and read {data!r}")
    os.unlink(node)


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    note(f"RLIMIT_NOFILE soft={soft} hard={hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1024, hard + 1024))


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
