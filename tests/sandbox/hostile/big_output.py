"""Hostile system: write a 1 GiB prediction file.

EXPECT: output_too_large

Writes the first output file named in /input/manifest.json (predictions.json without a manifest)
1 MiB at a time, as the start of a JSON object that never ends, up to READERBOARD_HOSTILE_OUTPUT_MIB
MiB (1024 by default) or until the write fails (ENOSPC when /output is a size-limited tmpfs), writes
`{}` for the other datasets and exits 0. The runner must report output_too_large: when /output is a
tmpfs, its size must be above the output cap, or a full tmpfs must itself count as too large.
"""

from __future__ import annotations

import errno
import json
import os
import sys

MIB = 1024 * 1024
LIMIT_MIB = int(os.environ.get("READERBOARD_HOSTILE_OUTPUT_MIB", "1024"))


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
    paths = [output_path(d) for d in datasets()] or ["/output/predictions.json"]
    for path in paths[1:]:
        with open(path, "w") as f:
            f.write("{}")
    block = b'"' + b"a" * (MIB - 4) + b'",\n'
    written, reason = 0, f"reached {LIMIT_MIB} MiB"
    fd = os.open(paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        written += os.write(fd, b'{"padding": [\n')
        while written < LIMIT_MIB * MIB:
            try:
                n = os.write(fd, block)
            except OSError as exc:
                reason = errno.errorcode.get(exc.errno or 0, repr(exc))
                break
            written += n
            if n < len(block):
                reason = "short write (file system full)"
                break
    finally:
        os.close(fd)
    print(f"OUTPUT: wrote {written // MIB} MiB to {paths[0]} ({reason})", flush=True)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
