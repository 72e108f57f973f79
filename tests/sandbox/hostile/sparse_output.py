"""Hostile system: a prediction file that is tiny on disk but huge when read (a sparse file).

EXPECT: output_too_large

Writes `{}` and then extends the first output file (predictions.json without a manifest) with
ftruncate to READERBOARD_HOSTILE_SPARSE_GIB GiB (16 by default) of holes: `du` and a tmpfs size limit
see a few KiB, st_size (and anything that reads the file) sees 16 GiB of NUL bytes. The runner must
measure the apparent size (st_size), not the blocks used, and must never read the file whole.
"""

from __future__ import annotations

import json
import os
import sys

GIB = int(os.environ.get("READERBOARD_HOSTILE_SPARSE_GIB", "16"))


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
    with open(paths[0], "wb") as f:
        f.write(b"{}")
        try:
            f.truncate(GIB << 30)
        except OSError as exc:
            print(f"NOTE: cannot extend {paths[0]} sparsely ({exc!r})", flush=True)
            return 0
    st = os.stat(paths[0])
    print(f"OUTPUT: {paths[0]} has st_size {st.st_size >> 20} MiB and uses {st.st_blocks * 512 >> 10} KiB",
          flush=True)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception as exc:  # never a traceback: its source lines could look like report lines
        print(f"ERROR: {exc!r}", flush=True)
        code = 5
    sys.exit(code)
