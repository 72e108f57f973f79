"""Whose fault a failed run is, without an engine: the team's fail at once and count, the platform's
are retried after a back-off and, after the last try, fail without counting and alert the organizers.

``system_evaluate`` is called for real (claim, classification, services, dispatch) with the part that
needs an engine replaced by one that raises what the engine or the host would.  The same failures
through the real engine are in test_hostile_archives.py.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import requests.exceptions
from django.core import mail
from django.utils import timezone

from leaderboard.sandbox import archives
from leaderboard.sandbox.archives import ArchiveError, bundle_extract
from leaderboard.sandbox.contract import Limits, RunTicket, TicketFile
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import (
    run_retry_delay_s,
    submission_run_claim,
    submissions_lost_in_queue,
    submissions_reap,
)
from leaderboard.submissions.models import FailureCause, Status, Submission, Verdict
from leaderboard.submissions.selectors import quota_usage
from leaderboard.submissions.worker_api import submission_run_claim_next
from tests.builders.cast import Cast
from tests.builders.runs import bundle
from tests.builders.systems import system_phases
from workers import control_runs, dispatch, run_system, runner

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(cast: Cast) -> Submission:
    system_phases(cast)
    cast.oscar.email = "oscar@example.org"
    cast.oscar.save()
    return submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                    kind="code_bundle")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, float]]:
    """Messages the worker sends to the broker: (task, submission, countdown)."""
    messages: list[tuple[str, int, float]] = []

    def send_task(task: str, pk: int, *, countdown: float = 0, queue: str | None = None) -> None:
        messages.append((task, pk, countdown))

    monkeypatch.setattr(dispatch, "send_task", send_task)
    return messages


def run_raising(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    """Every attempt stops with ``exc`` where the engine would be used."""

    def failing_run(*_: Any) -> None:
        raise exc

    @contextlib.contextmanager
    def no_area(*_: Any) -> Iterator[None]:
        yield

    monkeypatch.setattr(runner, "engine", lambda: object())
    monkeypatch.setattr(runner, "run_area", no_area)
    monkeypatch.setattr(run_system, "_run", failing_run)


PARTICIPANT_FAULTS = {
    "more layers than the engine takes": runner.load_failure(docker.errors.ImageLoadError("max depth exceeded")),
    "a hard link out of its layer": runner.load_failure(docker.errors.ImageLoadError(
        "Error processing tar file(exit status 1): link /etc/shadow /etc/x: no such file or directory")),
    "an image without a command (uploaded before the check)": runner.ImageError(
        "the image has no ENTRYPOINT or CMD, so there is nothing to run"),
    "a file and a folder of one name": ArchiveError("'lib' is both a file and a folder in the bundle"),
}

PLATFORM_FAULTS = {
    "engine down": runner.PlatformError("the container engine is not reachable: connection refused"),
    "disk full": OSError(errno.ENOSPC, "No space left on device"),
    "disk full while loading": runner.load_failure(docker.errors.ImageLoadError(
        "write /var/lib/docker/tmp/x: no space left on device")),
    "engine API error": docker.errors.APIError("500 Server Error: Internal Server Error"),
    "engine connection dropped": requests.exceptions.ConnectionError("Connection aborted"),
    "a bug": KeyError("datasets"),
}


@pytest.mark.parametrize("case", sorted(PARTICIPANT_FAULTS))
def test_the_teams_fault_fails_at_once_counts_and_is_not_retried(
    queued: Submission, cast: Cast, monkeypatch: pytest.MonkeyPatch, sent: list, case: str
) -> None:
    exc = PARTICIPANT_FAULTS[case]
    assert isinstance(exc, (runner.ImageError, ArchiveError))
    run_raising(monkeypatch, exc)
    control_runs.system_evaluate(queued.pk)
    queued.refresh_from_db()
    assert (queued.status, queued.failure_cause, queued.verdict) == (Status.FAILED, FailureCause.PARTICIPANT,
                                                                     Verdict.NOT_STARTED)
    assert queued.attempts == 1 and sent == []
    assert queued.failure_reason.startswith("the system could not be started: ")
    assert str(exc) in queued.failure_reason
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 1
    assert mail.outbox == []


@pytest.mark.parametrize("case", sorted(PLATFORM_FAULTS))
def test_the_platforms_fault_is_retried_with_back_off_then_alerts_the_organizers_and_does_not_count(
    queued: Submission, cast: Cast, monkeypatch: pytest.MonkeyPatch, sent: list, settings: Any, case: str
) -> None:
    settings.RUN_RETRY_BACKOFF_S = 10
    settings.MAX_RUN_ATTEMPTS = 3  # two retries, to see the back-off grow (the default retries once)
    run_raising(monkeypatch, PLATFORM_FAULTS[case])
    for attempt in (1, 2):
        before = timezone.now()
        control_runs.system_evaluate(queued.pk)
        queued.refresh_from_db()
        assert queued.status == Status.QUEUED and queued.attempts == attempt
        # Due again after 10 s x the attempts so far, with no message (the row is the queue): a
        # claim before then passes it by.
        assert sent == []
        assert queued.dispatched_at is not None
        assert queued.dispatched_at >= before + dt.timedelta(seconds=10 * attempt)
        early = queued.dispatched_at - dt.timedelta(seconds=1)
        assert submission_run_claim_next(queue="cpu", worker="w/early", now=early).plan is None
        assert mail.outbox == []
    control_runs.system_evaluate(queued.pk)
    queued.refresh_from_db()
    assert (queued.status, queued.failure_cause, queued.verdict) == (Status.FAILED, FailureCause.PLATFORM,
                                                                     Verdict.PLATFORM)
    assert sent == [] and queued.attempts == 3
    assert "does not count against your quota" in queued.failure_reason
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 0
    # The organizers are told once, with the submission's id and the full reason.
    [alert] = mail.outbox
    assert alert.to == ["oscar@example.org"]
    assert f"submission {queued.pk}" in alert.subject
    assert queued.failure_reason in alert.body
    if case == "a bug":
        assert "Traceback" in alert.body and "KeyError: 'datasets'" in alert.body
        assert "Traceback" not in queued.failure_reason  # the team reads the reason on public data


def test_a_lost_worker_is_retried_with_back_off_then_alerts_the_organizers(
    queued: Submission, sent: list, settings: Any
) -> None:
    settings.RUN_RETRY_BACKOFF_S = 10
    due = []
    for attempt in (1, 2):  # the default: retried once
        before = timezone.now()
        submission_run_claim(queued.pk, worker=f"host:{attempt}")
        reaped = submissions_reap(dead_workers=[f"host:{attempt}"])
        dispatch.dispatch_again(*reaped.requeued)
        queued.refresh_from_db()
        if queued.dispatched_at is not None and queued.status == Status.QUEUED:
            due.append((queued.dispatched_at - before).total_seconds())
    assert sent == []  # a re-queued run is a state change only
    assert due == pytest.approx([10], abs=2)
    assert queued.status == Status.FAILED and queued.failure_cause == FailureCause.PLATFORM
    [alert] = mail.outbox
    assert f"submission {queued.pk}" in alert.subject and "stopped 2 times" in alert.body


def test_a_retry_is_claimed_only_once_due_and_never_sent_again_as_lost(queued: Submission, settings: Any) -> None:
    settings.REDISPATCH_AFTER_S = 4
    settings.RUN_RETRY_BACKOFF_S = 10
    submission_run_claim(queued.pk, worker="host:1")
    submissions_reap(dead_workers=["host:1"])
    soon = timezone.now() + dt.timedelta(seconds=8)
    assert submissions_lost_in_queue(queues={"cpu"}, now=soon) == []
    assert submission_run_claim_next(queue="cpu", worker="w/soon", now=soon).plan is None  # not due yet
    later = timezone.now() + dt.timedelta(seconds=15)
    assert submissions_lost_in_queue(queues={"cpu"}, now=later) == []  # a system has no message to lose
    plan = submission_run_claim_next(queue="cpu", worker="w/later", now=later).plan
    assert plan is not None and plan.submission_id == queued.pk


def test_the_back_off_grows_with_the_attempts(settings: Any) -> None:
    settings.RUN_RETRY_BACKOFF_S = 10
    assert [run_retry_delay_s(n) for n in (1, 2, 3)] == [10, 20, 30]


def test_without_organizers_addresses_the_alert_goes_to_the_operators(
    queued: Submission, cast: Cast, monkeypatch: pytest.MonkeyPatch, sent: list, settings: Any
) -> None:
    settings.ADMINS = [("Ops", "ops@example.org")]
    settings.MAX_RUN_ATTEMPTS = 1
    cast.oscar.email = ""
    cast.oscar.save()
    run_raising(monkeypatch, runner.PlatformError("the container engine is not reachable"))
    control_runs.system_evaluate(queued.pk)
    [alert] = mail.outbox
    assert alert.to == ["ops@example.org"] and f"submission {queued.pk}" in alert.subject


# --------------------------------------------------------------------------- the classification itself


@pytest.mark.parametrize(("exc", "participant"), [
    *[(exc, True) for exc in PARTICIPANT_FAULTS.values()],
    *[(exc, False) for exc in PLATFORM_FAULTS.values()],
    # An OSError that reaches the worker is the host's: the bundle's own are ArchiveErrors by then.
    (OSError(errno.ENAMETOOLONG, "File name too long"), False),
], ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value))
def test_every_failure_has_one_owner(exc: Exception, participant: bool) -> None:
    assert run_system.run_failure_classify(exc).participant is participant


@pytest.mark.parametrize(("message", "fault"), [
    ("max depth exceeded", runner.ImageError),
    ("Error processing tar file(exit status 1): link /etc/shadow /etc/x: no such file or directory",
     runner.ImageError),
    ("open /var/lib/docker/tmp/docker-import-1/repositories: no such file or directory", runner.ImageError),
    ("write /var/lib/docker/overlay2/x/diff/a: no space left on device", runner.PlatformError),
    ("mkdir /var/lib/docker/tmp: read-only file system", runner.PlatformError),
])
def test_a_docker_load_error_is_the_archives_unless_the_host_is_out_of_room(message: str, fault: type) -> None:
    assert isinstance(runner.load_failure(docker.errors.ImageLoadError(message)), fault)
    response = type("Response", (), {"status_code": 500, "reason": "Server Error", "url": "/images/load"})()
    assert isinstance(runner.load_failure(docker.errors.APIError("500", response, explanation=message)), fault)


@pytest.mark.parametrize(("explanation", "words"), [
    ('OCI runtime create failed: ... exec: "/nope": stat /nope: no such file or directory: unknown',
     "was not found in the image"),
    ('OCI runtime create failed: ... exec: "/etc": permission denied: unknown', "cannot be executed"),
    ("starting sandbox: creating process: failed to load /nope: no such file or directory: unknown",
     "was not found in the image"),
    ("error mounting \"/runs/1-1/input\" to rootfs at \"/input\": not a directory", "is a file in the image"),
])
def test_a_container_that_cannot_start_is_described_without_quoting_its_image(explanation: str, words: str) -> None:
    refusal = runner._start_refusal(explanation)
    assert refusal.startswith("the container could not start: ") and words in refusal
    assert "/nope" not in refusal and "/etc" not in refusal


# --------------------------------------------------------------------------- bundles that cannot be unpacked


def zip_of(*names: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(zipfile.ZipInfo(name), b"" if name.endswith("/") else b"x")
    return buffer.getvalue()


def test_an_os_error_unpacking_a_bundle_is_the_teams_and_says_which_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the upload check would refuse, unpacked anyway (a bundle accepted before the check)."""
    path = tmp_path / "b.zip"
    path.write_bytes(zip_of("run.py", "lib", "lib/x.py"))
    monkeypatch.setattr(archives, "bundle_inspect", lambda *_, **__: None)
    with pytest.raises(ArchiveError, match=r"'lib/x.py' cannot be unpacked: (File exists|Not a directory)"):
        bundle_extract(path, tmp_path / "system", max_uncompressed=10**6)
    path.write_bytes(zip_of("run.py", "n" * 300))
    with pytest.raises(ArchiveError, match=r"cannot be unpacked: File name too long"):
        bundle_extract(path, tmp_path / "system2", max_uncompressed=10**6)


def test_a_full_disk_while_unpacking_stays_the_platforms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "b.zip"
    path.write_bytes(zip_of("run.py"))

    def no_room(*_: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(archives, "_bundle_member_unpack", no_room)
    with pytest.raises(OSError) as raised:
        bundle_extract(path, tmp_path / "system", max_uncompressed=10**6)
    assert not isinstance(raised.value, ArchiveError)
    assert run_system.run_failure_classify(raised.value).participant is False


# --------------------------------------------------------------------------- the log as captured


def test_a_log_capture_keeps_the_first_and_last_halves_and_counts_the_cut() -> None:
    capture = runner.LogCapture(limit=20)
    for chunk in (b"START-----", b"xxxxx", b"y" * 100, b"-------END"):
        capture.feed(chunk)
    text, notes = capture.result()
    assert text == "START-----" + "-------END"
    [note] = notes
    assert note.at == 10 and note.text.startswith(f"{10 + 5 + 100 + 10 - 20} bytes of log cut between the head")


def test_a_short_log_is_kept_whole_with_no_note_and_no_control_characters() -> None:
    capture = runner.LogCapture(limit=1000)
    capture.feed("héllo \x1b[1mbold\x1b[0m\x00\r\n".encode()[:5])  # a character split across chunks
    capture.feed("héllo \x1b[1mbold\x1b[0m\x00\r\n".encode()[5:])
    assert capture.result() == ("héllo [1mbold[0m\n", [])


def test_a_worker_that_cannot_mount_the_run_area_refuses_the_run_rather_than_show_a_host_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Without its own tmpfs, the system's mountinfo would show this host's run folder with the
    run's id in it (issue 15): the platform's fault, retried on another worker, never run."""
    monkeypatch.setattr("workers.runner.os.geteuid", lambda: 1000)  # a worker not running as root
    with pytest.raises(runner.PlatformError, match="could not be made a tmpfs"), \
            runner.run_area(tmp_path / "run", 64):
        pytest.fail("the run went ahead in a plain folder")


def test_the_engines_refusal_to_create_a_container_is_not_quoted_to_the_team(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The engine's explanation can hold host paths; a team reads a dev run's reason."""
    class Containers:
        def create(self, **_: Any) -> None:
            raise docker.errors.APIError("500", explanation="invalid mount /var/lib/readerboard-compute/runs/77-1")

    class Engine:
        containers = Containers()

    spec = runner.RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, limits=Limits())
    with pytest.raises(runner.PlatformError) as refused:
        runner.run_container(Engine(), spec, output_capped=True, heartbeat=lambda: True,
                             heartbeat_every=1.0)
    assert "/var/lib" not in str(refused.value) and "worker's log" in str(refused.value)
    assert "/var/lib/readerboard-compute/runs/77-1" in caplog.text


class _Image:
    def __init__(self, engine: _Engine, image_id: str) -> None:
        self.engine, self.id = engine, image_id

    def tag(self, reference: str) -> None:
        self.engine.names[reference] = self.id


class _Images:
    def __init__(self, engine: _Engine) -> None:
        self.engine = engine

    def get(self, reference: str) -> _Image:
        if reference not in self.engine.names:
            raise docker.errors.ImageNotFound(reference)
        return _Image(self.engine, self.engine.names[reference])

    def remove(self, reference: str, noprune: bool = False) -> None:
        if self.engine.names.pop(reference, None) is None:
            raise docker.errors.NotFound(reference)


class _Engine:
    """Image names as an engine keeps them, nothing else: enough for run_image's bookkeeping."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.images = _Images(self)


def test_a_retry_on_the_same_host_runs_the_kept_image_without_copying_or_loading_it_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Issue 17: a platform fault after an image of up to 2 GB was fetched and loaded must not make
    its retry copy and load it again; a team's fault keeps nothing; the run's end drops what was kept."""
    engine, counts = _Engine(), {"fetch": 0, "load": 0}

    class Transport:
        def fetch(self, ticket: object, item: object, target: Path) -> None:
            counts["fetch"] += 1
            target.write_bytes(b"archive")

    def image_load(client: _Engine, path: Path, *, expected_id: str, reference: str, max_uncompressed: int) -> str:
        counts["load"] += 1
        client.names[reference] = expected_id
        return reference

    monkeypatch.setattr(runner, "image_load", image_load)
    config = run_system.ComputeConfig(work_dir=tmp_path, run_image_repository="readerboard-run")

    def ticket(attempt: int) -> RunTicket:
        return RunTicket(submission_id=7, attempt=attempt, kind="docker_image", image_digest="sha256:abc",
                         base_image="", runtime="", gpus=0, limits=Limits(), manifest={}, inputs=[],
                         output_names=[], system=TicketFile(url="u", name="image.tar", size=7, sha256="x"),
                         heartbeat_s=1.0, max_bundle_uncompressed=1, max_image_uncompressed=1)

    def attempt(number: int, fault: Exception | None) -> None:
        run_dir = tmp_path / "runs" / f"7-{number}"
        run_dir.mkdir(parents=True)
        with contextlib.suppress(*((type(fault),) if fault else ())):
            with run_system.run_image(Transport(), ticket(number), config, run_dir, engine) as image:  # type: ignore[arg-type]
                assert engine.names[image] == "sha256:abc"
                if fault is not None:
                    raise fault

    attempt(1, runner.PlatformError("the engine failed mid-run"))
    assert counts == {"fetch": 1, "load": 1} and engine.names == {"readerboard-run/7:kept": "sha256:abc"}
    attempt(2, None)  # the retry, on this host
    assert counts == {"fetch": 1, "load": 1}, "the retry copied or loaded the image again"
    assert engine.names == {}  # the run is over: nothing kept, no run reference left
    attempt(3, runner.ImageError("the engine refuses the image"))  # the team's fault: nothing kept
    assert counts == {"fetch": 2, "load": 2} and engine.names == {}
