"""The interactive protocol's turn loop, shared by the platform's compute worker and a participant's machine.

``play`` sends each :class:`~scoring.dialogs.Session`'s requests over a :class:`Channel` (one JSON
line each way), waits for each answer within the time per turn, and ends in the fixed vocabulary of
verdicts (``workers.converse`` documents it).  On the platform the channel is a container's attached
stdin/stdout; here, :class:`ProcessChannel` is a local process's pipes, so that
``python -m scoring converse --system "python run.py" --dialogs dev.json --mode gold`` plays the dev
dialogs exactly as a run on the platform does and prints the board's figures for them.
No Django, standard library only (the scorers it calls may need ``requirements.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scoring.coqa import evaluate_coqa, load_coqa_gold
from scoring.dialogs import (
    DialogGold,
    Mode,
    ProtocolError,
    Session,
    coqa_predictions_of,
    dialogs_of_file,
    quac_predictions_of,
)
from scoring.errors import InputFormatError
from scoring.inputs import coqa_qid
from scoring.quac import evaluate_quac, load_quac_dataset
from scoring.result import EvalResult

# The longest response line taken (an answer is a short span; a megabyte is generous).
MAX_LINE_BYTES = 1024 * 1024
# As SystemSettings' defaults (leaderboard.sandbox.contract): a phase may set its own.
TURN_LIMIT_S = 10.0
TIME_LIMIT_S = 600.0
# After the last answer: how long stdin stays closed before the system must have exited.
EXIT_GRACE_S = 2.0
# Turn positions the board shows one by one; later turns share the last column ("turn_7plus_f1").
TURN_BUCKETS = 6


class Channel(Protocol):
    """Where requests go and answers come from: a system's stdin and stdout."""

    eof: bool

    def send(self, data: bytes) -> None:
        """Write ``data``; OSError once the system no longer reads."""

    def read_line(self, deadline: float) -> bytes | None:
        """The next stdout line (without its newline), None at the ``deadline`` (``time.monotonic``)
        or at EOF (which sets ``eof``); ProtocolError for a line longer than ``MAX_LINE_BYTES``."""


@dataclass
class Played:
    verdict: str = "finished"
    reason: str = ""  # in the platform's words; never quotes what the system wrote
    latencies_s: list[float] = field(default_factory=list)  # per answered request, send -> answer
    turns_answered: int = 0


def play(channel: Channel, sessions: Sequence[Session], *, turn_limit_s: float, run_deadline: float,
         refusal: Callable[[str], str | None] | None = None) -> Played:
    """Play ``sessions`` one after another over ``channel``; the answers land in the sessions.

    ``refusal`` is the platform's rule for an answer it can store (``answers_json.answer_refusal``):
    an answer it refuses ends the mode as the system's doing."""
    result = Played()
    for session in sessions:
        while (request := session.request()) is not None:
            sent = time.monotonic()
            try:
                channel.send(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            except OSError:
                result.verdict, result.reason = "closed", "it stopped reading its stdin before the last request"
                return result
            deadline = min(sent + turn_limit_s, run_deadline)
            try:
                line = channel.read_line(deadline)
            except ProtocolError as exc:
                result.verdict, result.reason = exc.verdict, exc.message
                return result
            if line is None:
                if channel.eof:
                    result.verdict = "closed"
                    result.reason = f"it closed its stdout (or exited) after {result.turns_answered} answers"
                elif deadline == run_deadline and time.monotonic() >= run_deadline:
                    result.verdict, result.reason = "time_limit", "the run's time limit passed"
                else:
                    result.verdict = "turn_time_limit"
                    result.reason = f"no answer to request {result.turns_answered + 1} within {turn_limit_s:g} s"
                return result
            try:
                response = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError):
                result.verdict = "not_json"
                result.reason = f"the response to request {result.turns_answered + 1} is not a JSON line"
                return result
            # The platform's rule for answers, before the answer is handed on: one it cannot store
            # ends the mode as the system's doing, in words that quote nothing of it.
            answer = response.get("answer") if isinstance(response, dict) else None
            problem = refusal(answer) if refusal is not None and isinstance(answer, str) else None
            if problem is not None:
                result.verdict, result.reason = "answer_refused", f"turn {session.position + 1}: {problem}"
                return result
            # Measured before the answer is handed on: on the platform, that is a call to the trusted
            # side (the gold to reveal), which is not the system's time.
            latency = time.monotonic() - sent
            try:
                session.respond(response, latency)
            except ProtocolError as exc:
                result.verdict, result.reason = exc.verdict, exc.message
                return result
            result.latencies_s.append(latency)
            result.turns_answered += 1
    return result


class ProcessChannel:
    """A local process's stdin and stdout (its stderr goes to this terminal, as the run's log)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdout = process.stdout
        self.buffer = b""
        self.eof = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def _fill(self, deadline: float) -> bool:
        left = deadline - time.monotonic()
        if left <= 0 or not self.selector.select(left):
            return False
        chunk = os.read(self.stdout.fileno(), 65536)
        if not chunk:
            self.eof = True
        self.buffer += chunk
        return True

    def read_line(self, deadline: float) -> bytes | None:
        while b"\n" not in self.buffer:
            if self.eof:
                return None
            if len(self.buffer) > MAX_LINE_BYTES:
                raise ProtocolError("wrong_shape", f"a response line is longer than {MAX_LINE_BYTES} bytes")
            if not self._fill(deadline):
                return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def drain(self, seconds: float) -> bytes:
        """What stdout still brings within ``seconds`` (after the last answer)."""
        deadline = time.monotonic() + seconds
        while not self.eof and self._fill(deadline):
            pass
        return self.buffer.strip()


def f1_by_turn(fmt: str, per_example: Sequence[Mapping[str, Any]], positions: Mapping[str, int]) -> dict[str, float]:
    """F1 (0-100) of the questions at each turn position, as the suite's scorer counted each one
    (QuAC leaves out questions its human-agreement filter drops, as its F1 does)."""
    buckets: dict[int, list[float]] = {}
    for record in per_example:
        if fmt == "quac":
            if record.get("filtered"):
                continue
            qid, f1 = record["id"], 100.0 * float(record["model_f1"])
        else:
            qid, f1 = record["qid"], 100.0 * float(record["f1"])
        buckets.setdefault(min(positions[qid], TURN_BUCKETS + 1), []).append(f1)
    return {turn_metric(k): sum(v) / len(v) for k, v in sorted(buckets.items())}


def turn_metric(position: int) -> str:
    """The metric of F1 at a turn position (1 for a dialog's first turn; the last bucket holds every later one)."""
    return f"turn_{TURN_BUCKETS + 1}plus_f1" if position > TURN_BUCKETS else f"turn_{position}_f1"


def speed(latencies_ms: Sequence[float]) -> dict[str, float | None]:
    """The board's speed figures from the latencies measured per request."""
    latencies = sorted(latencies_ms)
    if not latencies:
        return {}

    def at(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    # Whole numbers: they are published, and on hidden data a timing is a channel a system could
    # modulate; rounded, each carries at most about 14 bits (docs/explanation/threat-model.md).
    total_s = sum(latencies) / 1000
    return {"latency_p50_ms": float(round(at(0.5))), "latency_p95_ms": float(round(at(0.95))),
            "questions_per_s": float(round(len(latencies) / total_s)) if total_s > 0 else None}


def _local_refusal() -> Callable[[str], str | None] | None:
    # The platform's rule for answers lives in leaderboard.sandbox (which scoring never imports); a
    # starting kit carries that very file next to scoring/ as answers_json.py.
    try:
        from answers_json import answer_refusal  # type: ignore[import-not-found]  # noqa: PLC0415 - only in a kit
    except ImportError:
        return None
    rule: Callable[[str], str | None] = answer_refusal
    return rule


def converse_local(command: Sequence[str], sessions: Sequence[Session], *, mode: Mode, turn_limit_s: float,
                   time_limit_s: float) -> Played:
    """One mode's run of a local process, as the platform runs a container: a fresh process per mode,
    its stdin closed after the last answer (its cue to exit), anything more on stdout a verdict."""
    started = time.monotonic()
    try:
        # The environment the platform gives each mode's container.
        env = {**os.environ, "READERBOARD_PROTOCOL": "interactive", "READERBOARD_MODE": mode.value}
        process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    except OSError as exc:
        return Played(verdict="not_started", reason=f"the system could not be started: {exc.strerror or exc}")
    channel = ProcessChannel(process)
    try:
        result = play(channel, sessions, turn_limit_s=turn_limit_s, run_deadline=started + time_limit_s,
                      refusal=_local_refusal())
        if result.verdict == "finished":
            try:
                assert process.stdin is not None
                process.stdin.close()
            except OSError:
                pass
            if channel.drain(EXIT_GRACE_S):
                result.verdict, result.reason = "output_after_end", "it wrote to stdout after its last answer"
    finally:
        process.kill()
        process.wait()
    return result


def _score(fmt: str, gold_path: str, sessions: Sequence[Session], min_f1: float) -> EvalResult:
    if fmt == "quac":
        # As the platform's QuAC suite scores a run (strict gold, every metric defined or None).
        return evaluate_quac(load_quac_dataset(gold_path, strict=True), quac_predictions_of(sessions),
                             min_f1=min_f1, allow_undefined=True, dataset_path=gold_path)
    result = evaluate_coqa(load_coqa_gold(gold_path).gold, coqa_predictions_of(sessions))
    # Keyed as the platform's CoQA suite keys a turn (by the request's id), for F1 by turn.
    per_example = [{**r, "qid": coqa_qid(r["id"], r["turn_id"])} for r in result.per_example]
    return EvalResult(metrics=result.metrics, per_example=per_example, warnings=result.warnings)


def run(args: argparse.Namespace) -> EvalResult:
    # Variables expanded as a shell would ($PWD in a docker run line), then no shell: the command as given.
    command = [os.path.expandvars(part) for part in shlex.split(args.system)]
    if not command:
        raise InputFormatError("--system needs a command, e.g. --system \"python run.py\"")
    dialogs = dialogs_of_file(args.format, args.dialogs, gold=True)
    positions = {turn.qid: k + 1 for dialog in dialogs for k, turn in enumerate(dialog.turns)}
    metrics: dict[str, Any] = {}
    warnings: list[str] = []
    per_example: Any = None
    f1: dict[str, float] = {}
    for n, mode in enumerate(Mode(m) for m in args.mode):
        source = DialogGold(dialogs, mode)
        sessions = [Session(d, mode, source, i) for i, d in enumerate(dialogs)]
        played = converse_local(command, sessions, mode=mode, turn_limit_s=args.turn_limit, time_limit_s=args.time_limit)
        scored = _score(args.format, args.dialogs, sessions, args.min_f1)
        # CoQA's scorer reports by bucket; the board's F1 is its "overall" one.
        f1[mode.value] = float((scored.metrics["overall"] if args.format == "coqa" else scored.metrics)["f1"])
        figures: dict[str, Any] = {"verdict": played.verdict, "reason": played.reason,
                                   "turns_answered": played.turns_answered, "f1": f1[mode.value]}
        if n == 0:
            # As the board: the first mode's F1 by turn and speed; the others' F1 beside it.
            per_example = scored.per_example
            if args.format in ("quac", "coqa"):
                figures.update(f1_by_turn(args.format, scored.per_example, positions))
            figures.update(speed([s * 1000 for s in played.latencies_s]))
        metrics[mode.value] = figures
        if played.verdict != "finished":
            warnings.append(f"{mode.value}: {played.verdict}: {played.reason}")
    if "gold" in f1 and "own" in f1:
        metrics["gold_own_drop"] = f1["gold"] - f1["own"]
    if _local_refusal() is None:
        warnings.append("note: answers_json.py (the platform's rule for answers) not found: answers not checked")
    return EvalResult(metrics=metrics, per_example=per_example or [], warnings=warnings)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "converse",
        help="play dev dialogs with a local interactive system, turn by turn, as the platform does",
        description="Runs SYSTEM once per mode (a fresh process each), sends it the requests the "
                    "platform sends (one JSON line each way, turns numbered from 1), with the same "
                    "time per turn and verdicts, and prints the board's figures: F1 per mode, the "
                    "gold-to-own drop, F1 by turn and latency.",
    )
    parser.add_argument("--system", required=True, metavar="COMMAND", help='how to start the system: "python run.py"')
    parser.add_argument("--dialogs", required=True, metavar="GOLD.json", help="a dev gold file (QuAC or CoQA JSON)")
    parser.add_argument("--format", choices=("quac", "coqa"), required=True)
    parser.add_argument("--mode", action="append", choices=[m.value for m in Mode],
                        help="a mode to play (repeatable, in the phase's order; default: gold then own)")
    parser.add_argument("--turn-limit", type=float, default=TURN_LIMIT_S, metavar="S",
                        help=f"seconds per answer (the platform's default: {TURN_LIMIT_S:g})")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, metavar="S",
                        help=f"seconds per mode (the platform's default: {TIME_LIMIT_S:g})")
    parser.add_argument("--min_f1", type=float, default=0.4, help="QuAC's human-agreement filter (the phase's)")
    parser.set_defaults(run=_run_with_default_modes)


def _run_with_default_modes(args: argparse.Namespace) -> EvalResult:
    args.mode = args.mode or ["gold", "own"]
    return run(args)

