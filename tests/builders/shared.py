"""Where the shared data and golden cases are.

``../shared`` sits beside the repository on developers' machines and in CI.
Tests that need it are skipped when it is absent, except in CI (``CI=true``),
where a missing ``../shared`` is a failure: a green run must prove the goldens.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("READERBOARD_SHARED", REPO.parent / "shared"))


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{path} is missing; CI needs ../shared beside the repository")
        pytest.skip(f"{path} is not available")
    return path
