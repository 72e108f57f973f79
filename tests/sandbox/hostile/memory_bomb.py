"""Hostile system: allocate and touch memory, 16 MiB at a time, up to 4 GiB.

EXPECT: oom

Each chunk is a bytes object filled with a non-zero byte, so every page is really written (a zeroed
bytearray could stay as untouched copy-on-write zero pages). With --memory 256m --memory-swap 256m the
kernel kills the process at about 256 MiB and docker reports State.OOMKilled (exit code 137). Prints
the amount held after each chunk; if it ever holds 4 GiB it prints "BREACH: ..." and exits 4; a
MemoryError (an allocation refused rather than a kill) prints "BLOCKED: ..." and exits 3.
"""

from __future__ import annotations

import sys

CHUNK = 16 * 1024 * 1024
LIMIT = 4 * 1024 * 1024 * 1024


def main() -> int:
    held: list[bytes] = []
    total = 0
    while total < LIMIT:
        try:
            held.append(b"\x5a" * CHUNK)
        except MemoryError:
            held.clear()
            print(f"BLOCKED: allocation refused with MemoryError after {total >> 20} MiB", flush=True)
            return 3
        total += CHUNK
        print(f"holding {total >> 20} MiB", flush=True)
    print(f"BREACH: allocated and touched {total >> 20} MiB: no memory limit", flush=True)
    return 4


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
