"""Answers of real, independently built baselines for the integrity tests, and copies of them.

The systems are the calibration's (deploy/demo/integrity_calibrate.py): the demo's baseline
(deploy/images/baseline) and a sliding window of raw word overlap, built apart.
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from tests.builders.cast import DEMO_DATA, REPO, mrqa_gold

XQUAD_TEST = DEMO_DATA / "mrqa" / "XQuAD-en.test.jsonl.gz"


def _calibration() -> ModuleType:
    spec = importlib.util.spec_from_file_location("integrity_calibrate", REPO / "deploy" / "demo" / "integrity_calibrate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def system_answers(name: str, path: Path = XQUAD_TEST) -> dict[str, str]:
    """``baseline`` or ``window``'s answers to an MRQA file."""
    calibration = _calibration()
    run: Callable[[str], dict[str, str]] = (calibration.baseline_system() if name == "baseline"
                                            else calibration.window)
    return run(str(path))


def with_gold(answers: dict[str, str], share: float, *, seed: int, path: Path = XQUAD_TEST) -> dict[str, str]:
    """``answers`` with the gold answer on a random ``share`` of the questions: a stronger system of
    the same design, whose wrong answers stay its own."""
    gold = mrqa_gold(path)
    rng = random.Random(seed)
    chosen = set(rng.sample(sorted(answers), int(len(answers) * share)))
    return {qid: gold[qid][0] if qid in chosen else a for qid, a in answers.items()}


def changed(answers: dict[str, str], n: int) -> dict[str, str]:
    """A copy with ``n`` answers changed (to something of its own), as a team hides a copy."""
    out = dict(answers)
    for qid in sorted(out)[:n]:
        out[qid] = f"our own answer {qid}"
    return out
