"""``python -m scoring converse``: the platform's turn loop (scoring.protocol.play) with a local process.

Real processes, real pipes; the verdicts are the compute worker's (it runs the same ``play`` over a
container's attached stdin/stdout).  Also: ``python -m scoring --help`` and a command whose packages
are missing, with a plain Python (no site-packages): one line naming the pip install, no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.dialogs import Dialog, Mode, Session, Turn
from scoring.protocol import converse_local

REPO = Path(__file__).resolve().parents[2]
PRACTICE = REPO / "deploy" / "images" / "baseline" / "practice"
BASELINE = REPO / "deploy" / "images" / "baseline" / "converse_baseline.py"


def sessions(mode: Mode = Mode.GOLD) -> list[Session]:
    turns = [Turn(f"q{n}", f"Question {n}?", [f"GOLD-{n}"], "x", "y") for n in (1, 2, 3)]
    return [Session(Dialog("d1", "A passage.", turns), mode)]


def system(code: str) -> list[str]:
    return [sys.executable, "-u", "-c", code]


ECHO = ("import json,sys\nfor line in sys.stdin:\n r=json.loads(line)\n"
        " print(json.dumps({'id': r['id'], 'answer': 'a' + str(r['turn'])}), flush=True)\n")


@pytest.mark.parametrize(("code", "verdict"), [
    (ECHO, "finished"),
    ("import time; time.sleep(5)", "turn_time_limit"),
    ("import sys; sys.stdin.readline(); print('not json', flush=True); sys.stdin.read()", "not_json"),
    ("import sys, json; sys.stdin.readline(); print(json.dumps({'id': 'other', 'answer': ''}), flush=True); sys.stdin.read()",
     "wrong_id"),
    ("import sys; sys.stdin.readline()", "closed"),
    (ECHO + "print('more', flush=True)\n", "output_after_end"),
])
def test_the_local_run_ends_in_the_platforms_verdicts(code: str, verdict: str) -> None:
    played = converse_local(system(code), sessions(), mode=Mode.GOLD, turn_limit_s=1.0, time_limit_s=30)
    assert played.verdict == verdict, played
    if verdict == "finished":
        assert played.turns_answered == 3 and len(played.latencies_s) == 3


def test_requests_are_numbered_from_one_and_reveal_gold_only_after_the_answer() -> None:
    log = ("import json,sys\nseen=[]\nfor line in sys.stdin:\n r=json.loads(line); seen.append(r)\n"
           " print(json.dumps({'id': r['id'], 'answer': json.dumps(r)}), flush=True)\n")
    [session] = sessions(Mode.GOLD)
    played = converse_local(system(log), [session], mode=Mode.GOLD, turn_limit_s=2, time_limit_s=30)
    assert played.verdict == "finished"
    requests = [json.loads(a["answer"]) for a in session.answers.values()]
    assert [r["turn"] for r in requests] == [1, 2, 3]
    assert requests[0]["history"] == [] and "passage" in requests[0]
    assert [h["answer"] for h in requests[2]["history"]] == ["GOLD-1", "GOLD-2"]
    assert "GOLD-3" not in json.dumps(requests)


@pytest.mark.parametrize("fmt", ["quac", "coqa"])
def test_the_cli_plays_the_practice_dialogs_with_the_kits_baseline(fmt: str) -> None:
    out = subprocess.run([sys.executable, "-m", "scoring", "converse", "--system", f"{sys.executable} {BASELINE}",
                          "--dialogs", str(PRACTICE / f"{fmt}-practice.json"), "--format", fmt,
                          "--mode", "gold", "--mode", "own", "--mode", "adversarial", "--mode", "single"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert {m: figures[m]["verdict"] for m in ("gold", "own", "adversarial", "single")} == dict.fromkeys(
        ("gold", "own", "adversarial", "single"), "finished")
    assert 0 < figures["gold"]["f1"] < 100 and figures["gold"]["turns_answered"] == 11
    assert "turn_1_f1" in figures["gold"] and "turn_6_f1" not in figures["own"]
    assert figures["gold_own_drop"] == pytest.approx(figures["gold"]["f1"] - figures["own"]["f1"])


def test_help_and_a_missing_package_need_no_traceback() -> None:
    # -S: no site-packages, as a plain python3 with nothing installed.
    helped = subprocess.run([sys.executable, "-S", "-m", "scoring", "--help"], cwd=REPO, capture_output=True,
                            text=True, timeout=60)
    assert helped.returncode == 0 and "converse" in helped.stdout and "mrc2018" in helped.stdout, helped.stderr
    missing = subprocess.run([sys.executable, "-S", "-m", "scoring", "mrc2018", "a.jsonl", "b.jsonl"], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == ("error: python -m scoring mrc2018 needs the rapidfuzz package: "
                                      "pip install -r requirements.txt")
