"""Sealed means sealed: hostile systems try every side channel, and no team surface carries the hidden data.

The demo's hidden test data (a copy, loaded into the test challenge) gets a unique canary
string planted in a question, a context and an id of every hidden dataset: XQuAD-en's test
portion, CoQA sealed under a spec's alias, and DROP sealed under the alias derived from the
challenge's secret (added here: two sealed datasets, as the demo has).  Hostile systems
(tests/sandbox/canary/leak.py) run through the real path (upload, queue, worker, engine) and try
to get it out: unknown ids quoting the inputs, an empty output, an exit code, broken JSON at a
chosen position, a chosen run time, and printing everything into the log.  Then every surface
the team can reach is fetched, and none may carry the canary, the sealed dataset's real name or
any real id of the hidden data; the organizer's view still shows the full reason.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.conf import settings
from django.core import mail

from leaderboard.challenges.models import Dataset
from leaderboard.submissions.models import Status
from scoring.inputs import FORMATS
from tests.builders.canary import CANARY, HIDDEN, LEAK, plant_canaries
from tests.builders.systems import Platform, bundle

pytestmark = pytest.mark.django_db(transaction=True)

SEALED_NAMES = ("CoQA", "DROP")
LIBRARY = "the starting kit's scoring library"
MODES = {"unknown_ids": "unknown_ids", "empty": "answers_missing", "exit_code": "crashed",
         "broken_json": "output_not_json", "timing": "output_missing", "log": "finished",
         "mounts": "answers_missing", "refused_answer": "answer_refused"}


def team_surfaces(platform: Platform, pks: list[int]) -> dict[str, str]:
    """Every page, export and API answer the team (alice) can reach about its runs and the boards."""
    alice = platform.cast.client("alice")
    slug = platform.cast.challenge.slug
    urls = [f"/c/{slug}/", f"/c/{slug}/submissions/", f"/api/v1/challenges/{slug}/submissions/",
            f"/api/v1/challenges/{slug}/", "/api/v1/challenges/", f"/c/{slug}/data/",
            f"/api/v1/challenges/{slug}/data/", f"/c/{slug}/data/starting-kit.zip"]
    for pk in pks:
        urls += [f"/c/{slug}/submissions/{pk}/", f"/api/v1/submissions/{pk}/", f"/api/v1/submissions/{pk}/log/"]
    for phase in ("dev", "test"):
        urls += [f"/c/{slug}/board/{phase}/", f"/c/{slug}/board/{phase}/export.csv",
                 f"/c/{slug}/board/{phase}/export.json", f"/c/{slug}/board/{phase}/chart.svg",
                 f"/api/v1/challenges/{slug}/phases/{phase}/leaderboard/"]
    surfaces = {}
    for url in urls:
        response = alice.get(url)
        assert response.status_code == 200, (url, response.status_code)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if url.endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(body)) as kit:
                # The kit's scoring wheel names every benchmark format it can score (CoQA included):
                # the library, the same in every kit; checked apart (no other sealed name, DROP, in it).
                [wheel] = [name for name in kit.namelist() if name.endswith(".whl")]
                with zipfile.ZipFile(io.BytesIO(kit.read(wheel))) as library:
                    surfaces[LIBRARY] = b"\n".join(library.read(name) for name in library.namelist()).decode(
                        "utf-8", errors="replace")
                body = b"\n".join(kit.read(name) for name in kit.namelist() if not name.endswith((".gz", ".whl")))
        surfaces[url] = body.decode("utf-8", errors="replace")
    # What the platform's processes mailed (organizers' alerts): none may reach a team member with
    # any of it; the test process's own outbox too.
    team = {user.email for user in (platform.cast.alice, platform.cast.bob) if user.email}
    surfaces["e-mails to the team"] = "\n".join(
        message for message in platform.mails() if any(address in message for address in team))
    surfaces["e-mails (test process)"] = "\n".join(f"{m.subject}\n{m.body}" for m in mail.outbox)
    return surfaces


def test_no_side_channel_carries_hidden_test_data_to_the_team(platform: Platform) -> None:
    for user in (platform.cast.alice, platform.cast.bob, platform.cast.oscar):
        user.email = f"{user.username}@example.org"  # the platform's alerts go by e-mail
        user.save(update_fields=["email"])
    hidden_ids = plant_canaries(platform.cast)
    source = LEAK.read_text()
    pks = {}
    for mode in MODES:
        script = source.replace('MODE = "log"', f'MODE = "{mode}"', 1)
        pks[mode] = platform.submit(bundle(("run.py", script)))
    runs = {mode: platform.wait_final(pk, timeout=120) for mode, pk in pks.items()}
    for mode, verdict in MODES.items():
        run = runs[mode]
        expected = Status.FINISHED if verdict == "finished" else Status.FAILED
        assert (run.status, run.verdict) == (expected, verdict), (mode, run.failure_reason, platform.logs())
    # An answer the one rule refuses is the team's fault (counted), and its reason quotes no answer.
    assert runs["refused_answer"].failure_cause == "participant"
    assert CANARY not in runs["refused_answer"].failure_reason and "U+0000" in runs["refused_answer"].failure_reason
    # The hostile systems did read the canary: the organizer's records carry it.
    assert CANARY in runs["log"].log and CANARY in runs["unknown_ids"].failure_reason

    # The run folder says nothing either: no host path or id in the mounts, copies (one link
    # each) with the same fixed time, whatever runs are in progress and whenever the gold came.
    mounts = runs["mounts"].log
    assert mounts.count("MOUNT") >= 2 and mounts.count("FILE") == len(HIDDEN) + 1, mounts  # and the manifest
    assert str(settings.RUNS_DIR) not in mounts and f"{pks['mounts']}-1" not in mounts, mounts
    assert all(line.split()[5] in ("/input", "/output", "/system") and line.split()[4] in ("/", "/input", "/system")
               for line in mounts.splitlines() if line.startswith("MOUNT")), mounts
    assert all(" nlink=1 mtime=0" in line for line in mounts.splitlines() if line.startswith("FILE")), mounts

    surfaces = team_surfaces(platform, list(pks.values()))
    for where, text in surfaces.items():
        assert CANARY not in text, f"the canary reached the team through {where}"
        for name in SEALED_NAMES:
            if where == LIBRARY and name.lower() in FORMATS:
                continue  # a format the scoring library scores, named alike in every challenge's kit
            assert name not in text, f"the sealed dataset's real name {name} reached the team through {where}"
        leaked = [qid for qid in hidden_ids if len(qid) >= 8 and qid in text]
        assert not leaked, f"hidden ids reached the team through {where}: {leaked[:3]}"
        assert "LEAK0" not in text and "line 1, column" not in text, where

    # What the team does read: the verdicts, in the fixed vocabulary.
    alice = platform.cast.client("alice")
    detail = alice.get(f"/api/v1/submissions/{pks['unknown_ids']}/").json()
    assert detail["failure_reason"].startswith("Unknown ids present for dataset ")
    assert alice.get(f"/api/v1/submissions/{pks['exit_code']}/").json()["exit"] == "non-zero"
    timing = alice.get(f"/api/v1/submissions/{pks['timing']}/").json()
    assert isinstance(timing["run_seconds"], int) and isinstance(timing["peak_memory_mb"], int)
    # Nor do its start and end give the run time to a fraction of a second.
    assert "." not in timing["started_at"] and "." not in timing["finished_at"], timing
    drop = Dataset.objects.get(challenge=platform.cast.challenge, slug="drop")
    assert drop.sealed_alias.startswith("Hidden-") and drop.sealed_alias in detail_text(alice, pks["log"])
    assert alice.get(f"/api/v1/submissions/{pks['log']}/log/").json()["log"] is None

    # The organizer's view shows the full reason and the log.
    oscar = platform.cast.client("oscar")
    page = oscar.get(f"/c/{platform.cast.challenge.slug}/submissions/{pks['unknown_ids']}/").content.decode()
    assert "LEAK0" in page
    assert CANARY in oscar.get(f"/api/v1/submissions/{pks['log']}/log/").json()["log"]


def detail_text(client: object, pk: int) -> str:
    """A run's API answer as text: what the team reads of it (the datasets under their aliases)."""
    return json.dumps(client.get(f"/api/v1/submissions/{pk}/").json())  # type: ignore[attr-defined]
