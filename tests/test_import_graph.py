"""The import graph of the three packages has no circle, and no two files share a name for two jobs.

import-linter's contracts (``pyproject.toml``) check the order between packages and apps; they cannot
see a circle between two files of one app, and a function-local import hides one from a reader. This
test builds the whole graph with grimp (import-linter's own engine, which reads imports inside
functions and under ``TYPE_CHECKING`` too) and fails on any strongly connected group of modules.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("scoring", "leaderboard", "workers")

# File names that Django or Python give one role wherever they appear: every app has its own
# ``views.py`` for its pages, and so on. Any other name must be unique across the three packages.
ROLE_NAMES = {
    "__init__.py",
    "__main__.py",
    "admin.py",
    "apis.py",
    "apps.py",
    "base.py",  # the module its siblings build on (base settings, the suite protocol)
    "cli.py",  # a package's command line (scoring's, the participants' client's)
    "errors.py",
    "forms.py",
    "models.py",
    "selectors.py",
    "services.py",
    "urls.py",
    "views.py",
}


def _suite_and_its_library(paths: list[str]) -> bool:
    """A suite module takes the name of the scoring module it adapts: the pair is one benchmark, seen
    from the platform (gold files, options, columns) and from the library (the metric)."""
    return sorted(str(Path(p).parent) for p in paths) == ["leaderboard/challenges/suites", "scoring"]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative: the graph is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.find_modules_directly_imported_by(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def _describe(graph: grimp.ImportGraph, group: list[str]) -> str:
    members = set(group)
    lines = []
    for module in group:
        for imported in sorted(graph.find_modules_directly_imported_by(module) & members):
            details = graph.get_import_details(importer=module, imported=imported)
            where = ", ".join(f"l.{d['line_number']}" for d in details) or "?"
            lines.append(f"    {module} -> {imported} ({where})")
    return "\n".join(lines)


def test_no_two_modules_import_each_other_even_through_others() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    groups = _cycles(graph)
    assert not groups, "import circles:\n" + "\n\n".join(_describe(graph, g) for g in groups)


def test_the_cycle_check_sees_a_circle_when_there_is_one() -> None:
    # The probe: the same function on a graph with a known circle must report it.
    graph = grimp.ImportGraph()
    for name in ("a", "a.b", "a.c", "a.d"):
        graph.add_module(name)
    graph.add_import(importer="a.b", imported="a.c")
    graph.add_import(importer="a.c", imported="a.d")
    graph.add_import(importer="a.d", imported="a.b")
    assert _cycles(graph) == [["a.b", "a.c", "a.d"]]


def test_no_two_files_share_a_name_for_different_jobs() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            relative = path.relative_to(REPO)
            if "migrations" in relative.parts or "management" in relative.parts:
                continue  # migrations are numbered; a command is named for what it runs
            if path.name not in ROLE_NAMES:
                by_name[path.name].append(str(relative))
    shared = {
        name: paths
        for name, paths in by_name.items()
        if len(paths) > 1 and not _suite_and_its_library(paths)
    }
    assert not shared, f"one name, several jobs (name each file by its role): {shared}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_in_the_graph(package: str) -> None:
    # A package missing from the graph would pass the cycle test by not being looked at.
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert any(m == package or m.startswith(package + ".") for m in graph.modules)


def test_comments_state_the_rule_not_the_issue_that_asked_for_it() -> None:
    # The rule belongs in the comment, the issue number in the commit: a number sends the reader to a
    # tracker they may not have, and stays when the rule changes.
    cited = []
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for number, line in enumerate(text.splitlines(), 1):
                if re.search(r"\bissue\s+[0-9]+", line, flags=re.IGNORECASE):
                    cited.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not cited, "comments that cite an issue number:\n" + "\n".join(cited)


# Interface code: what answers a request, a command or the admin. Domain modules (services, selectors
# and the rest) never import it, so a rule never lives in a page. ``console.actions`` is the console's
# table of forms and confirmations that its pages and API share: interface too.
INTERFACE_PARTS = {"views", "apis", "admin", "internal_views", "urls", "templatetags", "management", "forms",
                   "context_processors", "wsgi"}
INTERFACE_MODULES = {"leaderboard.console.actions"}


def _is_interface(module: str) -> bool:
    return module in INTERFACE_MODULES or any(part in INTERFACE_PARTS for part in module.split(".")[1:])


def test_no_domain_module_imports_a_page_an_api_an_admin_or_a_command() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    climbs = []
    for module in sorted(graph.modules):
        if not module.startswith("leaderboard.") or _is_interface(module):
            continue
        if module.startswith(("leaderboard.settings", "leaderboard.migrations")) or ".migrations" in module:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported.startswith("leaderboard.") and _is_interface(imported):
                climbs.append(f"{module} -> {imported}")
    assert not climbs, "domain modules importing interface code:\n" + "\n".join(climbs)
