"""deploy/passes_agree.py: the SQLite pass of deploy/test.sh agrees with the full PostgreSQL pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "passes_agree.py"
_spec = importlib.util.spec_from_file_location("passes_agree", SCRIPT)
assert _spec is not None and _spec.loader is not None
passes_agree = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(passes_agree)


def junit(folder: Path, name: str, cases: dict[str, str]) -> Path:
    body = {"passed": "", "failure": "<failure message='x'/>", "error": "<error message='x'/>",
            "skipped": "<skipped message='x'/>"}
    rows = "".join(f"<testcase classname='tests.t' name='{case}'>{body[outcome]}</testcase>"
                   for case, outcome in cases.items())
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"<testsuites><testsuite name='pytest'>{rows}</testsuite></testsuites>")
    return path


@pytest.mark.parametrize(("full", "subset", "agree"), [
    ({"a": "passed", "b": "passed", "c": "skipped"}, {"a": "passed", "c": "skipped"}, True),
    ({"a": "passed", "b": "passed"}, {"a": "skipped"}, False),  # skipped on SQLite, run on Postgres
    ({"a": "passed"}, {"a": "passed", "b": "passed"}, False),  # dropped from the full pass
    ({"a": "failure"}, {"a": "passed"}, False),
    ({"a": "passed"}, {}, False),  # the database pass ran nothing
])
def test_every_test_of_the_database_pass_has_its_outcome_on_the_full_pass(
    tmp_path: Path, full: dict[str, str], subset: dict[str, str], agree: bool
) -> None:
    # Each pass writes two files: its fast tests' (under xdist) and its slow tiers'.
    halves = len(full) // 2
    junit(tmp_path / "full", "fast.xml", dict(list(full.items())[:halves]))
    junit(tmp_path / "full", "tiers.xml", dict(list(full.items())[halves:]))
    junit(tmp_path / "subset", "fast.xml", subset)
    assert passes_agree.main([str(tmp_path / "full"), str(tmp_path / "subset")]) == (0 if agree else 1)
