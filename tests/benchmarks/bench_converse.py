"""The interactive protocol's cost per turn, with runc and with gVisor (runsc).

``python -m tests.benchmarks.bench_converse [--dialogs 20] [--turns 100] [--runtimes runc,runsc] [--json OUT]``

A trivial system (reads a request line, writes an answer line at once) plays ``--dialogs`` synthetic
dialogs of ``--turns`` turns each in gold-history mode, in one container per runtime, in the same
cage as every run.  Per turn: the time from the platform writing the request to its reading the
answer (``workers.converse``), which is the protocol's whole overhead since the system does nothing.
Reported in microseconds: median, p95, min, and the number of turns.  Needs the engine and the base
image (deploy/setup.sh).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE, Limits
from scoring.dialogs import Dialog, Mode, Session, Turn
from workers import runner
from workers.converse import converse

TRIVIAL = r"""
import json, sys
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"], "answer": "a"}), flush=True)
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogs", type=int, default=20)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--runtimes", default="runc,runsc")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    client = runner.engine()
    passage = " ".join(f"word{i}" for i in range(150))
    results = {}
    for runtime in args.runtimes.split(","):
        sessions = [Session(Dialog(f"d{d}", passage, [Turn(f"d{d}_q{t}", f"question {t} of dialog {d}?",
                                                          [f"answer {t}"]) for t in range(args.turns)]), Mode.GOLD)
                    for d in range(args.dialogs)]
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "in").mkdir()
            (Path(folder) / "out").mkdir()
            spec = runner.RunSpec(image=DEFAULT_BASE_IMAGE, command=["python3", "-u", "-c", TRIVIAL],
                                  input_dir=Path(folder) / "in", output_dir=Path(folder) / "out",
                                  limits=Limits(time_limit_s=600), runtime=runtime,
                                  labels={"readerboard.benchmark": "converse"})
            outcome = converse(client, spec, sessions, turn_limit_s=10)
        if outcome.verdict != "finished":
            print(f"{runtime}: {outcome.verdict}: {outcome.reason}", file=sys.stderr)
            return 1
        micros = sorted(s * 1e6 for s in outcome.latencies_s)
        summary = {"turns": len(micros), "median_us": round(statistics.median(micros)),
                   "p95_us": round(micros[int(0.95 * (len(micros) - 1))]), "min_us": round(micros[0]),
                   "run_s": round(outcome.duration_s, 2)}
        results[runtime] = summary
        print(f"{runtime:6s} {summary['turns']} turns: median {summary['median_us']} us, p95 {summary['p95_us']} us,"
              f" min {summary['min_us']} us per turn; whole run {summary['run_s']} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
