"""Where a compute worker waits for nothing: its idle wait held by the platform and woken by a queued
run, all of a run's inputs in one checked stream, and the outcome handed back before the clean-up.

The internal API is called with Django's test client, as in test_compute_hosts.py; the broker is a
stand-in with Redis's publish/subscribe (the real one runs in bench_systems and bench_claim_latency).
"""

from __future__ import annotations

import hashlib
import io
import queue
import threading
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from leaderboard.core import run_wakeups
from leaderboard.sandbox.contract import InputsStreamError, TicketFile, inputs_tar_read, inputs_tar_stream
from leaderboard.submissions import worker_api
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.models import Submission
from leaderboard.submissions.worker_api import worker_token_create
from tests.builders.cast import Cast
from tests.builders.responses import streamed
from tests.builders.runs import bundle, outcome
from tests.builders.systems import system_phases
from workers import compute
from workers.run_system import _HandBack
from workers.runner import PlatformError


def api(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def queued_system(cast: Cast) -> Submission:
    return submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")


def claim(client: Client) -> Any:
    response = client.post("/internal/v1/runs/claim/", {"queue": "cpu", "instance": "host:1"},
                           content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["ticket"]


def wait(client: Client, queues: list[str]) -> Any:
    return client.post("/internal/v1/runs/wait/", {"queues": queues}, content_type="application/json")


class FakeBroker:
    """Redis's publish and subscribe, in-process: what ``run_wakeups`` uses of the broker."""

    def __init__(self) -> None:
        self.published: list[str] = []
        self.subscribers: list[FakePubSub] = []
        self.lock = threading.Lock()

    def publish(self, channel: str, _data: bytes) -> int:
        with self.lock:
            self.published.append(channel)
            listening = [s for s in self.subscribers if channel in s.channels]
        for subscriber in listening:
            subscriber.messages.put({"type": "message", "channel": channel})
        return len(listening)

    def pubsub(self, **_: Any) -> FakePubSub:
        return FakePubSub(self)


class FakePubSub:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker, self.channels = broker, set[str]()
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()

    def subscribe(self, *channels: str) -> None:
        with self.broker.lock:
            self.channels.update(channels)
            self.broker.subscribers.append(self)
        for channel in channels:
            self.messages.put({"type": "subscribe", "channel": channel})

    def get_message(self, ignore_subscribe_messages: bool = False, timeout: float = 0.0) -> dict[str, Any] | None:
        try:
            message = self.messages.get(timeout=timeout)
        except queue.Empty:
            return None
        if ignore_subscribe_messages and message["type"] == "subscribe":
            return None
        return message

    def close(self) -> None:
        with self.broker.lock:
            if self in self.broker.subscribers:
                self.broker.subscribers.remove(self)


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> FakeBroker:
    fake = FakeBroker()
    monkeypatch.setattr(run_wakeups, "wakeups_available", lambda: True)
    monkeypatch.setattr(run_wakeups, "_client", lambda _url: fake)
    return fake


# --------------------------------------------------------------------------- one stream of inputs


@pytest.mark.django_db
def test_a_runs_inputs_come_in_one_stream_that_matches_each_files_own_download(cast: Cast, tmp_path: Path) -> None:
    system_phases(cast)
    queued_system(cast)
    token = worker_token_create(name="host-a")
    ticket = claim(api(token))
    response = api(token).get(f"/internal/v1/runs/{ticket['submission_id']}/{ticket['attempt']}/inputs/")
    assert response.status_code == 200
    items = [TicketFile(**entry) for entry in ticket["inputs"]]
    inputs_tar_read(io.BytesIO(streamed(response)).read, items, tmp_path)
    for item in items:
        alone = streamed(api(token).get(f"/internal/v1/{item.url}"))
        # The sealed dataset's file is its re-keyed copy in both, never the stored one.
        assert (tmp_path / item.name).read_bytes() == alone
    # Another worker's token learns nothing of the run.
    other = api(worker_token_create(name="host-b"))
    assert other.get(f"/internal/v1/runs/{ticket['submission_id']}/{ticket['attempt']}/inputs/").status_code == 404


def _files(tmp_path: Path, sizes: list[int]) -> tuple[list[Path], list[TicketFile]]:
    paths, items = [], []
    for i, size in enumerate(sizes):
        path = tmp_path / f"src-{i}"
        path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        paths.append(path)
        items.append(TicketFile(name=f"in-{i}.jsonl.gz", url="", size=size,
                                sha256=hashlib.sha256(path.read_bytes()).hexdigest()))
    return paths, items


def test_an_inputs_stream_is_read_in_chunks_into_files_of_the_tickets_names(tmp_path: Path) -> None:
    paths, items = _files(tmp_path, [0, 1, 511, 512, 513, 70_000])
    stream = io.BytesIO(b"".join(inputs_tar_stream(paths, chunk=1000)))
    reads: list[int] = []

    def read(n: int) -> bytes:
        reads.append(n)
        return stream.read(n)

    target = tmp_path / "in"
    target.mkdir()
    inputs_tar_read(read, items, target, chunk=4096)
    assert [(target / item.name).read_bytes() for item in items] == [p.read_bytes() for p in paths]
    assert max(reads) <= 4096  # never a whole file at once


@pytest.mark.parametrize("wrong", ["sha256", "size", "order"])
def test_an_inputs_stream_that_is_not_the_tickets_is_refused_and_leaves_no_file(tmp_path: Path, wrong: str) -> None:
    paths, items = _files(tmp_path, [600, 900])
    if wrong == "sha256":
        items[1] = TicketFile(items[1].name, "", "0" * 64, items[1].size)
    elif wrong == "size":
        items[1] = TicketFile(items[1].name, "", items[1].sha256, items[1].size + 1)
    else:
        paths.reverse()
    target = tmp_path / "in"
    target.mkdir()
    with pytest.raises(InputsStreamError):
        inputs_tar_read(io.BytesIO(b"".join(inputs_tar_stream(paths))).read, items, target)
    assert not (target / items[1].name).exists()


def test_an_inputs_stream_cut_short_is_refused(tmp_path: Path) -> None:
    paths, items = _files(tmp_path, [5000])
    cut = b"".join(inputs_tar_stream(paths))[:3000]
    with pytest.raises(InputsStreamError, match="ended early"):
        inputs_tar_read(io.BytesIO(cut).read, items, tmp_path)
    assert not (tmp_path / items[0].name).exists()


# --------------------------------------------------------------------------- the idle wait


@pytest.mark.django_db
def test_without_a_broker_a_wait_answers_at_once_and_the_worker_polls_as_before(cast: Cast) -> None:
    system_phases(cast)
    token = worker_token_create(name="host-a", queues=["cpu"])
    assert wait(api(token), ["cpu"]).json() == {"retry_after": worker_api.CLAIM_RETRY_S}
    assert wait(api(token), ["gpu"]).status_code == 403
    assert wait(api(token), []).status_code == 400
    assert api("rbw_nope").post("/internal/v1/runs/wait/", {"queues": ["cpu"]},
                                content_type="application/json").status_code == 401


@pytest.mark.django_db
def test_a_queued_system_is_announced_on_its_run_queue_after_its_commit(
    cast: Cast, broker: FakeBroker, django_capture_on_commit_callbacks: Any
) -> None:
    system_phases(cast)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        queued_system(cast)
    assert broker.published == []  # not before the row is there for the claim
    for callback in callbacks:
        callback()
    assert broker.published == [f"{run_wakeups.CHANNEL_PREFIX}cpu"]


@pytest.mark.django_db
def test_a_wait_with_a_run_already_queued_says_claim_now(cast: Cast, broker: FakeBroker) -> None:
    system_phases(cast)
    queued_system(cast)
    assert wait(api(worker_token_create(name="host-a")), ["cpu"]).json() == {"retry_after": 0.0}


@pytest.mark.django_db
def test_a_waiting_worker_is_woken_by_the_announcement_of_a_run(cast: Cast, broker: FakeBroker) -> None:
    system_phases(cast)
    answers: list[float] = []
    waiting = threading.Thread(target=lambda: answers.append(
        worker_api.run_queues_wait(queues=["gpu", "cpu"], seconds=60)))
    waiting.start()
    while not broker.subscribers:  # subscribed: from here on an announcement reaches it
        threading.Event().wait(0.01)
    run_wakeups._publish("cpu")
    waiting.join(timeout=30)  # a liveness bound, far above the wait's own 60 s cap of nothing
    assert not waiting.is_alive() and answers == [0.0]
    assert broker.subscribers == []  # its subscription is gone with it


@pytest.mark.django_db
def test_an_empty_wait_runs_out_and_says_ask_again(cast: Cast, broker: FakeBroker) -> None:
    system_phases(cast)
    assert worker_api.run_queues_wait(queues=["cpu"], seconds=0.05) == 0.0


@pytest.mark.django_db
def test_waits_beyond_the_per_process_bound_are_answered_at_once(
    cast: Cast, broker: FakeBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_phases(cast)
    monkeypatch.setattr(worker_api, "_waiters", threading.BoundedSemaphore(1))
    assert worker_api._waiters.acquire(blocking=False)  # one wait holds the only slot
    try:
        assert worker_api.run_queues_wait(queues=["cpu"], seconds=60) == worker_api.CLAIM_RETRY_S
    finally:
        worker_api._waiters.release()
    assert broker.subscribers == []


class _HangingChannel:
    """A platform that holds the wait until told (a real one: up to ``CLAIM_WAIT_S``)."""

    queue = "cpu"

    def __init__(self) -> None:
        self.release = threading.Event()

    def wait(self, _queues: list[str]) -> float:
        self.release.wait(60)
        return 0.0


def test_a_signal_ends_a_workers_wait_at_once_and_nothing_was_claimed() -> None:
    channel, stop = _HangingChannel(), compute.Stop()
    answers: list[float] = []
    loop = threading.Thread(target=lambda: answers.append(compute.wait_for_run([channel], stop)))  # type: ignore[list-item]
    loop.start()
    while stop.interrupt is None:
        threading.Event().wait(0.01)
    stop.handle(15, None)
    loop.join(timeout=30)
    assert not loop.is_alive() and answers == [0.0] and stop.requested
    channel.release.set()


def test_a_wait_the_platform_does_not_offer_falls_back_to_polling() -> None:
    class Refusing:
        queue = "cpu"

        def wait(self, _queues: list[str]) -> float:
            raise PlatformError("the platform's internal API refused the wait (404)")

    assert compute.wait_for_run([Refusing()], compute.Stop(), poll_s=2.0) == 2.0  # type: ignore[list-item]


# --------------------------------------------------------------------------- the hand-back


class _Recording:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def heartbeat(self, submission_id: int, attempt: int) -> bool:
        self.calls.append("heartbeat")
        return True

    def finish(self, ticket: Any, outcome: Any) -> None:
        self.calls.append("finish")


def test_once_the_outcome_is_handed_back_no_heartbeat_renews_the_lease() -> None:
    transport = _Recording()
    ticket: Any = type("T", (), {"submission_id": 7, "attempt": 1})()
    back = _HandBack(transport, ticket, began=0.0)  # type: ignore[arg-type]
    assert back.heartbeat() is True and not back.done
    back(outcome())
    assert back.done and back.heartbeat() is False
    assert transport.calls == ["heartbeat", "finish"]
