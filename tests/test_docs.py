"""The documentation site's generated pages are what the code says (``docs/generate.py``).

``deploy/test.sh`` also builds the whole site with ``mkdocs build --strict``, so a broken link, a missing
snippet or a page left out of the navigation fails the suite.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.builders.settings_names import compute_variables_read, variables_read

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", REPO / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_every_generated_page_is_current(generate: ModuleType) -> None:
    stale = [str(path.relative_to(REPO)) for path, text in generate.pages().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"{stale} not current: run .venv/bin/python docs/generate.py"


def test_the_settings_page_names_every_variable_the_platform_reads(generate: ModuleType) -> None:
    page = (REPO / "docs" / "operators" / "settings.md").read_text(encoding="utf-8")
    listed = {name for name in (v.name for v in generate.settings_variables()) if f"\n`{name}` (default" in page}
    # Read another way (tests/builders/settings_names.py); a bare prefix (READERBOARD_WEB_) is no name.
    read = {name for name in variables_read() | compute_variables_read() if not name.endswith("_")}
    assert read <= listed, read - listed
    assert "\n:   -\n" not in page, "a setting without a word on what it is for: write a comment at the line that reads it"


def test_a_stale_page_is_found(generate: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a settings page missing a row is not current."""
    page = tmp_path / "settings.md"
    page.write_text(generate.settings_page().replace("READERBOARD_SERVE", "READERBOARD_SERVED"), encoding="utf-8")
    monkeypatch.setattr(generate, "SETTINGS_PAGE", page)
    assert generate.pages()[page] != page.read_text(encoding="utf-8")
