"""Peak memory of inspecting the worst system uploads (issue 17): what the web process (and the
compute worker, which inspects again before ``docker load``) spends on an archive before refusing it.

    .venv/bin/python -m tests.benchmarks.bench_system_inspect_memory

Each case runs in a fresh subprocess that has imported everything; growth = its ``VmHWM`` after
the call - its ``VmRSS`` before.  The archives are tiny on disk and cheap to upload:

* a gzipped ``docker save`` archive whose config is 6 MiB of ``[{}, {}, ...]``;
* a gzipped tar of 200,000 empty entries (docker save writes a few per layer);
* a zip of 300,000 empty files (a code bundle may hold 2,000).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PROBE = """
import sys, django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings.dev")
django.setup()
from leaderboard.submissions import systems
def kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")
before = kb("VmRSS")
inspect = systems.bundle_inspect if sys.argv[1].endswith(".zip") else systems.image_archive_inspect
try:
    inspect(sys.argv[1], max_uncompressed=6 * 2**30)
    verdict = "accepted"
except systems.ArchiveError as exc:
    verdict = "refused: " + str(exc)[:90]
print(f"{(kb('VmHWM') - before) / 1024:.1f}\\t{verdict}")
"""


def tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        config = json.dumps({"os": "linux", "architecture": "amd64", "junk": [{}] * 2_000_000}).encode()
        name = hashlib.sha256(config).hexdigest() + ".json"
        manifest = json.dumps([{"Config": name, "Layers": []}]).encode()
        path = Path(tmp, "config.tar.gz")
        path.write_bytes(tar_gz({"manifest.json": manifest, name: config}))
        cases.append((f"image whose config is {len(config) / 2**20:.0f} MiB of [{{}}, ...]", path))
        path = Path(tmp, "entries.tar.gz")
        path.write_bytes(tar_gz({f"e{i}": b"" for i in range(200_000)}))
        cases.append(("tar.gz of 200,000 empty entries", path))
        path = Path(tmp, "files.zip")
        with zipfile.ZipFile(path, "w") as archive:
            for i in range(300_000):
                archive.writestr(zipfile.ZipInfo(f"f{i}"), b"")
        cases.append(("zip of 300,000 empty files", path))
        print("| archive | size on disk | growth (MiB) | verdict |\n|---|---:|---:|---|")
        for what, path in cases:
            out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True,
                                 check=True).stdout.strip().splitlines()[-1]
            growth, verdict = out.split("\t")
            print(f"| {what} | {path.stat().st_size / 1024:,.0f} KiB | {growth} | {verdict} |")


if __name__ == "__main__":
    main()
