"""The interactive protocol: a system answers one request at a time over its stdin and stdout.

One JSON line each way, through the container's attached stdin/stdout (no network needed, so it
works in the same cage and under gVisor).  The requests come from ``scoring.dialogs.Session``s, one
dialog after another; the next request is written only once the current one is answered, so a
system cannot read ahead, and a turn's gold answer (gold and adversarial modes) reaches it only in
requests after the one it answered.  Each mode runs in a container of its own: nothing a system
learned in a gold-history run can carry into its own-history run.

How a run ends, in a fixed vocabulary (``Conversation.verdict``): ``finished``; ``turn_time_limit``
(no answer within the time per turn); ``not_json``; ``answer_refused`` (an answer the platform cannot
take: ``answers_json.answer_refusal``); ``wrong_id`` / ``wrong_shape`` (a response that
is not an answer to the current request); ``closed`` (stdout closed, or the system exited, before
the last answer); ``output_after_end`` (it wrote more after the last answer); ``time_limit`` (the
run's own limit); ``memory_limit`` (killed for memory before its last answer); ``not_started`` (the
engine could not start it: its command is missing, say).  Whatever it answered before stays answered and is scored.  stderr is the run's
log, capped like any log: flooding it costs the system its log, never the platform its memory.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors

from leaderboard.sandbox.answers_json import answer_refusal
from scoring.dialogs import ProtocolError, Session
from scoring.protocol import EXIT_GRACE_S, MAX_LINE_BYTES, Played, play
from workers import runner

logger = logging.getLogger(__name__)


@dataclass
class Conversation(Played):
    """A whole interactive run: what the protocol's turn loop found (``Played``: verdict, reason,
    latencies, turns) and what the container left (time, log, exit status, memory)."""

    duration_s: float = 0.0
    log: str = ""
    exit_code: int | None = None
    peak_memory_bytes: int | None = None  # the cgroup's high-water mark, read before the container goes
    not_started: str = ""  # why the engine could not start the system (its fault), in the platform's words


class _Frames:
    """Docker's multiplexed attach stream (no TTY): 8-byte headers (stream, 0, 0, 0, size), then data."""

    def __init__(self, sock: socket.socket, log: runner.LogCapture) -> None:
        self.sock = sock
        self.log = log
        self.buffer = b""
        self.stdout = b""
        self.eof = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_line(self, deadline: float) -> bytes | None:
        """The next stdout line (without its newline), None at the deadline; b"" never: EOF sets ``eof``."""
        while b"\n" not in self.stdout:
            if self.eof:
                return None
            if len(self.stdout) > MAX_LINE_BYTES:
                raise ProtocolError("wrong_shape", f"a response line is longer than {MAX_LINE_BYTES} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                self.eof = True
                continue
            self.buffer += chunk
            self._split()
        line, _, self.stdout = self.stdout.partition(b"\n")
        return line

    def _split(self) -> None:
        while len(self.buffer) >= 8:
            stream, size = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + size:
                return
            data, self.buffer = self.buffer[8:8 + size], self.buffer[8 + size:]
            if stream == 1:
                self.stdout += data
            else:
                self.log.feed(data)

    def drain(self, seconds: float) -> bytes:
        """What stdout still brings within ``seconds`` (after the last answer)."""
        deadline = time.monotonic() + seconds
        while not self.eof and time.monotonic() < deadline:
            ready, _, _ = select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = self.sock.recv(65536)
            if not chunk:
                self.eof = True
                break
            self.buffer += chunk
            self._split()
        return self.stdout.strip()


def converse(client: docker.DockerClient, spec: runner.RunSpec, sessions: Sequence[Session], *,
             turn_limit_s: float, live_log: runner.LiveLogSend | None = None) -> Conversation:
    """Run ``spec``'s container and play ``sessions`` with it, turn by turn; the container is removed
    whatever happens.  The answers are in the sessions; the figures and the verdict in the result.
    ``live_log`` is given what the system printed to stderr so far while it plays (``runner.log_live``)."""
    result = Conversation()
    # Not detached, with stdin open: the SDK then asks for StdinOnce, so that the engine closes the
    # system's stdin when the platform closes its end (the system's cue that the dialogs are over).
    kwargs: dict[str, Any] = {**runner._create_kwargs(spec, client), "stdin_open": True, "tty": False, "detach": False}
    try:
        container = client.containers.create(**kwargs)
    except docker.errors.APIError as exc:
        raise runner.PlatformError(f"the engine refused to create the container: {exc.explanation or exc}") from None
    capture = runner.LogCapture(spec.limits.log_bytes)
    started = time.monotonic()
    try:
        attached = client.api.attach_socket(container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        sock: socket.socket = attached._sock
        try:
            container.start()
        except docker.errors.APIError as exc:
            if not exc.is_client_error():
                raise
            # As runner.run_container: a 400 is the image's fault (its command missing, say).
            result.verdict, result.not_started = "not_started", runner._start_refusal(str(exc.explanation or exc))
            result.reason = result.not_started
            return result
        frames = _Frames(sock, capture)
        run_deadline = started + spec.limits.time_limit_s
        # The turn loop itself is scoring.protocol's: the one a participant's local harness runs.
        with runner.log_live(capture, live_log, name=f"live-log-{spec.labels.get(runner.LABEL_SUBMISSION, '')}"):
            played = play(frames, sessions, turn_limit_s=turn_limit_s, run_deadline=run_deadline,
                          refusal=answer_refusal)
        result.verdict, result.reason = played.verdict, played.reason
        result.latencies_s, result.turns_answered = played.latencies_s, played.turns_answered
        # memory.peak is a high-water mark: read once, before the engine removes the cgroup.
        result.peak_memory_bytes = runner._read_peak(runner._peak_memory_file(container.id))
        if result.verdict == "finished":
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)  # stdin closed: the system's cue to exit
            if frames.drain(EXIT_GRACE_S):
                result.verdict, result.reason = "output_after_end", "it wrote to stdout after its last answer"
        with contextlib.suppress(docker.errors.APIError):
            container.kill()
        with contextlib.suppress(Exception):
            result.exit_code = int(container.wait(timeout=10).get("StatusCode", -1))
        if result.verdict == "closed":
            # Gone before its last answer: the kernel's OOM killer, if the engine says so.
            with contextlib.suppress(Exception):
                container.reload()
                if container.attrs["State"].get("OOMKilled"):
                    result.verdict = "memory_limit"
                    result.reason = (f"it ran out of memory (more than {spec.limits.memory_mb} MiB) after "
                                     f"{result.turns_answered} answers")
        frames.drain(0.5)  # what stderr still holds, for the log
        with contextlib.suppress(OSError):
            sock.close()
    except docker.errors.APIError as exc:
        raise runner.PlatformError(f"the engine failed during the run: {exc.explanation or exc}") from None
    finally:
        result.duration_s = time.monotonic() - started
        with contextlib.suppress(Exception):
            container.remove(force=True)
    result.log, _ = capture.result()
    return result
