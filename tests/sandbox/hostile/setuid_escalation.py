"""Hostile system: become root through setuid/setgid binaries.

EXPECT: exit:3

Meant to run as the image readerboard-test/hostile-setuid (tests/sandbox/hostile/setuid/Dockerfile),
which adds /usr/local/bin/supy, a root-owned setuid copy of python3, and /usr/local/bin/sgpy, a
setgid-shadow copy (Linux ignores the setuid bit on scripts, so the interpreter itself is copied).
It runs both to call os.setuid(0) and read /etc/shadow, then tries `su` and the image's other
setuid-root programs (mount). Without those copies (run as a code bundle) it still tries every
setuid binary of the base image. --security-opt no-new-privileges makes the kernel ignore the setuid
and setgid bits; --cap-drop ALL leaves even a real root without capabilities.

Prints "BLOCKED: <what>" / "BREACH: <what>"; exits 3 when everything was blocked, 4 otherwise.
"""

from __future__ import annotations

import grp
import json
import os
import subprocess
import sys

BREACHES: list[str] = []
PROBE = r"""
import json, os
out = {"uid": os.getuid(), "euid": os.geteuid(), "egid": os.getegid()}
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith(("CapEff", "NoNewPrivs")):
            key, value = line.split(":", 1)
            out[key] = value.strip()
try:
    os.setuid(0)
    out["setuid0"] = "ok"
except OSError as exc:
    out["setuid0"] = exc.strerror
try:
    with open("/etc/shadow") as f:
        out["shadow"] = "read %d bytes" % len(f.read())
except OSError as exc:
    out["shadow"] = exc.strerror
print(json.dumps(out))
"""


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def run(argv: list[str], timeout: float = 15) -> tuple[int | None, str]:
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, repr(exc)
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace").strip()


def status_lines() -> str:
    with open("/proc/self/status") as f:
        return "; ".join(
            line.strip() for line in f if line.startswith(("Uid", "Gid", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp"))
        )


def setuid_binaries() -> list[str]:
    found = []
    for directory in ["/usr/local/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"]:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_mode & 0o6000 and os.path.isfile(path):
                found.append(f"{path} (owner {st.st_uid}, group {st.st_gid}, mode {oct(st.st_mode & 0o7777)})")
    return found


def shadow_gid() -> int:
    try:
        return grp.getgrnam("shadow").gr_gid
    except KeyError:
        return 0


def try_python_copy(path: str, kind: str) -> None:
    if not os.path.exists(path):
        note(f"{path} is absent (run the readerboard-test/hostile-setuid image to try a {kind} python3)")
        return
    code, out = run([path, "-I", "-c", PROBE])
    try:
        result = json.loads(out.splitlines()[-1])
    except (ValueError, IndexError):
        blocked(f"run the {kind} python3 {path} (exit {code}: {out[:200]!r})")
        return
    note(f"{path} ran with {result}")
    gained = []
    if result.get("euid") == 0:
        gained.append("effective uid 0")
    if result.get("egid") in (0, shadow_gid()):
        gained.append(f"effective gid {result['egid']}")
    if result.get("setuid0") == "ok":
        gained.append("os.setuid(0) worked")
    if str(result.get("shadow", "")).startswith("read"):
        gained.append("/etc/shadow was readable")
    if gained:
        breach(f"{kind} python3 {path}: {', '.join(gained)}")
    else:
        blocked(f"{kind} python3 {path}: still uid {result.get('euid')}, setuid(0) {result.get('setuid0')}, "
                f"/etc/shadow {result.get('shadow')}")


def try_su() -> None:
    for argv in (["su", "-c", "id -u", "root"], ["su", "root", "-s", "/usr/bin/id"]):
        code, out = run(argv)
        what = f"{' '.join(argv)}"
        if code == 0 and out.splitlines() and out.splitlines()[-1].strip().startswith(("0", "uid=0")):
            breach(f"{what} gave root: {out!r}")
        else:
            blocked(f"{what} (exit {code}: {out[:160]!r})")


def try_mount() -> None:
    target = "/tmp/hostile-mount"
    os.makedirs(target, exist_ok=True)
    code, out = run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", target])
    if code == 0:
        breach(f"setuid mount mounted a tmpfs on {target}")
        run(["umount", target])
    else:
        blocked(f"setuid mount -t tmpfs (exit {code}: {out[:160]!r})")


def main() -> int:
    note(f"self: {status_lines()}")
    binaries = setuid_binaries()
    note(f"setuid/setgid binaries: {binaries}")
    try_python_copy("/usr/local/bin/supy", "setuid-root")
    try_python_copy("/usr/local/bin/sgpy", "setgid-shadow")
    try_su()
    try_mount()
    if os.geteuid() == 0:
        breach("this process itself runs as root")
    print(f"SUMMARY: {len(BREACHES)} breach(es)", flush=True)
    return 4 if BREACHES else 3


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
