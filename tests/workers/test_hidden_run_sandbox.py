"""Issue 22, section 2, without an engine: which sandbox a run on hidden data gets, the ticket's one
rule for "hidden", and a hidden run having the host to itself.  The page-cache channel itself, through
real containers, is in tests/sandbox/test_page_cache_channel.py."""

from __future__ import annotations

import ctypes
import dataclasses
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from leaderboard.sandbox.contract import HiddenRuns
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import system_run_plan
from leaderboard.submissions.worker_api import run_ticket_build
from tests.builders.cast import Cast
from workers import runner


def test_the_sandbox_of_a_run_follows_whether_it_is_on_hidden_data() -> None:
    policy = HiddenRuns()
    hidden = runner.sandbox_choose(hidden=True, challenge_runtime="", worker_runtime="", policy=policy)
    assert (hidden.runtime, hidden.private_image, hidden.exclusive) == ("runsc", True, True)
    # A run its team reads: gVisor too unless the worker names a runtime (else it reads the host's counters).
    dev = runner.sandbox_choose(hidden=False, challenge_runtime="", worker_runtime="", policy=policy)
    assert (dev.runtime, dev.private_image, dev.exclusive) == ("runsc", False, False)
    dev = runner.sandbox_choose(hidden=False, challenge_runtime="", worker_runtime="runc", policy=policy)
    assert dev.runtime == "runc"
    off = HiddenRuns(runtime="", isolate=False)
    unprotected = runner.sandbox_choose(hidden=True, challenge_runtime="", worker_runtime="", policy=off)
    assert (unprotected.runtime, unprotected.private_image, unprotected.exclusive) == (None, False, False)
    # A challenge that forces a runtime keeps it; the copy and the host to itself stay.
    forced = runner.sandbox_choose(hidden=True, challenge_runtime="runc", worker_runtime="", policy=policy)
    assert (forced.runtime, forced.private_image, forced.exclusive) == ("runc", True, True)


@pytest.mark.django_db
def test_the_ticket_says_a_run_is_on_hidden_data_by_the_platforms_one_rule(cast: Cast) -> None:
    for phase, hidden in ((cast.dev, False), (cast.test, True)):
        submission = Submission.objects.create(team=cast.alpha, phase=phase, kind="code_bundle", attempts=1)
        assert system_run_plan(submission=submission).hidden_data is hidden
    plan = system_run_plan(submission=submission)
    assert run_ticket_build(dataclasses.replace(plan, upload_path="")).hidden_data is True


def test_a_hidden_run_has_the_host_to_itself(tmp_path: Path) -> None:
    """While a hidden run holds the host, no other run starts on it, and one waiting does not
    let new runs in ahead of it."""
    lock = tmp_path / "host.lock"
    events: list[str] = []

    def shared(name: str) -> None:
        with runner.host_slot(lock, exclusive=False):
            events.append(name)

    with runner.host_slot(lock, exclusive=True):
        other = threading.Thread(target=shared, args=("dev",))
        other.start()
        time.sleep(0.3)
        assert events == []  # the dev run waits
    other.join(5)
    assert events == ["dev"]

    release = threading.Event()

    def exclusive() -> None:
        with runner.host_slot(lock, exclusive=True):
            events.append("hidden")
            release.wait(5)

    with runner.host_slot(lock, exclusive=False):  # a dev run holds the host
        hidden = threading.Thread(target=exclusive)
        hidden.start()
        time.sleep(0.2)
        late = threading.Thread(target=shared, args=("late dev",))
        late.start()
        time.sleep(0.2)
        assert events == ["dev"]  # neither the hidden run nor the dev run that came after it
    time.sleep(0.3)
    assert events == ["dev", "hidden"]  # the hidden run went first, and holds the host alone
    release.set()
    hidden.join(5)
    late.join(5)
    assert events == ["dev", "hidden", "late dev"]


def _resident_pages(path: Path) -> int:
    """How many of ``path``'s pages are in the page cache (mincore(2) on a mapping of it)."""
    size = path.stat().st_size
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
        try:
            vector = ctypes.create_string_buffer(pages)
            assert libc.mincore(ctypes.c_void_p(address), size, vector) == 0, ctypes.get_errno()
            return sum(byte & 1 for byte in vector.raw)
        finally:
            libc.munmap(ctypes.c_void_p(address), size)
    finally:
        os.close(fd)


class _Engine:
    """What the hidden sandbox asks of the engine about a copy: its id, where its own layer is on
    this host, and no leftover per-run copies."""

    def __init__(self, upper: Path) -> None:
        self.api = self.images = self
        self.upper = upper

    def inspect_image(self, image: str) -> dict[str, Any]:
        return {"Id": "sha256:" + "c0" * 32, "GraphDriver": {"Data": {"UpperDir": str(self.upper)}}}

    def list(self, **_filters: Any) -> list[Any]:
        return []


def _layer(tmp_path: Path) -> tuple[Path, list[Path]]:
    upper = tmp_path / "upper"
    (upper / "lib").mkdir(parents=True)
    files = [upper / "a.bin", upper / "lib" / "b.bin"]
    for path in files:
        path.write_bytes(os.urandom(128 * 1024))
    os.sync()  # written back: clean pages, which an eviction can drop
    return upper, files


def _read(files: list[Path]) -> None:
    for path in files:
        path.read_bytes()


def test_a_hidden_copys_layer_leaves_the_page_cache_file_by_file_links_not_followed(tmp_path: Path) -> None:
    """Whatever a hidden run read of its copy is out of the page cache after the eviction: every
    regular file, however deep; a link in the layer is not followed out of it."""
    upper, files = _layer(tmp_path)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(os.urandom(128 * 1024))
    os.sync()  # written back: clean pages, which the eviction can drop
    _read([*files, outside])
    (upper / "link").symlink_to(outside)
    os.mkfifo(upper / "fifo")  # not a regular file: never opened (opening one can block or wake a writer)
    assert all(_resident_pages(path) > 0 for path in [*files, outside])

    assert runner.image_pages_evict(_Engine(upper), "readerboard-hidden:x") == 2

    assert [_resident_pages(path) for path in files] == [0, 0]
    assert _resident_pages(outside) > 0


def test_every_hidden_run_on_a_kept_copy_starts_with_its_pages_evicted(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The eviction before a run on the base image's kept copy is skipped only when the last run's
    eviction after it finished: a worker that died mid-run (no eviction after) leaves the next run
    to evict first.  What each run finds is what a channel through the page cache would carry."""
    upper, files = _layer(tmp_path)
    engine = _Engine(upper)
    monkeypatch.setattr(runner, "hidden_copy", lambda client, image, **_: "readerboard-hidden:kept")
    policy = HiddenRuns(lock_path=tmp_path / "host.lock")
    sandbox = runner.sandbox_choose(hidden=True, challenge_runtime="", worker_runtime="", policy=policy)

    def hidden_run(*, dies: bool = False) -> list[int]:
        """A hidden run that reads every file of the copy: the pages resident as it starts."""
        with runner.sandboxed(engine, "readerboard/python", sandbox, policy, keep_copy=True,
                              instance="t") as copy:
            assert copy == "readerboard-hidden:kept"
            found = [_resident_pages(path) for path in files]
            _read(files)
            if dies:
                os._exit(0)  # the worker killed: nothing after the run happens
        return found

    _read(files)  # what came before (the copy being made): evicted before the first run
    assert hidden_run() == [0, 0]
    assert [_resident_pages(path) for path in files] == [0, 0]  # evicted after it
    assert hidden_run() == [0, 0]  # the mark said so: nothing to evict first
    child = os.fork()
    if child == 0:
        try:
            hidden_run(dies=True)
        finally:
            os._exit(1)  # never back into pytest in the child, whatever happened in its run
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # it died inside its run, as a killed worker does
    assert all(_resident_pages(path) > 0 for path in files)  # the dead run's reads are still there
    assert hidden_run() == [0, 0]  # no mark: the next run evicted them first
    assert hidden_run() == [0, 0]
