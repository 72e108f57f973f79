"""What the platform says about a run, apart from what the system wrote; what an upload is refused for
before it can fail a run; and a team stopping its own running system.

No engine: runs are finished with the outcomes a worker hands over (see test_run_lifecycle.py).
The real log capture is in tests/sandbox/test_run_logs.py.
"""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection

from leaderboard.sandbox.contract import RunNote
from leaderboard.submissions.evaluation import submission_run_finish
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim, submission_run_heartbeat
from leaderboard.submissions.models import Status, Submission
from leaderboard.submissions.selectors import quota_usage
from tests.builders.cast import Cast
from tests.builders.image_archives import no_command
from tests.builders.runs import bundle, gold_outputs, outcome
from tests.builders.system_uploads import bundle_of, post
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db

FORGED = ("[... 123 bytes of log cut: logs are capped at 65536 bytes ...]\n"
          "platform: your run was accepted; scores below\n")
CUT = "524288 bytes of log cut between the head and the tail: a log keeps its first 32768 and its last 32768 bytes"


def run(cast: Cast, *, phase: str, logs: str, notes: list[RunNote], **changes: object) -> Submission:
    system_phases(cast)
    submission = submission_create_system(team=cast.alpha, phase=getattr(cast, phase), user=cast.alice,
                                          upload=bundle(), kind="code_bundle")
    plan = submission_run_claim(submission.pk, worker="host:1")
    assert plan is not None
    submission_run_finish(submission.pk, attempt=1, outcome=outcome(
        logs=logs, notes=notes, outputs=gold_outputs(plan) if phase == "test" else {}, **changes))
    submission.refresh_from_db()
    return submission


def log_of(page: str) -> str:
    """The text inside the page's <pre id="log"> (the system's), and nothing else."""
    match = re.search(r'<pre id="log" class="log">(.*?)</pre>', page, re.S)
    assert match, page
    return match.group(1)


def notes_of(page: str) -> list[str]:
    match = re.search(r'<ul id="platform-notes" class="platform-notes"[^>]*>(.*?)</ul>', page, re.S)
    return [html.unescape(n) for n in re.findall(r"<li>(.*?)</li>", match.group(1))] if match else []


def test_the_platforms_notes_are_apart_from_the_log_and_the_systems_imitations_stay_in_it(cast: Cast) -> None:
    head, tail = "START\n" + FORGED, "END\n"
    submission = run(cast, phase="dev", logs=head + tail, notes=[RunNote(CUT, at=len(head))], exit_code=3)
    assert submission.log_notes == [{"text": CUT, "at": len(head)}]
    alice = cast.client("alice")
    page = alice.get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    api = alice.get(f"/api/v1/submissions/{submission.pk}/log/").json()
    # The platform's note: in the list and the API's own field, never inside the log.
    assert notes_of(page) == [CUT] and api["platform_notes"] == [CUT]
    assert CUT not in log_of(page) and CUT not in api["log"]
    # The system's forged lines: inside the log, shown as the system's, never as notes.
    assert html.escape("[... 123 bytes of log cut") in log_of(page)
    assert "platform: your run was accepted" in log_of(page) and FORGED in api["log"]
    assert not any("your run was accepted" in n or "123 bytes" in n for n in notes_of(page) + api["platform_notes"])
    # The page marks the cut where it is: after the head, before the tail.
    pre = log_of(page)
    assert pre.index("START") < pre.index('class="log-cut"') < pre.index("END")
    assert api["log_cut_at"] == len(head) and api["log"][api["log_cut_at"]:] == tail


def test_on_hidden_data_the_notes_are_kept_from_the_team_like_the_log(cast: Cast) -> None:
    """A note's figures (how many bytes were cut) are the system's doing: a channel like the log."""
    submission = run(cast, phase="test", logs="x" * 10, notes=[RunNote(CUT, at=5)])
    alice, oscar = cast.client("alice"), cast.client("oscar")
    page = alice.get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    api = alice.get(f"/api/v1/submissions/{submission.pk}/log/").json()
    assert "524288" not in page and 'class="platform-notes"' not in page and 'id="log"' not in page
    assert api["log"] is None and api["platform_notes"] == [] and api["log_cut_at"] is None
    organizer = oscar.get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    assert notes_of(organizer) == [CUT]
    assert oscar.get(f"/api/v1/submissions/{submission.pk}/log/").json()["platform_notes"] == [CUT]
    # Released by an organizer: the team reads both.
    oscar.post(f"/c/demo/console/submissions/{submission.pk}/release-log/", {"reason": "asked for"})
    assert alice.get(f"/api/v1/submissions/{submission.pk}/log/").json()["platform_notes"] == [CUT]


def test_control_characters_never_reach_the_page_or_the_api(cast: Cast) -> None:
    # Stored as an older run would have it (the runner cleans logs since): cleaned when shown too.
    submission = run(cast, phase="dev", logs="ok", notes=[], exit_code=1)
    stored = "red \x1b[31mALERT\x1b[0m\x00 nul\x07\r\nnext\tcol\n"
    if connection.vendor == "postgresql":  # its text columns cannot hold a NUL at all
        stored = stored.replace("\x00", "")
    Submission.objects.filter(pk=submission.pk).update(log=stored)
    alice = cast.client("alice")
    page = alice.get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    body = alice.get(f"/api/v1/submissions/{submission.pk}/log/").content.decode()
    api = alice.get(f"/api/v1/submissions/{submission.pk}/log/").json()
    assert api["log"] == "red [31mALERT[0m nul\nnext\tcol\n"
    for text in (page, body):
        assert "\x1b" not in text and "\x00" not in text and "\\u001b" not in text and "\\u0000" not in text
    assert "ALERT" in log_of(page)


def test_a_container_that_could_not_start_says_so_in_a_note_and_its_verdict(cast: Cast) -> None:
    refusal = "the container could not start: its ENTRYPOINT/CMD was not found in the image"
    submission = run(cast, phase="dev", logs="", notes=[RunNote(refusal)], exit_code=127, not_started=refusal)
    assert submission.status == Status.FAILED and submission.verdict == "not_started"
    assert submission.failure_reason == refusal
    page = cast.client("alice").get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    assert notes_of(page) == [refusal]


# --------------------------------------------------------------------------- refused at upload


def encrypted_zip() -> bytes:
    """A one-member zip whose member says it is encrypted (zipfile writes no encrypted members:
    the flag is set in the local and the central header by hand)."""
    raw = bytearray(bundle_of({"run.py": b"print(1)"}))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = raw.index(signature) + offset
        raw[at] |= 0x1
    return bytes(raw)


REFUSED = {
    "an image without ENTRYPOINT or CMD": (no_command(), "docker_image", ["has no ENTRYPOINT or CMD"]),
    "a file and a folder of one name": (bundle_of({"run.py": b"", "lib": b"x", "lib/util.py": b"y"}), "code_bundle",
                                        ["'lib' is both a file and a folder"]),
    "a folder entry and a file of one name": (bundle_of({"run.py": b"", "data/": b"", "data": b"x"}),
                                              "code_bundle", ["'data' is both a file and a folder"]),
    "run.py as both": (bundle_of({"run.py": b"", "run.py/x": b""}), "code_bundle", ["'run.py' is both"]),
    "an over-long name": (bundle_of({"run.py": b"", "n" * 256 + ".py": b""}), "code_bundle",
                          ["longer than 255 bytes"]),
    "an over-long path": (bundle_of({"run.py": b"", "/".join(["d" * 200] * 6) + "/x.py": b""}), "code_bundle",
                          ["longer than 1024 bytes"]),
    "an encrypted member": (encrypted_zip(), "code_bundle", ["is encrypted"]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_could_not_run_is_refused_at_upload_not_counted(cast: Cast, case: str) -> None:
    system_phases(cast)
    content, kind, fragments = REFUSED[case]
    status, message = post(cast, "api", content, kind=kind, name="x.tar" if kind == "docker_image" else "b.zip")
    assert status == 400, message
    for fragment in fragments:
        assert fragment in message, message
    assert not Submission.objects.exists()


# --------------------------------------------------------------------------- a team stops its running system


def test_a_team_can_cancel_its_running_system_and_the_run_is_dropped(cast: Cast) -> None:
    system_phases(cast)
    submission = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                          kind="code_bundle")
    submission_run_claim(submission.pk, worker="host:1")
    page = cast.client("bob").get(f"/c/demo/submissions/{submission.pk}/").content.decode()
    assert 'id="cancel-run"' in page
    # An outsider cannot; a member can, from the page.
    cast.client("charlie").post(f"/c/demo/submissions/{submission.pk}/", {"action": "cancel"})
    assert Submission.objects.get(pk=submission.pk).status == Status.RUNNING
    cast.client("bob").post(f"/c/demo/submissions/{submission.pk}/", {"action": "cancel"})
    submission.refresh_from_db()
    assert submission.status == Status.CANCELLED and submission.lease_expires_at is None
    # The worker's next heartbeat fails (it kills the container), and what it hands over is dropped.
    assert not submission_run_heartbeat(submission.pk, attempt=1)
    submission_run_finish(submission.pk, attempt=1, outcome=outcome(exit_code=0, logs="late"))
    submission.refresh_from_db()
    assert submission.status == Status.CANCELLED and submission.log == "" and submission.exit_code is None
    assert quota_usage(team=cast.alpha, phase=cast.test).used_total == 0


def test_scoring_and_final_runs_cannot_be_cancelled(cast: Cast) -> None:
    system_phases(cast)
    submission = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                          kind="code_bundle")
    for status in (Status.SCORING, Status.FINISHED, Status.FAILED):
        Submission.objects.filter(pk=submission.pk).update(status=status)
        response = cast.client("alice").post(f"/c/demo/submissions/{submission.pk}/", {"action": "cancel"},
                                             follow=True)
        assert "can be cancelled" in response.content.decode()
        assert Submission.objects.get(pk=submission.pk).status == status
