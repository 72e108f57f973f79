"""Hostile system: ignore every catchable signal and sleep forever.

EXPECT: timeout

SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2 and SIGALRM are ignored (the script is PID 1 in the
container, which ignores unhandled signals anyway), and a grandchild that also ignores them is left
behind in its own session. Only SIGKILL stops it: the runner must use `docker kill` (SIGKILL) or
`docker stop` with a short grace period, and must not wait for the process to leave on its own.
Prints no "BLOCKED:"/"BREACH:" line: the containment is the timeout itself.
"""

from __future__ import annotations

import os
import signal
import time

IGNORED = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE", "SIGTSTP"]


def ignore_signals() -> None:
    for name in IGNORED:
        signal.signal(getattr(signal, name), signal.SIG_IGN)


def sleep_forever() -> None:
    while True:
        try:
            time.sleep(3600)
        except InterruptedError:
            continue


def main() -> None:
    ignore_signals()
    print(f"ignoring {', '.join(IGNORED)}; sleeping forever", flush=True)
    try:
        if os.fork() == 0:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            ignore_signals()
            sleep_forever()
        os.wait()
    except OSError as exc:
        print(f"NOTE: could not leave a daemonised grandchild ({exc!r})", flush=True)
    sleep_forever()


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
    sleep_forever()
