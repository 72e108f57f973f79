"""The interactive protocol with real containers: one request at a time over stdin/stdout, sealed.

Each system below is a small Python script run on the base image, in the same cage as every run
(no network, read-only root, uid 10001, limits).  Those that log what they receive write it to
stderr, which is the run's log: the test reads the log to see what reached the system, and when.
"""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest

from scoring.dialogs import Mode
from tests.builders.converse import LIMITS, run

# Reads a request, logs it, answers it; at the end of stdin, exits.
HONEST = r"""
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    sys.stderr.write("GOT " + line)
    sys.stderr.flush()
    print(json.dumps({"id": request["id"], "answer": "answer to " + request["question"]}), flush=True)
"""

READ_AHEAD = r"""
import json, os, select, sys, time
fd = sys.stdin.fileno()
first = os.read(fd, 65536)
sys.stderr.write("FIRST %d lines\n" % first.count(b"\n"))
# Wait for the next question before answering this one.
ready, _, _ = select.select([fd], [], [], 3)
sys.stderr.write("READ-AHEAD: " + ("got more" if ready and os.read(fd, 65536) else "nothing") + "\n")
sys.stderr.flush()
request = json.loads(first.splitlines()[0])
print(json.dumps({"id": request["id"], "answer": "late"}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "answer": "x"}), flush=True)
"""

BAD = {
    "not_json": 'import sys\nsys.stdin.readline()\nprint("hello there", flush=True)\nsys.stdin.read()',
    "wrong_id": ('import json, sys\nsys.stdin.readline()\nprint(json.dumps({"id": "q-other", "answer": "a"}), '
                 'flush=True)\nsys.stdin.read()'),
    "wrong_shape": ('import json, sys\nr = json.loads(sys.stdin.readline())\n'
                    'print(json.dumps({"id": r["id"], "answer": 42}), flush=True)\nsys.stdin.read()'),
    "closed": ('import json, sys\nfor n, line in enumerate(sys.stdin):\n    r = json.loads(line)\n'
               '    print(json.dumps({"id": r["id"], "answer": "a"}), flush=True)\n    if n == 1:\n        sys.exit(0)'),
    "turn_time_limit": ('import json, sys, time\nfor n, line in enumerate(sys.stdin):\n    r = json.loads(line)\n'
                        '    if n == 1:\n        time.sleep(30)\n'
                        '    print(json.dumps({"id": r["id"], "answer": "a"}), flush=True)'),
    "output_after_end": ('import json, sys\nfor line in sys.stdin:\n    r = json.loads(line)\n'
                         '    print(json.dumps({"id": r["id"], "answer": "a"}), flush=True)\n'
                         'print(json.dumps({"id": "extra", "answer": "one more"}), flush=True)'),
    # Answers one turn, then takes more memory than the limit (256 MiB) and is killed for it.
    "memory_limit": ('import json, sys\nr = json.loads(sys.stdin.readline())\n'
                     'print(json.dumps({"id": r["id"], "answer": "a"}), flush=True)\nsys.stdin.readline()\n'
                     'hog = [bytearray(32 * 1024 * 1024) for _ in range(24)]\nsys.stdin.read()'),
}
ANSWERED_BEFORE = {"not_json": 0, "wrong_id": 0, "wrong_shape": 0, "closed": 2, "turn_time_limit": 1,
                   "output_after_end": 3, "memory_limit": 1}

FLOOD = r"""
import json, sys
sys.stderr.write("x" * (8 * 1024 * 1024))
sys.stderr.flush()
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "answer": "a"}), flush=True)
"""


def received(log: str) -> list[dict]:
    return [json.loads(line[4:]) for line in log.splitlines() if line.startswith("GOT ")]


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_an_honest_system_answers_turn_by_turn_and_sees_each_gold_answer_only_after_its_own(
    engine: docker.DockerClient, tmp_path: Path, runtime: str
) -> None:
    [session], result = run(engine, tmp_path, HONEST, runtime=runtime)
    assert result.verdict == "finished", (result.reason, result.log)
    assert [a["answer"] for a in session.answers.values()] == [f"answer to Question {n}?" for n in (1, 2, 3)]
    assert len(result.latencies_s) == 3 and result.exit_code == 0
    got = received(result.log)
    assert [r["id"] for r in got] == ["q1", "q2", "q3"]
    for k, request in enumerate(got, start=1):
        text = json.dumps(request)
        # Turn n's gold answer is in the requests after turn n was answered, never before.
        assert all((f"GOLD-{n}" in text) == (n < k) for n in (1, 2, 3)), text


def test_the_adversarial_mode_presents_the_current_gold_answer_in_the_history(
    engine: docker.DockerClient, tmp_path: Path
) -> None:
    _, result = run(engine, tmp_path, HONEST, Mode.ADVERSARIAL)
    assert result.verdict == "finished"
    for k, request in enumerate(received(result.log), start=1):
        assert request["history"][-1]["answer"] == f"GOLD-{k}"


def test_own_history_is_what_the_system_said(engine: docker.DockerClient, tmp_path: Path) -> None:
    _, result = run(engine, tmp_path, HONEST, Mode.OWN)
    last = received(result.log)[-1]
    assert [h["answer"] for h in last["history"]] == ["answer to Question 1?", "answer to Question 2?"]
    assert "GOLD" not in result.log


def test_a_system_cannot_read_ahead(engine: docker.DockerClient, tmp_path: Path) -> None:
    [session], result = run(engine, tmp_path, READ_AHEAD)
    assert "FIRST 1 lines" in result.log and "READ-AHEAD: nothing" in result.log
    assert result.verdict == "finished" and len(session.answers) == 3


@pytest.mark.parametrize("behaviour", sorted(BAD))
def test_each_bad_behaviour_gets_its_verdict_and_keeps_what_was_answered(
    engine: docker.DockerClient, tmp_path: Path, behaviour: str
) -> None:
    [session], result = run(engine, tmp_path, BAD[behaviour], turn_limit_s=3)
    assert result.verdict == behaviour, (result.reason, result.log)
    assert result.turns_answered == len(session.answers) == ANSWERED_BEFORE[behaviour]
    # The reason is the platform's words: nothing the system wrote, no question id.
    assert "hello" not in result.reason and "q-other" not in result.reason and "q2" not in result.reason
    assert result.reason


def test_a_stderr_flood_costs_the_system_its_log_not_the_platform_its_memory(
    engine: docker.DockerClient, tmp_path: Path
) -> None:
    [session], result = run(engine, tmp_path, FLOOD)
    assert result.verdict == "finished" and len(session.answers) == 3
    assert len(result.log) <= LIMITS.log_bytes + 1024
