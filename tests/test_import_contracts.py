"""The import contracts that keep the run contract and the participants' client apart list every other
part of ``leaderboard``.

``leaderboard.sandbox`` (the run contract, archive checks, the answer rule) is the only part of the web
app a compute worker may import, and it imports no other part.  import-linter's ``forbidden``
contracts name what may not be imported, one module at a time: a new app or top-level module of
``leaderboard`` that is not added to both lists would slip past them.  Pure Python: pyproject.toml and
the folder, no Django.

``leaderboard.client`` (the participants' command-line client) is installed on its own, without the
platform: its contract forbids it every other part of ``leaderboard``, ``scoring``, ``workers`` and Django.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PURE = "The run contract is pure"
COMPUTE = "The compute worker holds no Django, no database, no platform settings"
CLIENT = "The participants' client stands alone"


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _leaderboard_top_level() -> set[str]:
    """Every package and module directly under leaderboard/, as an import path."""
    folder = REPO / "leaderboard"
    packages = {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
    return {f"leaderboard.{name}" for name in packages | modules}


def test_the_folder_is_read_as_the_apps_and_modules_it_holds() -> None:
    found = _leaderboard_top_level()
    assert {"leaderboard.sandbox", "leaderboard.core", "leaderboard.submissions", "leaderboard.settings",
            "leaderboard.urls"} <= found


@pytest.mark.parametrize("name", [PURE, COMPUTE])
def test_every_part_of_leaderboard_but_the_run_contract_is_forbidden(name: str) -> None:
    contract = _contracts()[name]
    assert contract["type"] == "forbidden"
    forbidden = set(contract["forbidden_modules"])
    missing = sorted(_leaderboard_top_level() - {"leaderboard.sandbox"} - forbidden)
    assert not missing, f"{name!r}: add {', '.join(missing)} to its forbidden_modules"
    assert "django" in forbidden
    assert not {m for m in forbidden if m == "leaderboard.sandbox" or m.startswith("leaderboard.sandbox.")}


def test_the_run_contract_imports_no_worker_and_the_compute_worker_no_control_side() -> None:
    contracts = _contracts()
    assert contracts[PURE]["source_modules"] == ["leaderboard.sandbox"]
    assert "workers" in contracts[PURE]["forbidden_modules"]
    assert {"workers.celery_app", "workers.control_runs", "workers.tasks"} <= set(contracts[COMPUTE]["forbidden_modules"])


def test_the_client_may_import_nothing_of_the_platform() -> None:
    contract = _contracts()[CLIENT]
    assert contract["type"] == "forbidden"
    assert contract["source_modules"] == ["leaderboard.client"]
    forbidden = set(contract["forbidden_modules"])
    missing = sorted(_leaderboard_top_level() - {"leaderboard.client"} - forbidden)
    assert not missing, f"{CLIENT!r}: add {', '.join(missing)} to its forbidden_modules"
    assert {"django", "rest_framework", "scoring", "workers", "leaderboard.sandbox"} <= forbidden
