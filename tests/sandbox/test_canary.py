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
import re
import zipfile

import pytest
from django.conf import settings
from django.core import mail
from django.test import Client

from leaderboard.challenges.models import Dataset
from leaderboard.judging.services import judge_invite, round_create, round_open
from leaderboard.submissions.models import Status
from scoring.inputs import FORMATS
from tests.builders import responses
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
        body = responses.body(response)
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


SEALED_SLUGS = ("coqa", "drop")


def judge_pages(client: Client, url: str) -> list[str]:
    """Every page a judge reads while judging a round to the end, through the page's own form."""
    pages = []
    for _ in range(500):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        page = response.content.decode()
        pages.append(page)
        token = re.search(r'name="token" value="([^"]+)"', page)
        if token is None:
            return pages
        score = re.search(r'name="score" value="(\d+)"', page)
        assert score is not None, page
        posted = client.post(url, {"token": token.group(1), "score": score.group(1)})
        assert posted.status_code == 302, posted.content[:400]
    raise AssertionError("the judge page never ran out of items")


def test_a_judge_who_is_no_organizer_reads_nothing_of_a_sealed_dataset(platform: Platform) -> None:
    """A round on the test phase over a system that read every hidden dataset: the organizer judges
    the sealed items, an outside judge (dave: no team, no organizer) the others.  Dave reads the
    Split II items he judges (a judge's job) but nothing of the sealed ones, by canary, name or id;
    the team reads nothing of the round before it is published."""
    cast = platform.cast
    plant_canaries(cast)
    run = platform.wait_final(platform.submit(bundle(("run.py", LEAK.read_text()))), timeout=120)  # mode "log"
    assert run.status == Status.FINISHED, (run.failure_reason, platform.logs())
    judge_invite(challenge=cast.challenge, user=cast.dave, by=cast.oscar)
    judge_invite(challenge=cast.challenge, user=cast.oscar, by=cast.oscar)
    created = round_create(phase=cast.test, by=cast.oscar, systems=[run.pk], questions=500, seed=3,
                           stratify_by="dataset", judges_per_item=1, name="Canary round")
    assert set(created.items.values_list("dataset__slug", flat=True)) == {"xquad-en", *SEALED_SLUGS}
    opened = round_open(round=created, by=cast.oscar)
    url = f"/c/{cast.challenge.slug}/judge/{opened.pk}/"

    pages = judge_pages(cast.client("dave"), url)
    assert len(pages) > 1, "dave judged nothing"
    sealed_items = set(created.items.filter(dataset__slug__in=SEALED_SLUGS).values_list("qid", flat=True))
    for n, page in enumerate(pages):
        for slug in SEALED_SLUGS:
            assert f"{CANARY} of {slug}" not in page and f"{CANARY}-qid-{slug}" not in page, (n, slug)
        for name in SEALED_NAMES:
            assert name not in page, f"the sealed dataset's real name {name} reached a judge (page {n})"
        leaked = [qid for qid in sealed_items if len(qid) >= 8 and qid in page]
        assert not leaked, f"sealed ids reached a judge: {leaked[:3]}"
    # The organizer judges the sealed items: they are on the round, and reach him.
    oscar_pages = judge_pages(cast.client("oscar"), url)
    assert any(f"{CANARY} of coqa" in p or f"{CANARY} of drop" in p for p in oscar_pages)

    # The team: no judge page, and nothing of the round anywhere it reads, before publication.
    alice = cast.client("alice")
    assert alice.get(url).status_code == 404
    for where, text in team_surfaces(platform, [run.pk]).items():
        assert "Canary round" not in text and f"/judge/{opened.pk}/" not in text, where
        for slug in SEALED_SLUGS:
            assert f"{CANARY} of {slug}" not in text, where


def detail_text(client: object, pk: int) -> str:
    """A run's API answer as text: what the team reads of it (the datasets under their aliases)."""
    return json.dumps(client.get(f"/api/v1/submissions/{pk}/").json())  # type: ignore[attr-defined]
