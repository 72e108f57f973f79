"""Calibrate the copy signal (scoring.copying) on real QA data: run by developers, not by the demo.

Four systems built apart answer the shared MRQA files: the demo's baseline (deploy/images/baseline:
IDF-weighted sentence overlap, then a short span), a sliding window of raw word overlap with the
nearest name or number, the last words of the sentence of most raw overlap, and the first words of
the context.  For every pair: accuracy (exact match), the share of identical answers among the
questions both got wrong, overall agreement against the expectation for independent systems.  Then
copies of the baseline with a share of answers replaced by another system's: the case to flag.

Usage: python deploy/demo/integrity_calibrate.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import random
import re
import sys
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository, for scoring (a developer's script)

from scoring.copying import pair_agreement  # noqa: E402
from scoring.text import normalize_answer  # noqa: E402

FILES = ["mrqa-squad-dev/SQuAD.jsonl.gz", "mrqa-mini/XQuAD-en.jsonl.gz", "mrqa-mini/AdversarialQA.jsonl.gz",
         "mrqa-mini/DuoRC.SelfRC.jsonl.gz", "mrqa-mini/DuoRC.ParaphraseRC.jsonl.gz", "mrqa-mini/HotpotQA.jsonl.gz"]
STOP = set("a an the of in on at to for from by with is are was were be what which who whom when where why how "
           "did do does and or that this it its as".split())
Word = re.compile(r"\w+")


def baseline_system() -> Callable[[str], dict[str, str]]:
    spec = importlib.util.spec_from_file_location("baseline", HERE.parent / "images" / "baseline" / "baseline.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda path: dict(module.run_dataset(path, "mrqa"))


def _contexts(path: str) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [obj for obj in map(json.loads, fh) if "header" not in obj]


def window(path: str) -> dict[str, str]:
    """The 12-word window with most question words; in it, the capitalised or numeric run nearest them."""
    out = {}
    for ctx in _contexts(path):
        toks = Word.findall(ctx["context"])
        low = [t.lower() for t in toks]
        for qa in ctx["qas"]:
            q = {w.lower() for w in Word.findall(qa["question"])} - STOP
            best = max(range(max(1, len(toks) - 11)), key=lambda i: sum(w in q for w in low[i:i + 12]))
            span = [i for i in range(best, min(best + 12, len(toks)))
                    if (toks[i][:1].isupper() or toks[i][:1].isdigit()) and low[i] not in q]
            if span:
                run = [span[0]]
                for i in span[1:]:
                    if i == run[-1] + 1 and len(run) < 3:
                        run.append(i)
                out[qa["qid"]] = " ".join(toks[i] for i in run)
            else:
                out[qa["qid"]] = " ".join(toks[best:best + 2])
    return out


def sentence_tail(path: str) -> dict[str, str]:
    """The sentence with most raw question-word overlap (latest on ties); its last two words."""
    out = {}
    for ctx in _contexts(path):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", ctx["context"]) if s.strip()] or [ctx["context"]]
        words = [Word.findall(s) for s in sentences]
        for qa in ctx["qas"]:
            q = {w.lower() for w in Word.findall(qa["question"])} - STOP
            best = max(range(len(words)), key=lambda i: (sum(w.lower() in q for w in words[i]), i))
            out[qa["qid"]] = " ".join(words[best][-2:])
    return out


def first_words(path: str) -> dict[str, str]:
    out = {}
    for ctx in _contexts(path):
        guess = " ".join(ctx["context"].split()[:3])
        for qa in ctx["qas"]:
            out[qa["qid"]] = guess
    return out


def gold(path: str) -> dict[str, set[str]]:
    return {qa["qid"]: {normalize_answer(a) for a in qa["answers"]} for ctx in _contexts(path) for qa in ctx["qas"]}


def right(answers: dict[str, str], golds: dict[str, set[str]]) -> dict[str, bool]:
    return {qid: normalize_answer(a) in golds[qid] for qid, a in answers.items() if qid in golds}


def copy_of(answers: dict[str, str], other: dict[str, str], share: float, seed: int = 7) -> dict[str, str]:
    """``answers`` with ``share`` of them replaced by ``other``'s (a team hiding a copy)."""
    rng = random.Random(seed)
    qids = sorted(answers)
    changed = set(rng.sample(qids, int(len(qids) * share)))
    return {qid: other[qid] if qid in changed else a for qid, a in answers.items()}


def report(name: str, a: dict[str, str], b: dict[str, str], golds: dict[str, set[str]]) -> float | None:
    p = pair_agreement(a, b, right(a, golds), right(b, golds))
    share, expected = p.wrong_share, p.expected_agreement
    print(f"  {name:34} acc {p.right_a / p.questions:5.1%} / {p.right_b / p.questions:5.1%}  "
          f"same wrong {p.same_wrong:5}/{p.both_wrong:<5} = {share or 0:5.1%}  "
          f"agree {p.agreement or 0:5.1%} (indep. ~{expected or 0:5.1%})  {'FLAG' if p.flagged else ''}")
    return share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=HERE.parents[2] / "shared")
    args = parser.parse_args()
    baseline = baseline_system()
    systems = {"baseline": baseline, "window": window, "sentence-tail": sentence_tail, "first-words": first_words}
    independent: list[float] = []
    copies: list[float] = []
    for name in FILES:
        path = str(args.shared / "data" / name)
        golds = gold(path)
        answers = {s: run(path) for s, run in systems.items()}
        print(f"{name} ({len(golds)} questions)")
        for x, y in combinations(systems, 2):
            share = report(f"{x} vs {y}", answers[x], answers[y], golds)
            if share is not None and len(golds) >= 100:
                independent.append(share)
        for share in (0.05, 0.1, 0.2):
            copied = copy_of(answers["baseline"], answers["window"], share)
            got = report(f"baseline vs its copy, {share:.0%} changed", answers["baseline"], copied, golds)
            if got is not None:
                copies.append(got)
    print(f"independent pairs (files of >= 100 questions): wrong-answer share from {min(independent):.1%} "
          f"to {max(independent):.1%}, mean {sum(independent) / len(independent):.1%}")
    print(f"copies: from {min(copies):.1%} to {max(copies):.1%}")


if __name__ == "__main__":
    main()
