"""Hostile system: reach the kernel through privileged system calls and control files.

EXPECT: exit:3

With ctypes and libc it tries, each in a throwaway child process where it changes the process:
unshare of a user or mount namespace, mount, chroot, setns, keyctl/add_key (the kernel keyring is not
namespaced), bpf, perf_event_open, open_by_handle_at (the "shocker" escape), finit_module, iopl,
klogctl (dmesg); opening /proc/sysrq-trigger, /proc/sys/kernel/core_pattern, cgroup release_agent
files and /sys/kernel/uevent_helper for writing (they are only opened, never written), and /dev/mem,
/dev/kmsg, /proc/kcore for reading. ptrace (of its own processes), userfaultfd, io_uring and the
kallsyms addresses are only noted: they stay inside the container. Under gVisor (runsc) a system call
that works was served by gVisor's own kernel, not the host's: it is noted, not counted (gVisor lets
an unprivileged process create user namespaces, for one).

Prints "BLOCKED: <what>" / "BREACH: <what>" / "NOTE: <what>"; exits 3 when everything was blocked,
4 otherwise.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import os
import platform
import struct
import sys
import time
from collections.abc import Callable
from functools import partial

BREACHES: list[str] = []
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
SYSCALLS = {
    "x86_64": {"keyctl": 250, "add_key": 248, "bpf": 321, "perf_event_open": 298, "open_by_handle_at": 304,
               "finit_module": 313, "userfaultfd": 323, "io_uring_setup": 425},
    "aarch64": {"keyctl": 219, "add_key": 217, "bpf": 280, "perf_event_open": 241, "open_by_handle_at": 265,
                "finit_module": 273, "userfaultfd": 282, "io_uring_setup": 425},
}.get(platform.machine(), {})
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000


def under_gvisor() -> bool:
    try:
        with open("/proc/version") as f:
            return "Jan 10 15:06:54 PST 2016" in f.read()  # the fixed version string of gVisor's Sentry
    except OSError:
        return False


GVISOR = under_gvisor()


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def err_name(code: int) -> str:
    return errno.errorcode.get(code, str(code))


def check(result: int) -> int:
    """A libc-style return value: raises OSError with errno when it is -1."""
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def sys_call(name: str, *args: int | ctypes.c_void_p | bytes | ctypes.Array[ctypes.c_char]) -> int:
    if name not in SYSCALLS:
        raise OSError(errno.ENOSYS, f"no syscall number for {name} on {platform.machine()}")
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return check(LIBC.syscall(ctypes.c_long(SYSCALLS[name]), *converted))


def in_child(action: Callable[[], object]) -> int:
    """Runs action in a forked child; returns 0 when it worked, else the errno it failed with."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            action()
        except OSError as exc:
            code = exc.errno or 255
        except BaseException:
            code = 255
        os._exit(min(code, 255))
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def expect_refused(what: str, action: Callable[[], object], capability_errnos: tuple[int, ...] = (),
                   kernel_call: bool = True) -> None:
    """A breach when action works, or fails with an errno that shows the permission check passed.

    Under gVisor a system call that works was served by the sandbox's own kernel (the Sentry), not the
    host's, so for kernel_call attempts that is noted rather than counted.
    """
    code = in_child(action)
    if code == 0 or code in capability_errnos:
        how = "worked" if code == 0 else f"passed the permission check (then {err_name(code)})"
        if GVISOR and kernel_call:
            note(f"{what} {how} inside gVisor's own kernel: the host kernel never sees it")
        else:
            breach(f"{what} {how}")
    else:
        blocked(f"{what} ({err_name(code)})")


def try_namespaces() -> None:
    expect_refused("unshare(CLONE_NEWUSER) (root in a new user namespace)",
                   lambda: check(LIBC.unshare(ctypes.c_int(CLONE_NEWUSER))))
    expect_refused("unshare(CLONE_NEWNS)", lambda: check(LIBC.unshare(ctypes.c_int(CLONE_NEWNS))))

    def mount_tmpfs() -> None:
        os.makedirs("/tmp/hostile-mnt", exist_ok=True)
        check(LIBC.mount(b"none", b"/tmp/hostile-mnt", b"tmpfs", ctypes.c_ulong(0), b"size=1m"))

    expect_refused("mount -t tmpfs", mount_tmpfs)
    expect_refused("mount --bind / /tmp/hostile-mnt",
                   lambda: check(LIBC.mount(b"/", b"/tmp/hostile-mnt", None, ctypes.c_ulong(4096), None)))
    expect_refused("chroot /tmp", lambda: os.chroot("/tmp"))

    def setns_self() -> None:
        fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
        check(LIBC.setns(fd, CLONE_NEWNS))

    expect_refused("setns into a mount namespace", setns_self)


def try_kernel_interfaces() -> None:
    expect_refused("keyctl(KEYCTL_GET_KEYRING_ID, session keyring)", lambda: sys_call("keyctl", 0, -3, 1))
    expect_refused("add_key(user) to the process keyring",
                   lambda: sys_call("add_key", b"user", b"readerboard-hostile", b"x", 1, -2))
    attr = ctypes.create_string_buffer(struct.pack("<IIII", 1, 4, 4, 1) + b"\0" * 112)
    expect_refused("bpf(BPF_MAP_CREATE)", lambda: sys_call("bpf", 0, ctypes.addressof(attr), 128))
    perf = ctypes.create_string_buffer(struct.pack("<IIQ", 1, 112, 0) + b"\0" * 96)
    expect_refused("perf_event_open(software cpu clock)",
                   lambda: sys_call("perf_event_open", ctypes.addressof(perf), 0, -1, -1, 0))

    def shocker() -> None:
        handle = ctypes.create_string_buffer(struct.pack("<iiQ", 8, 1, 2))
        mount_fd = os.open("/", os.O_RDONLY)
        sys_call("open_by_handle_at", mount_fd, ctypes.addressof(handle), os.O_RDONLY)

    expect_refused("open_by_handle_at (shocker)", shocker, (errno.ESTALE, errno.EINVAL, errno.EBADF, errno.ENOENT))
    expect_refused("finit_module", lambda: sys_call("finit_module", -1, b"", 0), (errno.EBADF,))
    if platform.machine() == "x86_64":
        expect_refused("iopl(3) (raw I/O ports)", lambda: check(LIBC.iopl(3)))
    buf = ctypes.create_string_buffer(4096)
    expect_refused("klogctl(SYSLOG_ACTION_READ_ALL) (dmesg)", lambda: check(LIBC.klogctl(3, buf, 4096)))


def open_and_close(path: str, flags: int) -> None:
    os.close(os.open(path, flags))


def try_files() -> None:
    for path in ["/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
                 "/sys/kernel/uevent_helper", *glob.glob("/sys/fs/cgroup/*/release_agent"),
                 *glob.glob("/sys/fs/cgroup/release_agent")]:
        expect_refused(f"open {path} for writing (never written)", partial(open_and_close, path, os.O_WRONLY),
                       kernel_call=False)
    for path in ["/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/proc/kcore", "/dev/vda", "/dev/sda"]:
        expect_refused(f"read {path}", partial(open_and_close, path, os.O_RDONLY), kernel_call=False)


def try_in_container_only() -> None:
    sleeper = os.fork()
    if sleeper == 0:
        time.sleep(30)
        os._exit(0)

    def seize_sibling() -> None:  # PTRACE_SEIZE does not stop the tracee; exiting detaches
        check(LIBC.ptrace(ctypes.c_long(0x4206), ctypes.c_long(sleeper), None, None))

    code = in_child(seize_sibling)
    os.kill(sleeper, 9)
    os.waitpid(sleeper, 0)
    note(f"ptrace(PTRACE_SEIZE) of a sibling process: {'allowed' if code == 0 else err_name(code)} "
         "(only processes of this container are visible)")
    for name, args in [("userfaultfd", (0,)), ("io_uring_setup", (1, 0))]:
        if name == "io_uring_setup":
            params = ctypes.create_string_buffer(120)
            args = (1, ctypes.addressof(params))
        code = in_child(partial(sys_call, name, *args))
        note(f"{name}: {'allowed' if code == 0 else err_name(code)}")
    try:
        with open("/proc/kallsyms") as f:
            first = f.readline().split()
        note(f"/proc/kallsyms first address {first[0] if first else '?'} (all zeros when kptr_restrict hides it)")
    except OSError as exc:
        note(f"/proc/kallsyms: {exc.strerror}")


def main() -> int:
    note(f"machine {platform.machine()}, uid {os.getuid()}, kernel {platform.release()}, gVisor {GVISOR}")
    with open("/proc/self/status") as f:
        note("; ".join(line.strip() for line in f if line.startswith(("Cap", "NoNewPrivs", "Seccomp"))))
    started = time.monotonic()
    try_namespaces()
    try_kernel_interfaces()
    try_files()
    try_in_container_only()
    print(f"SUMMARY: {len(BREACHES)} breach(es) in {time.monotonic() - started:.1f} s", flush=True)
    return 4 if BREACHES else 3


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
