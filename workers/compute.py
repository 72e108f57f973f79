"""The compute worker: a loop that claims runs over the internal API, runs them, and holds nothing it could leak.

    python -m workers.compute

It needs three settings from its environment and no others: ``READERBOARD_API_URL`` (the web app,
whose ``/internal/v1/`` it talks to), ``READERBOARD_WORKER_TOKEN`` (made with ``manage.py
worker_token_create``) and ``READERBOARD_COMPUTE_QUEUES`` (the run queues it claims from, comma
separated; default ``cpu``).  Optional: ``READERBOARD_WORK_DIR`` (its run folders),
``READERBOARD_CONTAINER_RUNTIME`` (``runc`` or ``runsc``; empty: the hidden runtime for every run),
``READERBOARD_RUN_IMAGE_REPOSITORY`` (also its platform instance: ``workers.runner.LABEL_INSTANCE``),
and for runs on hidden data ``READERBOARD_HIDDEN_RUNTIME`` (default ``runsc``),
``READERBOARD_HIDDEN_ISOLATION`` (default on) and ``READERBOARD_HOST_LOCK`` (default
``/run/readerboard-compute.lock``, one file for all the host's compute workers: see
``workers.runner.sandbox_choose``).  No Django, no database URL, no private storage, no gold, and no
broker: it fetches the answer-free inputs and the system of each run it claims, and hands back
outputs, log and figures; scoring happens on the platform's side.

Why no broker: the claim is the platform's anyway (``worker_api.submission_run_claim_next``: fair
between teams, team limits, back-off, runs held for review; a token claims only its own queues), so a
message would only say "a run of this queue is due".  And a broker cannot be scoped per queue: a
Celery worker on Redis reads and writes kombu's shared ``unacked``, ``unacked_index`` and binding keys,
which hold every queue's messages in flight, so no Redis ACL lets a host take its own queue's work
without reading (and being able to take or publish) everyone's.  A host without a broker holds its API
token only, and the internal API is its only network peer.

One run at a time.  SIGTERM or SIGINT: the current run is finished and reported, then the worker
exits; a second signal exits at once (the run's container is removed on the way out, and its lease
lapses on the platform's side, which queues it again).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import FrameType

import requests

from leaderboard.sandbox.contract import HiddenRuns, RunTicket
from workers.internal_api import HttpTransport
from workers.run_system import (
    ComputeConfig,
    leftovers_remove,
    leftovers_sweeper_start,
    run_ticket,
    worker_name,
)
from workers.runner import PlatformError

logger = logging.getLogger("workers.compute")

# Seconds between claims when nothing is due and the platform says nothing (it answers ``retry_after``).
POLL_S = 2.0
# Each wait is this fraction longer or shorter at random, so that many workers do not ask in step.
JITTER = 0.25
# The platform unreachable (a deploy, a restart, a network fault): waits double from the poll up to this.
BACKOFF_MAX_S = 60.0


def _env(name: str, default: str | None = None) -> str:
    value = os.environ.get(f"READERBOARD_{name}", default)
    if value is None:
        raise SystemExit(f"the compute worker needs READERBOARD_{name} (docs/operators/compute-hosts.md)")
    return value


_HIDDEN_DEFAULTS = HiddenRuns()


@cache
def config() -> ComputeConfig:
    return ComputeConfig(
        work_dir=Path(_env("WORK_DIR", "/var/lib/readerboard-compute")),  # its run folders
        run_image_repository=_env("RUN_IMAGE_REPOSITORY", "readerboard-run"),  # where run images are loaded; also the platform instance its labels name
        runtime=_env("CONTAINER_RUNTIME", ""),  # runc or runsc; empty: the hidden runtime for every run
        # Each default is HiddenRuns' own (the run contract's, which the web app's settings read too).
        hidden=HiddenRuns(runtime=_env("HIDDEN_RUNTIME", _HIDDEN_DEFAULTS.runtime),
                          isolate=_env("HIDDEN_ISOLATION", "1" if _HIDDEN_DEFAULTS.isolate else "0").lower()
                          not in ("0", "false", "no", "off"),
                          lock_path=Path(_env("HOST_LOCK", str(_HIDDEN_DEFAULTS.lock_path)))),
    )


def queues() -> list[str]:
    names = [q.strip() for q in _env("COMPUTE_QUEUES", "cpu").split(",") if q.strip()]  # the run queues it claims from, comma separated
    if not names:
        raise SystemExit("READERBOARD_COMPUTE_QUEUES names no queue (a comma list, such as cpu or cpu,gpu)")
    return list(dict.fromkeys(names))


def transport(queue: str) -> HttpTransport:
    return HttpTransport(_env("API_URL"), _env("WORKER_TOKEN"), queue=queue, instance=worker_name(),  # the web app's internal API, and a token from manage.py worker_token_create
                         hardware_class=_env("HARDWARE_CLASS", "")[:60])  # this host's hardware in a few words (e.g. 8 vCPU 32 GiB, 1x A100 40 GB): budget boards show it beside each run's figures; empty: "not stated"


def jittered(seconds: float) -> float:
    return seconds * random.uniform(1 - JITTER, 1 + JITTER)


@dataclass
class Stop:
    """Set by the first SIGTERM/SIGINT: finish the run in hand, then stop; the second exits at once."""

    event: threading.Event = field(default_factory=threading.Event)
    # Set with ``event``: what the loop waits on while the platform holds its wait (``wait_for_run``).
    interrupt: threading.Event | None = None

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.event.is_set():
            logger.warning("second signal %s: stopping now", signum)
            raise SystemExit(128 + signum)
        logger.info("signal %s: finishing the current run, then stopping (again to stop now)", signum)
        self.event.set()
        if self.interrupt is not None:
            self.interrupt.set()

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def wait(self, seconds: float) -> None:
        self.event.wait(seconds)


def claim_next(channels: Sequence[HttpTransport]) -> tuple[HttpTransport, RunTicket | None]:
    """The first run due on any of the queues, in the order they are named; else (last asked, None)."""
    for channel in channels:
        ticket = channel.claim()
        if ticket is not None:
            return channel, ticket
    return channels[-1], None


def wait_for_run(channels: Sequence[HttpTransport], stop: Stop, *, poll_s: float = POLL_S) -> float:
    """Ask the platform to hold a wait until a run of any of the queues may be claimed; the seconds to
    wait before claiming (0: now; ``poll_s`` if the wait failed, as when the platform offers none).

    The request runs in a thread of its own, so that a signal ends the wait at once: a wait claims
    nothing on the platform's side, so abandoning it loses no run."""
    answer: list[float] = []
    done = threading.Event()

    def ask() -> None:
        try:
            answer.append(channels[0].wait([c.queue for c in channels]))
        except (requests.RequestException, PlatformError, ValueError) as exc:
            logger.info("no wait on the platform's side (%s); polling", exc)
        finally:
            done.set()

    stop.interrupt = done
    try:
        if stop.requested:
            return 0.0
        threading.Thread(target=ask, name="claim-wait", daemon=True).start()
        done.wait()
    finally:
        stop.interrupt = None
    if stop.requested:
        return 0.0
    return answer[0] if answer else poll_s


def serve(channels: Sequence[HttpTransport], cfg: ComputeConfig, stop: Stop, *, poll_s: float = POLL_S,
          backoff_max_s: float = BACKOFF_MAX_S, wait: bool = True) -> int:
    """Claim and run until ``stop``; returns how many runs it ran.  Never raises for the platform
    being down: it waits, longer each time up to ``backoff_max_s``, and asks again.

    With nothing to claim it asks the platform to hold a wait (``wait_for_run``) and claims again
    as soon as the platform says a run may be due; where the platform offers no wait (no broker,
    its waiters busy, an older platform) it waits the ``retry_after`` it is told, or ``poll_s``."""
    ran = 0
    backoff = poll_s
    while not stop.requested:
        try:
            channel, ticket = claim_next(channels)
        except (requests.RequestException, PlatformError, ValueError) as exc:
            # ValueError: a body that is not the API's JSON (a proxy's error page).
            logger.warning("claim failed (%s); asking again in about %.0f s", exc, backoff)
            stop.wait(jittered(backoff))
            backoff = min(backoff * 2, backoff_max_s)
            continue
        backoff = poll_s
        if ticket is None:
            delay = channel.retry_after if channel.retry_after is not None else poll_s
            if wait:
                delay = wait_for_run(channels, stop, poll_s=delay)
            if delay > 0:
                stop.wait(jittered(delay))
            continue
        logger.info("submission %s: attempt %s claimed from %s", ticket.submission_id, ticket.attempt, channel.queue)
        run_ticket(channel, ticket, cfg)
        ran += 1
        # Between runs rather than after the next claim: a claimed run waits for nothing that can be
        # done before it (the sweeper thread and the start-up sweep cover the idle time).
        leftovers_remove(cfg)
    return ran


def main() -> int:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    cfg = config()
    channels = [transport(queue) for queue in queues()]
    stop = Stop()
    stop.install()
    try:
        cfg.work_dir.mkdir(parents=True, exist_ok=True)
        leftovers_remove(cfg, starting=True)
        # And every minute while it lives: a dead sibling's leftovers (another pod's) go while this idles.
        leftovers_sweeper_start(cfg)
    except Exception:
        logger.exception("clean-up at start-up failed")
    logger.info("compute worker %s claiming from %s at %s: ready.", worker_name(), ", ".join(c.queue for c in channels),
                channels[0].base)
    serve(channels, cfg, stop)
    logger.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
