"""An interactive (converse) run through a real engine, as the compute worker runs it."""

from __future__ import annotations

from pathlib import Path

import docker

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE, Limits
from scoring.dialogs import Dialog, Mode, Session, Turn
from workers import runner
from workers.converse import Conversation, converse

LIMITS = Limits(cpus=1, memory_mb=256, pids=64, time_limit_s=60, log_bytes=64 * 1024)


def dialog() -> Dialog:
    turns = [Turn(f"q{n}", f"Question {n}?", [f"GOLD-{n}"], "x", "y") for n in (1, 2, 3)]
    return Dialog("d1", "A passage about nothing in particular.", turns)


def run(engine: docker.DockerClient, tmp_path: Path, script: str, mode: Mode = Mode.GOLD, *,
        turn_limit_s: float = 5, runtime: str | None = None) -> tuple[list[Session], Conversation]:
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "out").mkdir(exist_ok=True)
    spec = runner.RunSpec(image=DEFAULT_BASE_IMAGE, command=["python3", "-u", "-c", script],
                          input_dir=tmp_path / "in", output_dir=tmp_path / "out", limits=LIMITS, runtime=runtime,
                          labels={"readerboard.test": "converse"})
    sessions = [Session(dialog(), mode)]
    return sessions, converse(engine, spec, sessions, turn_limit_s=turn_limit_s)
