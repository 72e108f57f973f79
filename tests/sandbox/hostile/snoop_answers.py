"""Hostile system: look everywhere it can for the hidden gold answers.

EXPECT: exit:3

* reads every /input file (gzip included) and looks for answer fields ("answers", "detected_answers",
  "char_spans"): the inputs given to a system must carry none;
* walks the whole visible file system (not /proc, /sys, /dev) and looks in every regular file, and
  inside every .gz file, for the canary string the test planted in the hidden gold and passed in
  READERBOARD_TEST_CANARY (when set), and for files named like gold/private/secret outside the
  standard system directories;
* reads /proc/1/environ and /proc/self/environ for the canary and for secrets of the host (tokens,
  passwords, database or broker URLs; the READERBOARD_TEST_* variables a test passes in are
  exempt), and /proc/self/mountinfo for a mount that comes from a host gold directory;
* looks for host processes (a shared PID namespace) and tries the Docker and containerd sockets.

Prints "BLOCKED: <what>" / "BREACH: <what>" (and "NOTE: <what>" for harmless facts, such as which
host directories are bind-mounted); exits 3 when nothing leaked, 4 otherwise.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import zlib

BREACHES: list[str] = []
CANARY_VAR = "READERBOARD_TEST_CANARY"
CANARY = os.environ.get(CANARY_VAR, "").encode()
ANSWER_KEYS = [b'"answers"', b'"detected_answers"', b'"char_spans"']
SKIP_TREES = ("/proc", "/sys", "/dev")
SYSTEM_TREES = ("/usr/", "/etc/", "/var/lib/", "/var/cache/", "/var/log/", "/lib", "/bin/", "/sbin/")
SUSPICIOUS_NAME = re.compile(r"gold|/private/|secret|hidden[-_]?test|answer", re.IGNORECASE)
SECRET_ENV = re.compile(r"SECRET|TOKEN|PASSW|API_?KEY|DATABASE|REDIS|CELERY|DJANGO|AWS_|GITHUB", re.IGNORECASE)
HOST_PROCESSES = {"dockerd", "containerd", "containerd-shim", "systemd", "sshd", "redis-server", "celery", "runsc"}
MAX_FILE = 64 * 1024 * 1024
CHUNK = 1024 * 1024
MAX_GUNZIP = 256 * 1024 * 1024
SELF = os.path.realpath(__file__)


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    BREACHES.append(what)
    print(f"BREACH: {what}", flush=True)


def note(what: str) -> None:
    print(f"NOTE: {what}", flush=True)


def is_self(path: str) -> bool:
    """This script and its compiled copies hold the answer field names themselves."""
    if path == SELF:
        return True
    stem = os.path.splitext(os.path.basename(SELF))[0]
    return os.path.basename(os.path.dirname(path)) == "__pycache__" and os.path.basename(path).startswith(stem + ".")


def read_limited(path: str, limit: int = MAX_FILE) -> bytes:
    # Three system calls for a small file (open, read, close): under gVisor's ptrace platform each
    # one is a trap, and the walk below opens every file of the image.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        chunks = []
        size = 0
        while size < limit:
            chunk = os.read(fd, min(CHUNK, limit - size))
            chunks.append(chunk)
            size += len(chunk)
            if len(chunk) < CHUNK:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


def gunzip_limited(data: bytes) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    return d.decompress(data, MAX_GUNZIP)


def answer_keys_in(data: bytes) -> list[str]:
    return [k.decode() for k in ANSWER_KEYS if k in data]


def check_input() -> None:
    try:
        names = sorted(os.listdir("/input"))
    except OSError as exc:
        note(f"cannot list /input: {exc!r}")
        return
    note(f"/input holds {names}")
    for name in names:
        path = os.path.join("/input", name)
        if not os.path.isfile(path):
            continue
        try:
            data = read_limited(path)
            if name.endswith(".gz"):
                data = gunzip_limited(data)
        except (OSError, zlib.error) as exc:
            note(f"cannot read {path}: {exc!r}")
            continue
        keys = answer_keys_in(data)
        if keys:
            breach(f"{path} carries answer fields {keys}")
        else:
            blocked(f"answer fields in {path} ({len(data)} bytes read, none found)")
        if CANARY and CANARY in data:
            breach(f"{path} contains the canary planted in the hidden gold")
        if name == "manifest.json":
            try:
                note(f"manifest: {json.loads(data)}")
            except ValueError:
                note("manifest.json is not JSON")


def scan_file(path: str, found: dict[str, int]) -> None:
    if is_self(path):
        return
    try:
        data = read_limited(path)
    except OSError:
        found["unreadable"] += 1
        return
    found["files"] += 1
    found["bytes"] += len(data)
    if path.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            data = data + gunzip_limited(data)
        except (zlib.error, EOFError):
            pass
    if CANARY and CANARY in data:
        breach(f"{path} contains the canary planted in the hidden gold")
    suspicious = SUSPICIOUS_NAME.search(path) and not path.startswith(SYSTEM_TREES)
    if suspicious or path.endswith((".json", ".jsonl", ".gz")) and not path.startswith(SYSTEM_TREES):
        keys = answer_keys_in(data)
        if keys and not path.startswith("/input/"):
            breach(f"{path} carries answer fields {keys}")


def walk_everything() -> None:
    found = {"files": 0, "bytes": 0, "unreadable": 0, "dirs_denied": 0}
    suspicious: list[str] = []
    # scandir's file types come from the directory entries themselves, so the walk costs no stat
    # call per file; read_limited stops at MAX_FILE whatever the file's size.
    pending = ["/"]
    while pending:
        top = pending.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            found["dirs_denied"] += 1
            continue
        for entry in entries:
            path = entry.path
            if entry.is_dir(follow_symlinks=False):
                if path not in SKIP_TREES:
                    pending.append(path)
                continue
            if SUSPICIOUS_NAME.search(path) and not path.startswith(SYSTEM_TREES) and not is_self(path):
                suspicious.append(path)
            if entry.is_file(follow_symlinks=False):
                scan_file(path, found)
    note(
        f"scanned {found['files']} files ({found['bytes'] >> 20} MiB), {found['unreadable']} unreadable, "
        f"{found['dirs_denied']} directories denied"
    )
    if suspicious:
        breach(f"files named like hidden data are visible: {suspicious[:20]}")
    else:
        blocked("no file named like gold/private/secret outside the system directories")
    if CANARY:
        if not any("canary" in b for b in BREACHES):
            blocked("the canary planted in the hidden gold is nowhere in the visible file system")
    else:
        note(f"{CANARY_VAR} is not set: no canary to look for")


def check_environ() -> None:
    for pid in ("1", "self"):
        path = f"/proc/{pid}/environ"
        try:
            entries = read_limited(path).split(b"\0")
        except OSError as exc:
            blocked(f"read {path} ({exc.strerror})")
            continue
        entries = [e for e in entries if e and not e.startswith(CANARY_VAR.encode() + b"=")]
        names = sorted(e.split(b"=", 1)[0].decode(errors="replace") for e in entries)
        note(f"{path} variables: {names}")
        if CANARY and any(CANARY in e for e in entries):
            breach(f"{path} contains the canary planted in the hidden gold")
        secrets = [n for n in names if SECRET_ENV.search(n) and not n.startswith("READERBOARD_TEST_")]
        if secrets:
            breach(f"{path} carries host secrets: {secrets}")
        else:
            blocked(f"host secrets in {path} (none)")


def check_mountinfo() -> None:
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        note(f"cannot read /proc/self/mountinfo: {exc!r}")
        return
    leaks = []
    for line in lines:
        fields = line.split()
        if len(fields) < 5:
            continue
        root, point = fields[3], fields[4]
        if root != "/" and not point.startswith(SKIP_TREES):
            note(f"{point} is bind-mounted from host path {root}")
        parts = [part.lower() for part in root.split("/")]
        if any(re.match(r"gold([-_.]|$)", part) for part in parts) or (CANARY and CANARY in line.encode()):
            leaks.append(line)
        elif any(re.match(r"(private|secrets?)([-_.]|$)", part) for part in parts):
            note(f"{point} comes from a host directory named private/secret ({root}), but not the gold")
    if leaks:
        breach(f"a gold directory is mounted into the container: {leaks}")
    else:
        blocked("no mount in /proc/self/mountinfo comes from a gold directory")


def check_processes() -> None:
    seen = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                seen.append((int(pid), f.read().strip()))
        except OSError:
            continue
    note(f"visible processes: {sorted(seen)}")
    host = [f"{pid}:{comm}" for pid, comm in seen if comm in HOST_PROCESSES]
    if host:
        breach(f"host processes are visible (shared PID namespace): {host}")
    else:
        blocked("no host process visible")


def check_sockets() -> None:
    paths = ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
             "/var/run/docker/containerd/containerd.sock", "/run/runc", "/var/run/runsc"]
    for path in paths:
        what = f"connect to {path}"
        if not os.path.exists(path):
            blocked(f"{what} (absent)")
            continue
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(3)
                s.connect(path)
                s.sendall(b"GET /version HTTP/1.0\r\nHost: docker\r\n\r\n")
                answer = s.recv(200)
        except OSError as exc:
            blocked(f"{what} (exists but {exc.strerror or exc!r})")
            continue
        breach(f"{what}: the host daemon answered {answer[:80]!r}")


def check_host_files() -> None:
    for path in ["/etc/shadow", "/root/.bash_history", "/proc/1/root/etc/shadow", "/proc/kcore"]:
        try:
            with open(path, "rb") as f:
                data = f.read(64)
        except OSError as exc:
            blocked(f"read {path} ({exc.strerror})")
            continue
        breach(f"read {path}: {len(data)} bytes")


def main() -> int:
    note(f"uid={os.getuid()} euid={os.geteuid()} canary {'set' if CANARY else 'not set'}")
    check_input()
    check_environ()
    check_mountinfo()
    check_processes()
    check_sockets()
    check_host_files()
    walk_everything()
    print(f"SUMMARY: {len(BREACHES)} breach(es)", flush=True)
    return 4 if BREACHES else 3


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
