"""The environment a production process starts with (``leaderboard.settings.prod``)."""

from __future__ import annotations

import os
from pathlib import Path

SECRET = "a-production-secret-for-this-test-only-0123456789"


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment without READERBOARD_* (the suite's own database URL among them),
    with the production settings (not the tests')."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("READERBOARD_")}
    env["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings.prod"
    env["READERBOARD_VAR_DIR"] = str(tmp_path / "var")
    return {**env, **extra}
