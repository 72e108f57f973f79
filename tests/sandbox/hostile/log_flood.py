"""Hostile system: flood stdout and stderr (about 500 MiB in all), then write empty answers.

EXPECT: invalid_output

Writes READERBOARD_HOSTILE_FLOOD_MIB MiB (500 by default), half to stdout and half to stderr, in
1 KiB lines as fast as the pipe takes them, then writes `{}` to every output file named in
/input/manifest.json and exits 0. The runner must cap what it keeps of the logs (and keep draining
the pipes, or the container blocks and times out instead) and must not let the flood reach the host's
disk through the Docker log driver. Scoring then fails with "missing answers" for every question,
so the outcome is invalid_output.
"""

from __future__ import annotations

import json
import os
import sys
import time

FLOOD_MIB = int(os.environ.get("READERBOARD_HOSTILE_FLOOD_MIB", "500"))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def datasets() -> list[dict[str, str]]:
    try:
        with open("/input/manifest.json") as f:
            return list(json.load(f).get("datasets", []))
    except (OSError, ValueError) as exc:
        print(f"NOTE: no usable manifest ({exc!r})", flush=True)
        return []


def output_path(dataset: dict[str, str]) -> str:
    name = dataset.get("output") or f"{dataset.get('name', 'predictions')}.json"
    return os.path.join("/output", os.path.basename(name))


def main() -> int:
    started = time.monotonic()
    print(f"flooding {FLOOD_MIB} MiB to stdout and stderr", flush=True)
    line = b"flood " + b"x" * 1017 + b"\n"
    block = line * 1024
    for i in range(FLOOD_MIB):
        write_all(1 if i % 2 == 0 else 2, block)
    elapsed = time.monotonic() - started
    for dataset in datasets():
        with open(output_path(dataset), "w") as f:
            f.write("{}")
    print(f"flood done: {FLOOD_MIB} MiB in {elapsed:.1f} s; wrote {{}} for every dataset", flush=True)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
