"""A hostile system's page-cache channel (issue 22, section 2), run inside the sandbox.

Copied into a run's /system and run with the base image's python3:

    python3 -S -I probe.py evict           evict the probe's files of the image from the page cache
    python3 -S -I probe.py set BITS_FILE   evict them all, then read the first page of those whose bit is 1
    python3 -S -I probe.py read            time a first-byte read of each and print ``BITS <0/1 string>``

The files are image files Python's start-up never reads (modules of packages the probe does not
import), the same sorted list in every run.  ``read`` calibrates its threshold on files of its own:
it evicts them and times a read (uncached), then times a second read (cached).
"""

import os
import sys
import time

ROOT = "/usr/lib/python3.11"
# Start-up (``-S -I``) reads the top-level modules and encodings/: every other package is left alone.
SKIP = ("encodings",)
BITS = 256
CALIBRATION = 24


def files() -> list[str]:
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if folder != ROOT or d not in SKIP)
        if folder == ROOT:
            continue
        for name in sorted(names):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) > 1024:
                found.append(path)
    found.sort()
    if len(found) < BITS + CALIBRATION:
        sys.exit(f"only {len(found)} probe files in the image")
    return found[: BITS + CALIBRATION]


def evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def first_byte_ns(path: str) -> int:
    start = time.perf_counter_ns()
    fd = os.open(path, os.O_RDONLY)
    os.read(fd, 1)
    os.close(fd)
    return time.perf_counter_ns() - start


def main() -> None:
    paths = files()
    cells, calibration = paths[:BITS], paths[BITS:]
    mode = sys.argv[1]
    if mode == "evict":
        for path in paths:
            evict(path)
        print("evicted", len(paths))
    elif mode == "set":
        with open(sys.argv[2], encoding="ascii") as fh:
            bits = fh.read().strip()
        for path in cells:
            evict(path)
        for path, bit in zip(cells, bits):
            if bit == "1":
                with open(path, "rb") as fh:
                    fh.read(4096)
        print("set", bits.count("1"), "of", len(bits))
    elif mode == "read":
        times = [first_byte_ns(path) for path in cells]
        for path in calibration:
            evict(path)
        cold = sorted(first_byte_ns(path) for path in calibration)
        warm = sorted(first_byte_ns(path) for path in calibration)
        threshold = (cold[len(cold) // 2] * warm[len(warm) // 2]) ** 0.5
        print(f"CALIBRATION cold {cold[len(cold) // 2]} ns warm {warm[len(warm) // 2]} ns")
        print("BITS " + "".join("1" if t < threshold else "0" for t in times))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
