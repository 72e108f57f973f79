"""The test tree's own rules, read from the source (so they hold whatever a run selects).

- No module under tests/ imports a test module (``test_*.py``), a conftest or a fixture module
  (``tests/fixtures/``): shared helpers are in ``tests/builders/``, shared fixtures in
  ``tests/fixtures/``, registered once in ``tests/conftest.py`` and found by pytest by name.
- Builders hold no fixtures (a fixture imported by name is invisible to pytest's own lookup).
- Nothing slow hides in the fast lane: a test module outside the tier of a slow fixture asks for none
  of them (``tests/builders/tiers.py``), and none starts a browser or a process by hand.  The
  collection applies the same rule to every collected test, fixtures of fixtures included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.builders.tiers import (
    FIXTURE_MARKERS,
    FIXTURE_TIERS,
    NAME_TIERS,
    TIER_MARKERS,
    markers_of,
    misplaced,
    tier_of,
)

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
MODULES = sorted(path for path in TESTS.rglob("*.py") if "benchmarks" not in path.relative_to(TESTS).parts)


def relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # "from tests.leaderboard import test_uploads" imports a test module too.
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def forbidden(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "tests" and (
        any(part.startswith("test_") or part == "conftest" for part in parts[1:])
        or parts[1:2] == ["fixtures"]
    )


def is_fixture(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        "fixture" in ast.unparse(decorator) for decorator in node.decorator_list)


def test_no_module_imports_a_test_module_a_conftest_or_a_fixture_module() -> None:
    wrong = [f"{relative(path)}:{line}: imports {module}"
             for path in MODULES for line, module in imported_modules(ast.parse(path.read_text()))
             if forbidden(module)]
    assert not wrong, "\n".join(wrong)


def test_builders_hold_no_fixtures() -> None:
    wrong = [f"{relative(path)}:{node.lineno}: fixture {node.name}"  # type: ignore[attr-defined]
             for path in MODULES if path.parent == TESTS / "builders"
             for node in ast.walk(ast.parse(path.read_text())) if is_fixture(node)]
    assert not wrong, "\n".join(wrong)


def test_the_fixture_modules_are_all_registered() -> None:
    [registry] = [node.value for node in ast.parse((TESTS / "conftest.py").read_text()).body
                  if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "pytest_plugins"]
    modules = {f"tests.fixtures.{path.stem}" for path in (TESTS / "fixtures").glob("*.py") if path.stem != "__init__"}
    assert set(ast.literal_eval(registry)) == modules


def test_no_test_module_asks_for_a_slow_fixture_outside_its_tier() -> None:
    wrong = []
    for path in MODULES:
        if not path.name.startswith("test_"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    node.name.startswith("test_") or is_fixture(node)):
                names = [arg.arg for arg in node.args.args + node.args.kwonlyargs]
                reason = misplaced(relative(path), names)
                if reason:
                    wrong.append(f"{node.name}: {reason}")
    assert not wrong, "\n".join(wrong)


def test_no_test_module_starts_a_browser_or_a_process_outside_its_tier() -> None:
    wrong = []
    for path in MODULES:
        if not path.name.startswith("test_"):
            continue
        tier = tier_of(relative(path))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name | ast.alias):
                name = node.id if isinstance(node, ast.Name) else (node.asname or node.name)
                if name in NAME_TIERS and tier not in NAME_TIERS[name]:
                    wrong.append(f"{relative(path)}:{getattr(node, 'lineno', '?')}: {name} outside "
                                 f"{', '.join(f'tests/{t}/' for t in sorted(NAME_TIERS[name]))}")
    assert not wrong, "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize(("path", "fixtures", "wrong"), [
    ("tests/leaderboard/test_x.py", ["cast", "browser"], "belongs in tests/e2e/"),
    ("tests/workers/test_x.py", ["engine"], "belongs in tests/sandbox/"),
    ("tests/processes/test_x.py", ["platform"], "belongs in tests/sandbox/"),
    ("tests/sandbox/test_x.py", ["platform", "browser"], "belongs in tests/e2e/"),
    ("tests/leaderboard/test_x.py", ["redis_server"], "belongs in tests/processes/"),
    ("tests/e2e/test_x.py", ["platform", "browser"], None),
    ("tests/sandbox/test_x.py", ["platform", "redis_server"], None),
    ("tests/leaderboard/test_x.py", ["cast", "live_server"], None),
])
def test_a_slow_fixture_outside_its_tier_is_refused(path: str, fixtures: list[str], wrong: str | None) -> None:
    reason = misplaced(path, fixtures)
    assert (reason is None) if wrong is None else (reason is not None and wrong in reason)


def test_markers_come_from_the_directory_and_the_slow_fixtures() -> None:
    assert markers_of("tests/e2e/test_x.py", ["browser", "platform"]) == {"browser", "docker", "processes"}
    assert markers_of("tests/sandbox/test_x.py", []) == {"docker"}
    assert markers_of("tests/processes/test_x.py", ["cast"]) == {"processes"}
    assert markers_of("tests/leaderboard/test_x.py", ["cast"]) == set()
    assert set(FIXTURE_TIERS.values()) == set(TIER_MARKERS)
    assert set(FIXTURE_MARKERS) == set(FIXTURE_TIERS)


def test_every_tier_marker_is_declared(pytestconfig: pytest.Config) -> None:
    declared = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(TIER_MARKERS.values()) <= declared
