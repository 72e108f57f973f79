"""What the scoring tests share: running the command line in-process, and finding golden cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scoring.cli import main
from tests.builders.shared import shared_path


def run_cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, Any, str]:
    """``python -m scoring ARGS``: (exit status, stdout parsed as JSON or None when empty, stderr)."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    out = json.loads(captured.out) if captured.out.strip() else None
    return code, out, captured.err


def run_cli_text_on_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    """Like :func:`run_cli`, but stdout is parsed only on success and kept as text otherwise."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else out, err


def golden_cases(benchmark: str) -> list[Path]:
    """Every case folder of ``../shared/golden/<benchmark>`` (skips, or fails in CI, without it)."""
    root = shared_path("golden", benchmark)
    return sorted(p for p in root.iterdir() if (p / "case.json").exists())


def parametrize_golden(metafunc: pytest.Metafunc, fixture: str, benchmark: str) -> None:
    """Make ``fixture`` one test per golden case, so hidden cases of the same kind are picked up too.

    Without ../shared there are no cases (and no tests), rather than a collection error.
    """
    if fixture not in metafunc.fixturenames:
        return
    try:
        cases = golden_cases(benchmark)
    except pytest.skip.Exception:
        cases = []
    metafunc.parametrize(fixture, cases, ids=[c.name for c in cases])


def assert_one_line_error(capsys: pytest.CaptureFixture[str], args: list[Any], *needles: str) -> None:
    """The command fails with status 1 and one ``error:`` line holding every needle, never a traceback."""
    code, out, err = run_cli(capsys, *args)
    assert code == 1 and out is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
