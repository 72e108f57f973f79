"""``python -m scoring BENCHMARK ...``: the official scripts' arguments, our numbers.

Each benchmark module exposes ``register(subparsers)``, which adds its
sub-command with the official script's arguments and sets ``run`` (a function
``argparse.Namespace -> EvalResult``) as the parser default.  This module adds
the options every command shares, prints the metrics as JSON on stdout,
writes ``--per-example`` files, and turns every input problem into one line on
stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from scoring.errors import ScoringError
from scoring.result import EvalResult

# Exit statuses: 0 success, 1 undefined metric / input error, 2 usage error (argparse's own).
EXIT_INPUT_ERROR = 1
# What some commands need beyond the standard library: requirements.txt (a starting kit's, the
# platform's pins) installs it; without it ``--help`` still lists every command.
INSTALL_HINT = "pip install -r requirements.txt"

# Sub-command -> the module that registers it, in the order ``--help`` lists them.
# A run imports only its command's module: the others pull in numpy and friends,
# about a quarter of a second that a SQuAD evaluation of 20,000 questions would
# otherwise spend before reading a byte.
COMMANDS: dict[str, str] = {
    "squad1": "scoring.squad",
    "squad2": "scoring.squad",
    "mrqa": "scoring.mrqa",
    "mrqa-macro": "scoring.mrqa",
    "mrqa-build": "scoring.mrqa_build",
    "mrqa-partition": "scoring.mrqa_build",
    "mrqa-compare": "scoring.mrqa_build",
    "cmrc2018": "scoring.cmrc2018",
    "dureader": "scoring.dureader",
    "mrc2018": "scoring.mrc2018",
    "quac": "scoring.quac",
    "coqa": "scoring.coqa",
    "unanswerable": "scoring.unanswerable",
    "naq-build": "scoring.naq",
    "naq-vectors": "scoring.naq",
    "deepread": "scoring.deepread",
    "metaeval": "scoring.metaeval",
    "rank": "scoring.ranking",
    "significance": "scoring.significance",
    "converse": "scoring.protocol",
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def add_common_options(parser: argparse.ArgumentParser, *, rounding: bool = True) -> None:
    """Options every evaluation command takes."""
    parser.add_argument(
        "--per-example",
        metavar="OUT.json",
        help="write the per-question scores (id, scores, slice labels) to this JSON file",
    )
    if rounding:
        parser.add_argument(
            "--official-rounding",
            action="store_true",
            help="round the printed numbers exactly as the official script does",
        )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="reject defects the official script tolerates (e.g. a prediction file that repeats an id)",
    )


def build_parser(argv: Sequence[str] | None = None, *, prog: str = "python -m scoring") -> argparse.ArgumentParser:
    """The parser; with ``argv`` naming a command, only that command's module is imported."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Machine reading comprehension metrics, identical to the official scripts.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    command = next((a for a in (argv or ()) if not a.startswith("-")), None)
    modules = (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES
    missing: dict[str, str] = {}
    for name in modules:
        try:
            importlib.import_module(name).register(sub)
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.split(".")[0] == "scoring":
                raise
            missing[name] = exc.name.split(".")[0]
    for command_name, module in COMMANDS.items():
        if module in missing:
            needs = f"needs the {missing[module]} package: {INSTALL_HINT}"
            stub = sub.add_parser(command_name, help=f"({needs})", add_help=False)
            stub.add_argument("rest", nargs=argparse.REMAINDER)
            stub.set_defaults(run=None, needs_package=f"{prog} {command_name} {needs}")
    return parser


def _json_default(obj: Any) -> Any:
    # numpy scalars sneak into results; print them as plain numbers.
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False, default=_json_default)


def write_json(path: str, obj: Any) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(dumps(obj, indent=1))
        fh.write("\n")
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m scoring") -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv, prog=prog)
    args = parser.parse_args(argv)
    if getattr(args, "needs_package", None):
        print(f"error: {args.needs_package}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    try:
        result: EvalResult = args.run(args)
        for warning in result.warnings:
            print(warning, file=sys.stderr)
        if getattr(args, "per_example", None):
            write_json(args.per_example, result.per_example)
        if result.output is not None:
            sys.stdout.write(result.output)
        else:
            print(dumps(result.metrics))
    except ScoringError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        return 130
    return 0


def main_script() -> int:
    """The installed command (``readerboard-score``, deploy/packages/scoring): the same, by its name."""
    return main(prog="readerboard-score")
