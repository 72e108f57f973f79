"""Logs keep what they promise, through the real engine; and a team stops its own running system.

A log is read as a stream while the system runs (the engine's rotation would have dropped its start
by the end), keeps its first and last halves of the cap, says out of band how much was cut, and
carries nothing that could drive a terminal or pass for the platform's own words.
"""

from __future__ import annotations

import html
import re
import time

import docker
import pytest

from leaderboard.submissions.models import Status, Submission
from tests.builders.systems import SYSTEMS, TEST_LIMITS, Platform, bundle, our_containers

pytestmark = pytest.mark.django_db(transaction=True)

FORGED = ("[... 99 bytes of log cut: logs are capped at 65536 bytes ...]\n"
          "platform: the run passed every check\n")
# What the system writes, byte for byte, to stdout: START, forged platform lines, 1 MiB, escape and
# NUL bytes, forged lines again, END.  (stdout alone: the engine reads stdout and stderr through two
# pipes of 64 KiB, so how their bytes interleave in a log is loose by that much.)
SYSTEM = r'''
import os

def out(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

FORGED = __FORGED__.encode()
out(1, b"START\n" + FORGED)
line = b"y" * 1023 + b"\n"
for i in range(1024):
    out(1, line)
out(1, b"colour \x1b[31mRED\x1b[0m bell\x07 nul\x00 done\r\n" + FORGED)
out(1, b"END\n")
'''.replace("__FORGED__", repr(FORGED))
WRITTEN = len(b"START\n") + 2 * len(FORGED.encode()) + 1024 * 1024 + len(
    b"colour \x1b[31mRED\x1b[0m bell\x07 nul\x00 done\r\n") + len(b"END\n")


def pre_log(page: str) -> str:
    match = re.search(r'<pre id="log" class="log">(.*?)</pre>', page, re.S)
    assert match, page[-3000:]
    return html.unescape(match.group(1))


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_a_long_log_keeps_its_start_and_end_and_says_out_of_band_what_was_cut(
    platform: Platform, runtime: str
) -> None:
    challenge = platform.cast.challenge
    challenge.system_settings = {"runtime": runtime, "limits": TEST_LIMITS}
    challenge.save()
    pk = platform.submit(bundle(("run.py", SYSTEM)), phase="dev")  # public data: the team reads its log
    run = platform.wait_final(pk, timeout=120)
    assert run.attempts == 1 and run.runtime == runtime
    cap = TEST_LIMITS["log_bytes"]
    assert run.log.startswith("START\n" + FORGED), run.log[:200]
    assert run.log.endswith(FORGED + "END\n"), run.log[-300:]
    [note] = run.log_notes
    assert note["text"].startswith(f"{WRITTEN - cap} bytes of log cut between the head and the tail")

    alice = platform.cast.client("alice")
    page = alice.get(f"/c/demo/submissions/{pk}/").content.decode()
    api = alice.get(f"/api/v1/submissions/{pk}/log/").json()
    # Both markers are kept; the count of what was cut is the platform's note, apart from the log.
    assert api["log"].startswith("START\n") and api["log"].endswith("END\n")
    assert api["platform_notes"] == [note["text"]]
    assert 'class="platform-notes"' in page and html.escape(note["text"]) in page
    log_text = pre_log(page)
    assert log_text.startswith("START\n") and log_text.rstrip().endswith("END")
    # The system's forgeries are shown as the system's: inside the log, never as notes.
    for forged in ("[... 99 bytes of log cut", "platform: the run passed every check"):
        assert api["log"].count(forged) == 2 and log_text.count(forged) == 2
        assert not any(forged in n for n in api["platform_notes"])
    # Escape, bell and NUL bytes are gone from the page and the API; the text around them stays.
    assert "colour [31mRED[0m bell nul done\n" in api["log"]
    raw_api = alice.get(f"/api/v1/submissions/{pk}/log/").content.decode()
    for text in (page, raw_api, run.log):
        assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
        assert "\\u001b" not in text and "\\u0000" not in text


def test_a_team_stops_its_running_system_within_a_heartbeat(platform: Platform, engine: docker.DockerClient) -> None:
    pk = platform.submit(bundle(("run.py", (SYSTEMS / "slow" / "run.py").read_text()),
                                ("trivial.py", (SYSTEMS / "trivial" / "run.py").read_text())))
    deadline = time.monotonic() + 60
    while not (Submission.objects.get(pk=pk).status == Status.RUNNING
               and our_containers(engine, f"readerboard.submission={pk}", stopped=False)):
        assert time.monotonic() < deadline, platform.logs()
        time.sleep(0.2)
    response = platform.cast.client("bob").post(f"/c/demo/submissions/{pk}/", {"action": "cancel"})
    assert response.status_code == 302
    cancelled = time.monotonic()
    # The worker's heartbeat (every second here) finds the run cancelled and kills the container
    # (a second or two, and the engine's own time to kill), then removes it.
    label = f"readerboard.submission={pk}"
    while our_containers(engine, label, stopped=False):
        assert time.monotonic() - cancelled < 8, "the container kept running after the cancellation"
        time.sleep(0.2)
    while our_containers(engine, label):
        assert time.monotonic() - cancelled < 30, "the container was not removed after the cancellation"
        time.sleep(0.2)
    time.sleep(2)  # what the worker does next (it would finish the run here) must not change the row
    run = Submission.objects.get(pk=pk)
    assert run.status == Status.CANCELLED and run.attempts == 1
    assert run.log == "" and run.exit_code is None and run.run_seconds is None and not run.scores.exists()
    assert "stopped (cancelled or re-assigned)" in platform.logs(tail=None)
    # The worker goes on to the next run.
    honest = platform.submit(bundle(("run.py", (SYSTEMS / "trivial" / "run.py").read_text())))
    assert platform.wait_final(honest, timeout=120).status == Status.FINISHED
