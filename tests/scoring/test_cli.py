"""The command line's dispatch: each command imports only its own module, and the table is complete."""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys

import pytest

from scoring import cli


@pytest.mark.parametrize("module", cli.COMMAND_MODULES)
def test_the_command_table_names_exactly_what_each_module_registers(module: str) -> None:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    assert set(sub.choices) == {c for c, m in cli.COMMANDS.items() if m == module}


def test_help_without_a_command_lists_every_command() -> None:
    parser = cli.build_parser([])
    listed = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert list(listed) == list(cli.COMMANDS)


def test_a_squad_run_does_not_import_the_other_benchmarks_or_numpy() -> None:
    code = ("import sys; from scoring.cli import build_parser; build_parser(['squad1', 'a', 'b']); "
            "print(sorted(m for m in sys.modules if m.startswith(('scoring.', 'numpy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = ast.literal_eval(out)
    assert "scoring.squad" in loaded
    assert not any(m.startswith("numpy") or m in ("scoring.significance", "scoring.dureader") for m in loaded)
