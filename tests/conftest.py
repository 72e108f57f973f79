"""The whole test tree: shared fixtures, and tier markers applied from where a test lives.

Fixtures shared between test modules live in ``tests/fixtures/`` and are registered here, once;
plain helpers live in ``tests/builders/`` and are imported normally.  No test module imports another
test module or a fixture by name (``tests/test_layout.py`` checks it).

The tiers (``tests/builders/tiers.py``): ``tests/e2e/`` is marked ``browser``, ``tests/sandbox/``
``docker`` and ``tests/processes/`` ``processes``, here, by directory; a test that uses a slow fixture
outside its tier fails the collection.  A test that touches the database is marked ``database``
(from its ``django_db`` marker or database fixtures): the second pass of deploy/test.sh, on SQLite,
runs those.
"""

from __future__ import annotations

import pytest

from tests.builders.tiers import markers_of, misplaced

pytest_plugins = [
    "tests.fixtures.browser",
    "tests.fixtures.cast",
    "tests.fixtures.console",
    "tests.fixtures.dialogs",
    "tests.fixtures.judging",
    "tests.fixtures.kits",
    "tests.fixtures.system_uploads",
    "tests.fixtures.systems",
]


def pytest_itemcollected(item: pytest.Item) -> None:
    """Markers as each test is collected, before any plugin reads them (-m)."""
    path = item.nodeid.split("::")[0]
    fixtures = getattr(item, "fixturenames", ())
    for marker in sorted(markers_of(path, fixtures)):
        item.add_marker(marker)
    if item.get_closest_marker("django_db") or "_django_db_helper" in fixtures:
        item.add_marker("database")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong = [f"{item.nodeid}: {reason}" for item in items
             if (reason := misplaced(item.nodeid.split("::")[0], getattr(item, "fixturenames", ())))]
    if wrong:
        raise pytest.UsageError("slow tests outside their tier directory:\n" + "\n".join(wrong))
