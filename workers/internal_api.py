"""A compute worker's side of the platform's internal API (``/internal/v1/``): HTTP with its token.

Everything a compute worker learns of a run comes through here, and everything it reports goes
back the same way; it holds the API's address and its own token, nothing else of the platform's.
Files are streamed to disk and checked against the ticket's size and sha256 as they arrive.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import requests

from leaderboard.sandbox.contract import (
    InputsStreamError,
    RunNote,
    RunOutcome,
    RunTicket,
    TicketFile,
    inputs_tar_read,
    outcome_as_json,
)
from scoring.dialogs import Revealed
from workers import runner
from workers.run_system import RunFailure

logger = logging.getLogger(__name__)

CHUNK = 1024 * 1024
# (connect, read) seconds; a file download may take long, but never stall that long between bytes.
TIMEOUT = (10, 120)
# Reports (outcome, failure) are retried this many times over about a minute: the web app
# restarting during a deploy must not cost a finished run.
REPORT_TRIES = 6
# A turn of the interactive protocol: the system waits meanwhile, so fewer, shorter tries.
TURN_TRIES = 5


class HttpTransport:
    def __init__(self, api_url: str, token: str, *, queue: str, instance: str, hardware_class: str = "") -> None:
        self.base = api_url.rstrip("/") + "/internal/v1"
        self.queue = queue
        self.instance = instance
        self.hardware_class = hardware_class
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        # What the platform's last empty claim said to wait before asking again (None: it said nothing).
        self.retry_after: float | None = None

    def _url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}"

    def claim(self, hint: int | None = None) -> RunTicket | None:
        """The next run of the queue the platform hands this worker (its choice: ``hint`` is unused)."""
        response = self.session.post(self._url("runs/claim/"), json={"queue": self.queue, "instance": self.instance,
                                                                    "hardware_class": self.hardware_class},
                                     timeout=TIMEOUT)
        _raise_for(response, "claim")
        body: dict[str, Any] = response.json()
        retry_after = body.get("retry_after")
        self.retry_after = float(retry_after) if isinstance(retry_after, int | float) else None
        return RunTicket.from_json(body["ticket"]) if body.get("ticket") else None

    def fetch(self, ticket: RunTicket, item: TicketFile, target: Path) -> None:
        digest = hashlib.sha256()
        written = 0
        with self.session.get(self._url(item.url), stream=True, timeout=TIMEOUT) as response:
            _raise_for(response, f"download of {item.name}")
            with open(target, "wb") as fh:
                for chunk in response.iter_content(CHUNK):
                    written += len(chunk)
                    if written > item.size:
                        break
                    digest.update(chunk)
                    fh.write(chunk)
        if written != item.size or digest.hexdigest() != item.sha256:
            target.unlink(missing_ok=True)
            raise runner.PlatformError(f"the download of {item.name} did not match its size and sha256")

    def fetch_inputs(self, ticket: RunTicket, folder: Path) -> None:
        """All of the ticket's inputs in one request, each checked against its entry as it arrives."""
        url = self._url(f"runs/{ticket.submission_id}/{ticket.attempt}/inputs/")
        with self.session.get(url, stream=True, timeout=TIMEOUT) as response:
            _raise_for(response, "download of the inputs")
            response.raw.decode_content = True  # as iter_content would (a proxy may compress)
            try:
                inputs_tar_read(response.raw.read, ticket.inputs, folder, chunk=CHUNK)
            except InputsStreamError as exc:
                raise runner.PlatformError(f"the download of the inputs failed: {exc}") from None
            while response.raw.read(CHUNK):  # the end blocks: read, so the connection is used again
                pass

    def wait(self, queues: Sequence[str]) -> float:
        """Wait on the platform's side until a run of ``queues`` may be claimed (it holds the request
        up to ``worker_api.CLAIM_WAIT_S``); returns the seconds to wait before claiming (0: now)."""
        response = self.session.post(self._url("runs/wait/"), json={"queues": list(queues)}, timeout=TIMEOUT)
        _raise_for(response, "wait")
        retry_after = response.json().get("retry_after")
        return float(retry_after) if isinstance(retry_after, int | float) else 0.0

    def heartbeat(self, submission_id: int, attempt: int) -> bool:
        try:
            response = self.session.post(self._url(f"runs/{submission_id}/{attempt}/heartbeat/"), timeout=(5, 30))
        except requests.RequestException as exc:
            # The platform unreachable for a moment: keep running; the lease decides if it lasts.
            logger.warning("submission %s: heartbeat not delivered: %s", submission_id, exc)
            return True
        if response.status_code == 404:
            return False  # not this attempt's any more (cancelled, re-queued), or never ours
        if response.status_code >= 400:
            logger.warning("submission %s: heartbeat answered %s", submission_id, response.status_code)
            return True
        return bool(response.json().get("keep"))

    def live_log(self, ticket: RunTicket, log: str, notes: Sequence[RunNote]) -> None:
        url = self._url(f"runs/{ticket.submission_id}/{ticket.attempt}/log/")
        # UTF-8 as it is (no \u escapes): the body stays about the size of the capped log.
        body = json.dumps({"log": log, "notes": [n.as_json() for n in notes]}, ensure_ascii=False).encode()
        try:
            response = self.session.post(url, data=body, headers={"Content-Type": "application/json"},
                                         timeout=(5, 10))
        except requests.RequestException as exc:
            logger.info("submission %s: live log not delivered: %s", ticket.submission_id, exc)
            return
        if response.status_code >= 400 and response.status_code != 404:  # 404: the run ended meanwhile
            logger.warning("submission %s: live log answered %s", ticket.submission_id, response.status_code)

    def finish(self, ticket: RunTicket, outcome: RunOutcome) -> None:
        files = [(name, (name, data, "application/octet-stream")) for name, data in outcome.outputs.items()]
        data = {"outcome": json.dumps(outcome_as_json(outcome))}
        self._report(ticket, "outcome", lambda url: self.session.post(url, data=data, files=files, timeout=TIMEOUT))

    def fail(self, ticket: RunTicket, failure: RunFailure) -> None:
        body: dict[str, Any] = {"participant": failure.participant, "reason": failure.reason, "detail": failure.detail}
        self._report(ticket, "failure", lambda url: self.session.post(url, json=body, timeout=TIMEOUT))

    def dialog_turn(self, ticket: RunTicket, *, mode: str, dataset: int, dialog: int, turn: int | None,
                    answers: Sequence[Mapping[str, str]] = (), latencies_s: Sequence[float | None] = ()) -> Revealed:
        body: dict[str, Any] = {"mode": mode, "dataset": dataset, "dialog": dialog, "turn": turn,
                                "answers": [dict(a) for a in answers],
                                "latencies_ms": [None if s is None else s * 1000 for s in latencies_s]}
        url = self._url(f"runs/{ticket.submission_id}/{ticket.attempt}/dialogs/")
        for attempt in range(TURN_TRIES):
            try:
                response = self.session.post(url, json=body, timeout=(5, 30))
            except requests.RequestException as exc:
                # Safe to send again: the same answer to the same turn gets the same reply.
                logger.warning("submission %s: a turn not delivered (%s); trying again", ticket.submission_id, exc)
            else:
                if response.status_code < 500:
                    break
            time.sleep(min(8, 0.5 * 2**attempt))
        else:
            raise runner.PlatformError("the platform's internal API did not take a turn of the dialogs")
        if response.status_code == 409:
            # The platform refused a turn this worker built: a fault of the platform's, never the team's.
            raise runner.PlatformError(f"the platform refused a turn: {response.json().get('detail', '')}")
        _raise_for(response, "turn")
        reply: dict[str, Any] = response.json()
        return Revealed(reply.get("answered"), reply.get("upcoming"))

    def _report(self, ticket: RunTicket, what: str, send: Any) -> None:
        url = self._url(f"runs/{ticket.submission_id}/{ticket.attempt}/{what}/")
        for attempt in range(REPORT_TRIES):
            try:
                response = send(url)
            except requests.RequestException as exc:
                logger.warning("submission %s: %s not delivered (%s); trying again", ticket.submission_id, what, exc)
            else:
                if response.status_code == 404:
                    logger.info("submission %s: %s refused: the run is not this attempt's any more",
                                ticket.submission_id, what)
                    return
                if response.status_code < 500:
                    _raise_for(response, what)
                    return
                logger.warning("submission %s: %s answered %s; trying again", ticket.submission_id, what,
                               response.status_code)
            time.sleep(min(30, 2**attempt))
        # The lease expires and the reaper queues the run again: nothing is lost but time.
        logger.error("submission %s: %s could not be delivered; the run's lease will expire", ticket.submission_id,
                     what)


def _raise_for(response: requests.Response, what: str) -> None:
    if response.status_code >= 400:
        raise runner.PlatformError(f"the platform's internal API refused the {what} ({response.status_code})")
