"""The ``READERBOARD_*`` names the platform's code reads, found in its source (tests of the deployment
files and of the settings page use them)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def variables_read() -> set[str]:
    """READERBOARD_* names the settings and the production scripts read."""
    names = set()
    for path in (REPO / "leaderboard" / "settings").glob("*.py"):
        names |= {f"READERBOARD_{n}" for n in re.findall(r"\benv(?:_bool|_int)?\(\s*\"([A-Z0-9_]+)\"", path.read_text())}
    gunicorn = (DEPLOY / "gunicorn.conf.py").read_text()
    names |= {f"READERBOARD_WEB_{n}" for n in re.findall(r"_env_int\(\"([A-Z0-9_]+)\"", gunicorn)}
    for path in (DEPLOY / "gunicorn.conf.py", DEPLOY / "serve.sh"):
        names |= set(re.findall(r"READERBOARD_[A-Z0-9_]+", path.read_text()))
    return names


def compute_variables_read() -> set[str]:
    """READERBOARD_* names the compute worker reads (workers/compute.py: no Django settings there)."""
    text = (REPO / "workers" / "compute.py").read_text()
    return {f"READERBOARD_{n}" for n in re.findall(r"\b_env\(\s*\"([A-Z0-9_]+)\"", text)}
