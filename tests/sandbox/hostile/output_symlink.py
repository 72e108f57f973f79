"""Hostile system: leave traps in /output for the runner that collects the predictions.

EXPECT: invalid_output

Nothing here needs to break out of the container: the target is the host-side code that reads
/output after the run. In place of each output file named in /input/manifest.json it plants, in turn:
a symlink to a host file (READERBOARD_TEST_HOST_SECRET, the hidden gold when a test knows its path,
else /etc/shadow), a FIFO (reading it blocks for ever), a symlink to /dev/zero (endless) and a
symlink to a directory; READERBOARD_HOSTILE_TRAP=symlink|fifo|devzero|dir picks the first one. It
also leaves /output/escape -> / (a copy that follows symlinks would copy the host's whole file
system) and exits 0. The runner must refuse anything but regular files (lstat, O_NOFOLLOW), never
follow a link, never block on a FIFO, so the outcome is invalid_output without a hang or a leak.
Prints "PLANTED: <what>" lines; there is nothing for the sandbox itself to block.
"""

from __future__ import annotations

import json
import os
import sys

TRAPS = ["symlink", "fifo", "devzero", "dir"]


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


def plant(path: str, trap: str) -> None:
    if os.path.lexists(path):
        os.unlink(path)
    if trap == "symlink":
        target = os.environ.get("READERBOARD_TEST_HOST_SECRET") or "/etc/shadow"
        os.symlink(target, path)
        print(f"PLANTED: {path} -> {target} (a host file, if the runner follows links)", flush=True)
    elif trap == "fifo":
        os.mkfifo(path, 0o644)
        print(f"PLANTED: {path} is a FIFO (reading it blocks for ever)", flush=True)
    elif trap == "devzero":
        os.symlink("/dev/zero", path)
        print(f"PLANTED: {path} -> /dev/zero (reading it never ends)", flush=True)
    else:
        os.symlink("/", path)
        print(f"PLANTED: {path} -> / (a directory)", flush=True)


def main() -> int:
    first = os.environ.get("READERBOARD_HOSTILE_TRAP", "symlink")
    order = TRAPS[TRAPS.index(first) :] + TRAPS[: TRAPS.index(first)] if first in TRAPS else TRAPS
    paths = [output_path(d) for d in datasets()] or ["/output/predictions.json"]
    for i, path in enumerate(paths):
        plant(path, order[i % len(order)])
    os.symlink("/", "/output/escape")
    print("PLANTED: /output/escape -> / (a recursive copy that follows links copies the host)", flush=True)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
