"""The data page's starting kit, run on this machine as a team would run it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

from tests.builders.cast import DEMO_DATA

TRAIN_FILE = DEMO_DATA / "mrqa" / "SQuAD.train.jsonl.gz"


def run_kit_locally(kit: bytes, dev_files: dict[str, bytes], workdir: Path) -> tuple[Path, list[dict]]:
    """Unzip the kit, put the downloaded dev files in dev/, run the baseline, run every scoring line."""
    with zipfile.ZipFile(io.BytesIO(kit)) as z:
        z.extractall(workdir)
    [base] = [p for p in workdir.iterdir() if p.name.endswith("-starting-kit")]
    for name, content in dev_files.items():
        (base / "dev" / name).write_bytes(content)
    (base / "out").mkdir()
    env = {"READERBOARD_INPUT": "dev", "READERBOARD_OUTPUT": "out", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "system/run.py"], cwd=base, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    readme = (base / "README.md").read_text()
    # The kit's own scoring library, from its wheel (a wheel is a zip to put on the path; installing it
    # with pip, as the README says, is tests/kits/test_kits_followed.py's).
    [wheel] = base.glob("readerboard_scoring-*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(workdir / "kit-site")
    scoring_env = {"PYTHONPATH": str(workdir / "kit-site"), "PATH": "/usr/bin:/bin"}
    results = []
    for line in kit_score_lines(readme):
        out = subprocess.run(line.replace("python ", f"{sys.executable} ", 1), shell=True, cwd=base,
                             capture_output=True, text=True, timeout=300, env=scoring_env)
        assert out.returncode == 0, (line, out.stderr)
        if " -m scoring " in line:
            results.append({"line": line, "result": json.loads(out.stdout)})
    return base, results


def kit_score_lines(readme: str) -> Iterator[str]:
    """The commands of the README's "Score each dataset" block."""
    block = readme.split("3. Score each dataset", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    yield from (line for line in block.splitlines() if line.strip())
