"""The two conversational baselines in every mode, through the interactive protocol: a report.

``python -m tests.benchmarks.bench_conversational_baselines [--runtime runc] [--json OUT]``

Each baseline (deploy/images/baseline/converse_baseline.py: one that ignores the history, one that
filters out sentences overlapping earlier answers) plays the QuAC and CoQA excerpts of ../shared/data
in the gold-history (w/ TF), own-history (w/o TF) and adversarial (w/ Adv) modes, one container per
mode, and is scored with the official QuAC and CoQA metrics.  Also printed: the BEST analysis of the
QuAC excerpt.  The excerpts are small (QuAC: 5 dialogs, 41 questions; CoQA: 1 story, 12 questions), so
differences of a few points are noise; the baselines are not tuned on them.  Needs the engine and the
base image (deploy/setup.sh).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE, Limits
from scoring.coqa import evaluate_coqa
from scoring.dialogs import (
    Dialog,
    Mode,
    Session,
    best_reachable,
    coqa_predictions_of,
    coqa_protocol_dialogs,
    quac_predictions_of,
    quac_protocol_dialogs,
)
from scoring.quac import evaluate_quac
from workers import runner
from workers.converse import converse

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
BASELINE = REPO / "deploy" / "images" / "baseline" / "converse_baseline.py"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", default="runc")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    quac = json.loads((SHARED / "quac-excerpt" / "val_v0.2.json").read_text())
    coqa = json.loads((SHARED / "coqa-excerpt" / "coqa-dev-v1.0.json").read_text())
    # Each dataset's dialogs, and the F1 the sessions played on them reach.
    data: dict[str, tuple[list[Dialog], Callable[[Sequence[Session]], float]]] = {
        "QuAC": (quac_protocol_dialogs(quac),
                 lambda s: evaluate_quac(quac, quac_predictions_of(s)).metrics["f1"]),
        "CoQA": (coqa_protocol_dialogs(coqa),
                 lambda s: evaluate_coqa(coqa, coqa_predictions_of(s)).metrics["overall"]["f1"]),
    }
    client = runner.engine()
    script = BASELINE.read_text()
    report: dict[str, dict[str, dict[str, float]]] = {}
    for name, flags in (("no history", []), ("filter", ["--filter"])):
        for dataset, (dialogs, score) in data.items():
            for mode in (Mode.GOLD, Mode.OWN, Mode.ADVERSARIAL):
                sessions = [Session(d, mode) for d in dialogs]
                with tempfile.TemporaryDirectory() as folder:
                    (Path(folder) / "in").mkdir()
                    (Path(folder) / "out").mkdir()
                    spec = runner.RunSpec(image=DEFAULT_BASE_IMAGE, command=["python3", "-u", "-c", script, *flags],
                                          input_dir=Path(folder) / "in", output_dir=Path(folder) / "out",
                                          limits=Limits(time_limit_s=120), runtime=args.runtime,
                                          labels={"readerboard.benchmark": "conversational-baselines"})
                    outcome = converse(client, spec, sessions, turn_limit_s=10)
                if outcome.verdict != "finished":
                    print(f"{name} {dataset} {mode}: {outcome.verdict}: {outcome.reason}\n{outcome.log}", file=sys.stderr)
                    return 1
                report.setdefault(name, {}).setdefault(dataset, {})[mode.value] = round(float(score(sessions)), 1)
    best = best_reachable(quac)
    print(f"{'baseline':12s} {'data':5s} {'gold (w/ TF)':>13s} {'own (w/o TF)':>13s} {'adversarial':>12s}")
    for name, rows in report.items():
        for dataset, f1 in rows.items():
            print(f"{name:12s} {dataset:5s} {f1['gold']:13.1f} {f1['own']:13.1f} {f1['adversarial']:12.1f}")
    print(f"QuAC excerpt BEST {best['best_f1']:.1f}, BEST with post-filtering {best['best_filtered_f1']:.1f}")
    if args.json:
        args.json.write_text(json.dumps({"f1": report, "best": best}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
