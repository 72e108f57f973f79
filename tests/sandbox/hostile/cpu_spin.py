"""Hostile system: burn CPU forever (two busy processes, to see --cpus 1 hold them to one core).

EXPECT: timeout

Never writes output and never exits; the runner's wall-clock limit must kill it. While it runs,
`docker stats` should show at most about 100 % CPU (one core) for the container. Prints no
"BLOCKED:"/"BREACH:" line: the containment is the timeout itself.
"""

from __future__ import annotations

import os
import sys


def spin() -> None:
    n = 0
    while True:
        n += 1


def main() -> None:
    print("spinning on two processes until killed", flush=True)
    try:
        os.fork()
    except OSError as exc:
        print(f"NOTE: fork refused ({exc.strerror}); spinning on one process", flush=True)
    spin()


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        sys.exit(5)
