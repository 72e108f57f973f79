"""Hostile system: a fork bomb (every child forks too), then all processes sleep until killed.

EXPECT: timeout
EXPECT-RUNSC: oom

The bomb is capped by the script itself so that a broken sandbox cannot take the test machine down:
a pipe is pre-filled with CAP tokens (2000 by default, READERBOARD_HOSTILE_FORK_CAP to change) and a
process must take a token before each fork, so there are never more than CAP + 1 processes. The
first process only watches: it counts the forks that worked and those refused (EAGAIN), prints
"BLOCKED: ..." when the pids limit stopped the bomb well below the cap or "BREACH: ..." when the cap
was reached, then everything sleeps, ignoring SIGTERM, until the runner kills the container (the
expected outcome is therefore a timeout, and the runner must be able to kill a container whose
pids limit is exhausted).

Under gVisor (runsc, ptrace platform) the outcome differs and is still contained: gVisor enforces
--ulimit nproc=64 itself, but each sandboxed process costs the Sentry several host tasks and some
memory, so with --pids-limit >= 512 the sandbox is OOM-killed (about 2 s) before the bomb is done,
and with --pids-limit 64 or 256 the Sentry cannot create threads and the sandbox dies with exit 2.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import time

CAP = int(os.environ.get("READERBOARD_HOSTILE_FORK_CAP", "2000"))
SANDBOX_PIDS_LIMIT = 64  # --pids-limit 64 and --ulimit nproc=64


def blocked(what: str) -> None:
    print(f"BLOCKED: {what}", flush=True)


def breach(what: str) -> None:
    print(f"BREACH: {what}", flush=True)


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tokens_r, tokens_w = os.pipe()
    os.set_blocking(tokens_r, False)
    os.write(tokens_w, b"t" * CAP)  # a pipe holds 64 KiB: fine for any sane cap
    reports_r, reports_w = os.pipe()
    started = time.monotonic()
    sys.stdout.flush()
    try:
        first = os.fork()
    except OSError as exc:
        blocked(f"the very first fork failed ({exc.strerror})")
        sleep_forever()
    if first == 0:
        os.close(reports_r)
        try:
            bomb(tokens_r, tokens_w, reports_w)
        finally:
            os._exit(0)
    os.close(reports_w)
    forked, refused, other = 1, 0, 0
    last = time.monotonic()
    while time.monotonic() - last < 5 and time.monotonic() - started < 60:
        ready, _, _ = select.select([reports_r], [], [], 1.0)
        if not ready:
            continue
        data = os.read(reports_r, 65536)
        if not data:
            break
        last = time.monotonic()
        forked += data.count(b"+")
        refused += data.count(b"!")
        other += data.count(b"?")
    processes = forked + 1
    elapsed = time.monotonic() - started
    print(
        f"COUNT: {processes} processes alive (forks that worked: {forked}, refused with EAGAIN: {refused}, "
        f"other errors: {other}) after {elapsed:.1f} s",
        flush=True,
    )
    if processes >= CAP:
        breach(f"fork bomb reached the script's own cap of {CAP} processes: no pids limit")
    elif processes > SANDBOX_PIDS_LIMIT + 4:
        breach(f"fork bomb got {processes} processes, more than the {SANDBOX_PIDS_LIMIT} pids limit")
    elif refused or other:
        blocked(f"fork bomb stopped at {processes} processes (pids limit)")
    else:
        breach(f"fork bomb: {processes} processes and no refusal seen")
    print("sleeping until killed", flush=True)
    sleep_forever()


def bomb(tokens_r: int, tokens_w: int, reports: int) -> None:
    """Runs in every bomb process: fork while there are tokens, give up after repeated EAGAIN."""
    failures = 0
    while failures < 40:
        try:
            os.read(tokens_r, 1)
        except BlockingIOError:
            break  # the cap is reached: stop forking
        try:
            pid = os.fork()
        except OSError as exc:
            os.write(tokens_w, b"t")  # give the token back
            os.write(reports, b"!" if exc.errno in (errno.EAGAIN, errno.ENOMEM) else b"?")
            failures += 1
            time.sleep(0.05)
            continue
        if pid == 0:
            failures = 0  # the child bombs too
        else:
            os.write(reports, b"+")
    sleep_forever()


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        sleep_forever()
