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


def junit(tmp_path: Path, name: str, cases: dict[str, str]) -> Path:
    body = {"passed": "", "failure": "<failure message='x'/>", "error": "<error message='x'/>",
            "skipped": "<skipped message='x'/>"}
    rows = "".join(f"<testcase classname='tests.t' name='{case}'>{body[outcome]}</testcase>"
                   for case, outcome in cases.items())
    path = tmp_path / name
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
    code = passes_agree.main([str(junit(tmp_path, "full.xml", full)), str(junit(tmp_path, "subset.xml", subset))])
    assert code == (0 if agree else 1)
