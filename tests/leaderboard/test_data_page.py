"""The Data page and its files: who downloads what, and when; what is never served.

The cast (conftest) plus a SQuAD training file (Split I) and erin, whose team is in another
challenge.  Files of the demo challenge: ``train/squad``, ``dev/squad``, ``dev/xquad-en``,
``test-inputs/xquad-en`` (its test phase takes prediction files) and the starting kit; CoQA
(Split III, sealed as Hidden-07) has only a test portion, which runs on systems only.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from drf_spectacular.validation import validate_schema
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.accounts.services import team_create
from leaderboard.challenges.downloads import NO_FILE_MESSAGE, file_download_record
from leaderboard.challenges.models import Challenge, Dataset, DatasetFile, FileDownload
from leaderboard.challenges.selectors import phase_prediction_targets
from leaderboard.challenges.services import dataset_file_put, dataset_reveal
from leaderboard.challenges.spec import SpecError
from leaderboard.challenges.starting_kit import scoring_wheel, starting_kit_build
from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.archives import bundle_inspect
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from leaderboard.submissions.reload import challenge_load
from tests.builders.cast import DEMO_DATA, REPO, Cast, upload
from tests.builders.data_page import TRAIN_FILE, run_kit_locally
from tests.builders.responses import body, text
from tests.builders.suites import squad2_gold

ROLES = ("anonymous", "dave", "erin", "bob", "charlie", "oscar", "root")
ORGANIZERS = {"oscar", "root"}
MEMBERS = {"bob", "charlie"}  # Alpha and Charlie's: both teams are registered in this challenge
FILES = {
    "train/squad": "/c/demo/data/train/squad/",
    "dev/squad": "/c/demo/data/dev/squad/",
    "dev/xquad-en": "/c/demo/data/dev/xquad-en/",
    "test-inputs/xquad-en": "/c/demo/data/test-inputs/xquad-en/",
    "starting-kit": "/c/demo/data/starting-kit.zip",
}
# URLs that must never serve anything: test gold under any name, the sealed dataset under
# its slug or its alias, kinds that do not exist.
NEVER = [
    f"/c/demo/data/{kind}/{slug}/"
    for kind in ("test", "test-gold", "gold", "test-inputs", "dev", "train", "inputs")
    for slug in ("coqa", "hidden-07", "Hidden-07", "nope")
] + ["/c/demo/data/test/xquad-en/", "/c/demo/data/gold/xquad-en/", "/c/demo/data/test-gold/xquad-en/",
     "/c/demo/data/train/xquad-en/", "/c/demo/data/dev/xquad-en/../../test/xquad-en/",
     "/c/nope/data/dev/xquad-en/", "/c/nope/data/starting-kit.zip"]


def api(url: str) -> str:
    return url.replace("/c/demo/", "/api/v1/challenges/demo/")


@pytest.fixture
def data_cast(cast: Cast) -> Cast:
    squad = Dataset.objects.get(challenge=cast.challenge, slug="squad")
    dataset_file_put(dataset=squad, portion="train", content=TRAIN_FILE.read_bytes(), filename=TRAIN_FILE.name)
    erin = User.objects.create_user("erin", password="erin-pw")
    other = Challenge.objects.create(slug="other", title="Other", metric_suite="mrqa")
    team_create(challenge=other, owner=erin, name="Elsewhere")
    cast.erin = erin  # type: ignore[attr-defined]
    return cast


def client_for(cast: Cast, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(User.objects.get(username=role))
    return client


def unmasked(page: str) -> str:
    """A page without its CSRF token, which Django masks anew in every response."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)


def never_served(cast: Cast) -> dict[str, bytes]:
    """Bytes that must not leave the server: every test gold file, every file of Split III."""
    out = {}
    for record in DatasetFile.objects.filter(dataset__challenge=cast.challenge):
        if record.portion == "test":
            out[f"gold {record}"] = Path(record.gold.path).read_bytes()
        if record.dataset.split == "III":
            out[f"gold {record}"] = Path(record.gold.path).read_bytes()
            out[f"inputs {record}"] = Path(record.inputs.path).read_bytes()
    return out


def open_phases(cast: Cast, is_open: bool) -> None:
    when = timezone.now() + dt.timedelta(days=-1 if is_open else 30)
    cast.challenge.phases.update(opens_at=when)


def test_each_phase_opens_its_own_files(data_cast: Cast) -> None:
    """The dev phase open and the test phase not yet: a team member gets the training and dev
    files and the kit, and the test inputs only once the test phase opens."""
    now = timezone.now()
    data_cast.challenge.phases.filter(slug="dev").update(opens_at=now - dt.timedelta(days=1))
    data_cast.challenge.phases.filter(slug="test").update(opens_at=now + dt.timedelta(days=30))
    bob = client_for(data_cast, "bob")
    for key in ("train/squad", "dev/squad", "dev/xquad-en", "starting-kit"):
        assert bob.get(FILES[key]).status_code == 200, key
    assert bob.get(FILES["test-inputs/xquad-en"]).status_code == 404
    assert bob.get(api(FILES["test-inputs/xquad-en"])).status_code == 404
    data_cast.challenge.phases.filter(slug="test").update(opens_at=now - dt.timedelta(minutes=1))
    assert bob.get(FILES["test-inputs/xquad-en"]).status_code == 200


# --- the permission matrix ------------------------------------------------------------------------


@pytest.mark.parametrize("is_open", [False, True], ids=["before-opening", "after-opening"])
@pytest.mark.parametrize("role", ROLES)
def test_every_file_kind_is_served_to_the_right_people_at_the_right_time(
    data_cast: Cast, role: str, is_open: bool
) -> None:
    open_phases(data_cast, is_open)
    client = client_for(data_cast, role)
    allowed = role in ORGANIZERS or (role in MEMBERS and is_open)
    refusals = set()
    for url in FILES.values():
        for address in (url, api(url)):
            response = client.get(address)
            if allowed:
                assert response.status_code == 200, (role, address, response.status_code)
                assert "attachment" in response["Content-Disposition"], address
                body(response)
            else:
                assert response.status_code == 404, (role, address, response.status_code)
                content = text(response)
                assert NO_FILE_MESSAGE in content, (role, address)
                refusals.add(unmasked(content))
    # A missing file and an existing one get the very same answer (one for pages, one for the API).
    if not allowed:
        assert len(refusals) == 2
        for address in ("/c/demo/data/dev/nope/", "/c/demo/data/test-inputs/coqa/", "/c/nope/data/dev/squad/"):
            assert unmasked(text(client.get(address))) in refusals, address
            assert unmasked(text(client.get(api(address)))) in refusals, address
    assert FileDownload.objects.filter(challenge=data_cast.challenge).count() == (len(FILES) if allowed else 0)


@pytest.mark.parametrize("role", ROLES)
def test_no_test_gold_and_nothing_sealed_is_ever_served(data_cast: Cast, role: str) -> None:
    secret = never_served(data_cast)
    assert len(secret) == 3  # XQuAD-en test gold, CoQA test gold, CoQA test inputs
    client = client_for(data_cast, role)
    never = [*NEVER, *(api(u) for u in NEVER)]
    for url in [*never, *FILES.values(), *(api(u) for u in FILES.values())]:
        response = client.get(url)
        served = body(response)
        if url in never:
            assert response.status_code == 404, (role, url, response.status_code)
        for name, content in secret.items():
            assert content not in served, (role, url, name)
        if url.endswith(".zip") and response.status_code == 200:
            _assert_no_secret_inside(served, secret)


def _assert_no_secret_inside(archive: bytes, secret: dict[str, bytes], where: str = "") -> None:
    """No member of the archive, nor of an archive inside it (the bundles), holds a secret or names the
    sealed dataset; the scoring library's source names every suite (coqa.py), and its wheel is the
    same for every challenge, byte for byte."""
    wheel_name, wheel = scoring_wheel()
    with zipfile.ZipFile(io.BytesIO(archive)) as kit:
        for member in kit.namelist():
            inner = kit.read(member)
            assert not any(content == inner for content in secret.values()), (where, member)
            if member.endswith(f"/{wheel_name}"):
                assert inner == wheel, member
            elif member.endswith(".zip"):
                _assert_no_secret_inside(inner, secret, f"{where}{member}/")
            else:
                assert b"coqa" not in inner.lower() or member.endswith(".py"), (where, member)


@pytest.mark.parametrize("role", ["anonymous", "dave", "erin", "bob", "charlie"])
def test_the_sealed_dataset_appears_under_its_alias_only_and_without_a_fingerprint(data_cast: Cast, role: str) -> None:
    client = client_for(data_cast, role)
    page = text(client.get("/c/demo/data/"))
    listing = client.get("/api/v1/challenges/demo/data/").json()
    coqa = DatasetFile.objects.get(dataset__slug="coqa")
    for content in (page, json.dumps(listing)):
        assert "coqa" not in content.lower()
        assert coqa.sha256 not in content and coqa.sha256[:16] not in content
        assert "Hidden-07" in content
    hidden = [f for s in listing["sections"] for f in s["files"] if f["dataset"] == "Hidden-07"]
    assert hidden and all(f["key"] == "" and f["url"] is None and f["size_bytes"] is None and f["sha256"] == ""
                          and f["n_questions"] is None for f in hidden)
    assert all(f["what"] == "runs on systems only, no download" for f in hidden)


def test_organizers_see_the_public_view_here_and_get_no_sealed_file(data_cast: Cast) -> None:
    # The Data page is a public address: organizers read the alias there as everyone does.
    page = text(client_for(data_cast, "oscar").get("/c/demo/data/"))
    assert "Hidden-07" in page and "CoQA" not in page and "runs on systems only, no download" in page
    assert "/data/test-inputs/coqa/" not in page and "/data/dev/coqa/" not in page


def test_after_the_reveal_split_III_is_named_and_still_not_downloadable(data_cast: Cast) -> None:
    dataset_reveal(dataset=Dataset.objects.get(challenge=data_cast.challenge, slug="coqa"))
    client = client_for(data_cast, "bob")
    page = text(client.get("/c/demo/data/"))
    assert "CoQA" in page and "Hidden-07" not in page
    assert client.get("/c/demo/data/test-inputs/coqa/").status_code == 404
    assert client_for(data_cast, "oscar").get("/c/demo/data/test-inputs/coqa/").status_code == 404


def test_a_systems_only_test_phase_offers_no_test_inputs(data_cast: Cast) -> None:
    data_cast.test.allowed_kinds = ["code_bundle", "docker_image"]
    data_cast.test.save()
    for role in ("bob", "oscar"):
        client = client_for(data_cast, role)
        assert client.get("/c/demo/data/test-inputs/xquad-en/").status_code == 404, role
        listing = client.get("/api/v1/challenges/demo/data/").json()
        test = next(s for s in listing["sections"] if s["phase"] == "test")
        assert [(f["dataset"], f["key"]) for f in test["files"]] == [
            ("XQuAD-en", ""), ("Hidden-07", "")]


# --- what is served -------------------------------------------------------------------------------


def test_files_are_streamed_with_their_name_type_and_exact_bytes(data_cast: Cast) -> None:
    client = client_for(data_cast, "bob")
    expected = {
        "train/squad": ("demo-squad-train.jsonl.gz", TRAIN_FILE.read_bytes()),
        "dev/squad": ("demo-squad-dev.jsonl.gz", (DEMO_DATA / "mrqa" / "SQuAD.dev.jsonl.gz").read_bytes()),
        "dev/xquad-en": ("demo-xquad-en-dev.jsonl.gz", (DEMO_DATA / "mrqa" / "XQuAD-en.dev.jsonl.gz").read_bytes()),
    }
    listing = {f["key"]: f for s in client.get("/api/v1/challenges/demo/data/").json()["sections"] for f in s["files"]}
    for key, (filename, content) in expected.items():
        response = client.get(FILES[key])
        assert response.streaming and response["Content-Type"] == "application/gzip"
        assert response["Content-Disposition"] == f'attachment; filename="{filename}"'
        assert body(response) == content
        assert listing[key]["filename"] == filename and listing[key]["size_bytes"] == len(content)
        assert listing[key]["sha256"] == hashlib.sha256(content).hexdigest()


def test_test_inputs_are_the_stored_run_inputs_of_exactly_the_scored_questions(data_cast: Cast) -> None:
    response = client_for(data_cast, "bob").get(FILES["test-inputs/xquad-en"])
    assert response["Content-Disposition"] == 'attachment; filename="demo-xquad-en-test-inputs.jsonl.gz"'
    served = body(response)
    record = DatasetFile.objects.get(dataset__slug="xquad-en", portion="test")
    assert served == Path(record.inputs.path).read_bytes()  # the very file a system run reads
    lines = [json.loads(line) for line in gzip.decompress(served).decode().splitlines()]
    qids = [qa["qid"] for ctx in lines[1:] for qa in ctx["qas"]]
    assert qids == record.qids
    assert not any("answers" in qa or "detected_answers" in qa for ctx in lines[1:] for qa in ctx["qas"])


def test_downloads_are_counted_and_only_organizers_see_the_counts(data_cast: Cast) -> None:
    bob = client_for(data_cast, "bob")
    for _ in range(2):
        body(bob.get(FILES["dev/xquad-en"]))
    bob.head(FILES["dev/squad"])  # a HEAD downloads nothing
    row = FileDownload.objects.get(challenge=data_cast.challenge, key="dev/xquad-en")
    assert row.count == 2 and row.last_at is not None
    assert not FileDownload.objects.filter(key="dev/squad").exists()
    file_download_record(challenge=data_cast.challenge, key="dev/xquad-en")
    assert FileDownload.objects.get(pk=row.pk).count == 3

    organizer = client_for(data_cast, "oscar").get("/api/v1/challenges/demo/data/").json()
    counts = {f["key"]: f["downloads"] for s in organizer["sections"] for f in s["files"] if f["key"]}
    assert counts["dev/xquad-en"] == 3 and counts["dev/squad"] == 0
    page = client_for(data_cast, "oscar").get("/c/demo/data/")
    assert re.search(r'data-key="dev/xquad-en">.*?Downloads: <strong class="count">3</strong>', text(page), re.S)
    for role in ("bob", "anonymous"):
        listing = client_for(data_cast, role).get("/api/v1/challenges/demo/data/").json()
        assert all(f["downloads"] is None for s in listing["sections"] for f in s["files"])
        assert "Downloads" not in text(client_for(data_cast, role).get("/c/demo/data/"))


# --- the page and the API list the same files -------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_the_api_lists_the_same_files_as_the_page(data_cast: Cast, role: str) -> None:
    client = client_for(data_cast, role)
    page = text(client.get("/c/demo/data/"))
    listing = client.get("/api/v1/challenges/demo/data/").json()
    files = [f for s in listing["sections"] for f in s["files"]] + [listing["starting_kit"]]
    assert re.findall(r'data-key="([^"]*)"', page) == [f["key"] for f in files]
    for f in files:
        if f["key"]:
            assert f["filename"] in page and f["sha256"] in page, f
            assert (f["url"] is not None) == (role in ORGANIZERS or role in MEMBERS), f
        if f["url"]:
            path = f["url"].removeprefix("http://testserver")
            assert client.get(path).status_code == 200
            page_path = path.replace("/api/v1/challenges/", "/c/")
            assert f'href="{page_path}"' in page
    assert [s["title"] for s in listing["sections"]] == ["Training data (Split I)", "Dev", "Test"]
    expected_keys = ["train/squad", "dev/squad", "dev/xquad-en", "test-inputs/xquad-en", "", "starting-kit"]
    assert [f["key"] for f in files] == expected_keys
    if role in ("anonymous", "dave", "erin"):
        assert "join a team to download" in page.lower()
        assert listing["message"]


def test_the_challenge_page_links_the_data_page(data_cast: Cast) -> None:
    assert 'href="/c/demo/data/"' in text(Client().get("/c/demo/"))


def test_the_openapi_schema_documents_the_data_endpoints(data_cast: Cast) -> None:
    schema = yaml.safe_load(Client().get("/api/schema/").content)
    validate_schema(schema)
    paths = schema["paths"]
    assert "get" in paths["/api/v1/challenges/{slug}/data/"]
    assert "get" in paths["/api/v1/challenges/{slug}/data/{kind}/{dataset_slug}/"]
    assert "get" in paths["/api/v1/challenges/{slug}/data/starting-kit.zip"]
    listing = paths["/api/v1/challenges/{slug}/data/"]["get"]["responses"]["200"]
    assert listing["content"]["application/json"]["schema"]["$ref"].endswith("/DataListingOutput")


@pytest.mark.django_db
def test_unknown_challenges_get_a_clear_404() -> None:
    response = Client().get("/c/nope/data/")
    assert response.status_code == 404 and "Not found" in text(response)
    assert Client().get("/api/v1/challenges/nope/data/").status_code == 404


# --- training files in challenge_load ---------------------------------------------------------------


def spec(tmp_path: Path, datasets: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(f"""
slug: train-demo
title: Training files
metric_suite: mrqa
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z, closes_at: 2099-01-01T00:00:00Z}}
datasets:
{datasets}
""")
    return path


@pytest.mark.django_db
def test_challenge_load_stores_a_split_I_training_file_and_keeps_it_off_boards(tmp_path: Path) -> None:
    challenge = challenge_load(spec_path=spec(tmp_path, f"""
  - {{slug: squad, name: SQuAD, split: I, files: {{train: {TRAIN_FILE}, dev: {DEMO_DATA}/mrqa/SQuAD.dev.jsonl.gz}}}}
"""))
    squad = challenge.datasets.get(slug="squad")
    train = squad.files.get(portion="train")
    assert train.n_questions == 515 and train.sha256
    assert squad.portions == ["dev"]  # boards, uploads and runs read scored portions only
    for phase in challenge.phases.all():
        assert [f.portion for _, f in phase_prediction_targets(phase=phase)] == [phase.portion]


@pytest.mark.django_db
@pytest.mark.parametrize("split", ["II", "III"])
def test_challenge_load_refuses_training_files_outside_split_I(tmp_path: Path, split: str) -> None:
    path = spec(tmp_path, f"""
  - {{slug: xquad, name: XQuAD, split: {split}, files: {{train: {TRAIN_FILE}}}}}
""")
    with pytest.raises(SpecError, match=r"train-demo\.datasets\[0\]\.files\.train: training files belong to Split I"):
        challenge_load(spec_path=path)
    assert not DatasetFile.objects.filter(portion="train").exists()


@pytest.mark.django_db
def test_challenge_load_validates_training_files_with_the_suites_gold_check(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"header": {}}\n{"context": "x", "qas": [{"question": "q"}]}\n'))
    with pytest.raises(ServiceError, match="gold file for squad \\(train\\) rejected"):
        challenge_load(spec_path=spec(tmp_path, f"""
  - {{slug: squad, name: SQuAD, split: I, files: {{train: {bad}}}}}
"""))
    with pytest.raises(SpecError, match="files: unknown key 'validation'; the keys here are train, dev, test"):
        challenge_load(spec_path=spec(tmp_path, f"""
  - {{slug: squad, name: SQuAD, split: I, files: {{validation: {TRAIN_FILE}}}}}
"""))


def test_dataset_file_put_refuses_training_files_outside_split_I(data_cast: Cast) -> None:
    xquad = Dataset.objects.get(challenge=data_cast.challenge, slug="xquad-en")
    with pytest.raises(ServiceError, match="training files belong to Split I datasets only"):
        dataset_file_put(dataset=xquad, portion="train", content=TRAIN_FILE.read_bytes(), filename=TRAIN_FILE.name)


def test_the_demo_spec_loads_with_its_training_file(db: None) -> None:
    User.objects.create_user("organizer")
    challenge = challenge_load(spec_path=REPO / "deploy" / "demo" / "mrqa-demo.yaml")
    assert challenge.datasets.get(slug="squad").files.filter(portion="train").exists()


# --- the starting kit ---------------------------------------------------------------------------------


def kit_members(cast: Cast) -> dict[str, bytes]:
    response = client_for(cast, "bob").get(FILES["starting-kit"])
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="demo-starting-kit.zip"'
    with zipfile.ZipFile(io.BytesIO(body(response))) as kit:
        return {name: kit.read(name) for name in kit.namelist()}


def test_the_starting_kit_is_built_from_the_challenge_and_is_reproducible(data_cast: Cast, tmp_path: Path) -> None:
    data_cast.challenge.system_settings = {"limits": {"memory_mb": 777, "time_limit_s": 123, "cpus": 2}}
    data_cast.challenge.save()
    # Prediction files only: the kit claims no bundle (a phase taking none would refuse it).
    assert not any(n.endswith("baseline-bundle.zip") for n in kit_members(data_cast))
    assert "baseline-bundle.zip" not in kit_members(data_cast)["demo-starting-kit/README.md"].decode()
    data_cast.test.allowed_kinds = ["predictions", "code_bundle"]
    data_cast.test.save()
    first = starting_kit_build(challenge=data_cast.challenge)
    first_bytes = first.path.read_bytes()
    first.path.unlink()
    again = starting_kit_build(challenge=data_cast.challenge)
    assert again.path.read_bytes() == first_bytes and again.sha256 == first.sha256

    members = kit_members(data_cast)
    root = "demo-starting-kit/"
    assert all(name.startswith(root) for name in members)
    names = {name.removeprefix(root) for name in members}
    assert {"README.md", "system/run.py", "baseline-bundle.zip", "dev/manifest.json", "sample/input/manifest.json",
            "requirements.txt"} <= names
    # The scoring library comes as its wheel, named in requirements.txt, never as a copy of its files.
    [wheel] = [name for name in names if name.startswith("readerboard_scoring-") and name.endswith(".whl")]
    assert f"./{wheel}\n" in members[root + "requirements.txt"].decode()
    assert not [name for name in names if name.startswith("scoring/")]
    readme = members[root + "README.md"].decode()
    assert "777 MiB of memory" in readme and "123 s of wall-clock time" in readme and "2 CPU" in readme
    assert "python -m scoring mrqa dev/demo-squad-dev.jsonl.gz out/squad.json" in readme
    assert "python -m scoring mrqa dev/demo-xquad-en-dev.jsonl.gz out/xquad-en.json" in readme
    assert "coqa" not in readme.lower() and "Hidden-07" not in readme

    # The sample: a dev run's manifest and the stored answer-free inputs of the smallest public dev dataset.
    sample = json.loads(members[root + "sample/input/manifest.json"])
    assert sample["limits"]["memory_mb"] == 777 and sample["portion"] == "dev"
    [entry] = sample["datasets"]
    stored = {r.dataset.name: Path(r.inputs.path).read_bytes()
              for r in DatasetFile.objects.filter(dataset__challenge=data_cast.challenge, portion="dev")}
    smallest = min(stored, key=lambda name: len(stored[name]))
    assert entry == {"name": smallest, "input": f"{smallest.lower()}.jsonl.gz",
                     "output": f"{smallest.lower()}.json", "format": "mrqa"}
    assert members[root + f"sample/input/{entry['input']}"] == stored[smallest]

    # The baseline bundle passes the platform's own upload check and runs on the sample.
    bundle = tmp_path / "bundle.zip"
    bundle.write_bytes(members[root + "baseline-bundle.zip"])
    bundle_inspect(str(bundle), max_uncompressed=settings.MAX_BUNDLE_UNCOMPRESSED_BYTES)
    with zipfile.ZipFile(bundle) as z:
        assert z.namelist() == ["run.py"]
    kit_dir = tmp_path / "kit"
    for name, content in members.items():
        target = kit_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    base = kit_dir / "demo-starting-kit"
    (base / "sample" / "output").mkdir()
    run = subprocess.run([sys.executable, "system/run.py"], cwd=base, capture_output=True, text=True, timeout=120,
                         env={"READERBOARD_INPUT": "sample/input", "READERBOARD_OUTPUT": "sample/output",
                              "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    predictions = json.loads((base / "sample" / "output" / entry["output"]).read_text())
    gold = DatasetFile.objects.get(dataset__name=smallest, portion="dev")
    assert sorted(predictions) == sorted(gold.qids)


def submitted_to_dev(challenge: Challenge, team: object, user: User, predictions: bytes,
                     capture: Any) -> Any:
    """The kit's predictions uploaded to the dev phase and scored, as the platform scores them."""
    with capture(execute=True):
        submission = submission_create_predictions(
            team=team, phase=challenge.phases.get(slug="dev"), user=user, upload=upload(predictions),  # type: ignore[arg-type]
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
        )
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


@pytest.mark.django_db
def test_the_mrc2018_kit_reproduces_the_platforms_dev_scores(
    tmp_path: Path, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    for name in ("organizer", "alice"):
        User.objects.create_user(name, password=f"{name}-pw")
    challenge = challenge_load(spec_path=REPO / "deploy" / "demo" / "mrc2018-demo.yaml")
    alice = User.objects.get(username="alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    client = Client()
    client.force_login(alice)
    listing = client.get(f"/api/v1/challenges/{challenge.slug}/data/").json()
    dev = [f for s in listing["sections"] for f in s["files"] if f["kind"] == "dev"]
    assert [f["filename"] for f in dev] == ["mrc2018-demo-search-dev.jsonl"]
    downloads = {f["filename"]: body(client.get(f["url"].removeprefix("http://testserver"))) for f in dev}
    kit = body(client.get(listing["starting_kit"]["url"].removeprefix("http://testserver")))
    base, results = run_kit_locally(kit, downloads, tmp_path)
    [local] = results
    assert "--alpha 1.0 --beta 1.0 --lic2019-guards" in local["line"]

    # Named as a platform run names it (challenges.selectors.dataset_run_key), not by the slug.
    predictions = (base / "out" / "dureader-search.json").read_bytes()
    submission = submitted_to_dev(challenge, team, alice, predictions, django_capture_on_commit_callbacks)
    scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__slug="search")}
    rouge_l = scores["rouge_l"]
    assert rouge_l is not None and 0 < rouge_l < 100
    assert scores["rouge_l"] == pytest.approx(local["result"]["ROUGE-L"], abs=1e-9)
    assert scores["bleu_4"] == pytest.approx(local["result"]["BLEU-4"], abs=1e-9)


ONE_DOCUMENT_KITS = {
    # suite: (gold file, where the kit's command prints the F1 the board shows)
    "quac": (DEMO_DATA / "quac" / "quac-dev.json", ("f1",)),
    "coqa": (DEMO_DATA / "coqa" / "coqa-dev.json", ("overall", "f1")),
    "squad2": (None, ("f1",)),
}


@pytest.mark.django_db
@pytest.mark.parametrize("suite", sorted(ONE_DOCUMENT_KITS))
def test_the_kits_of_the_one_document_suites_reproduce_the_platforms_dev_scores(
    suite: str, tmp_path: Path, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    """SQuAD 2.0, QuAC and CoQA challenges get a kit too: the baseline reads their inputs, and the
    README's commands (a conversion to the official format, then `python -m scoring`) give the
    F1 the platform gives the same predictions."""
    gold, path = ONE_DOCUMENT_KITS[suite]
    if gold is None:
        gold = tmp_path / "squad2-dev.json"
        gold.write_text(json.dumps(squad2_gold()), encoding="utf-8")
    spec = tmp_path / f"{suite}.yaml"
    spec.write_text(f"""
slug: kit-{suite}
title: Kit {suite}
metric_suite: {suite}
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z, closes_at: 2099-01-01T00:00:00Z}}
datasets:
  - {{slug: data, name: Data, split: II, files: {{dev: {gold}}}}}
""", encoding="utf-8")
    challenge = challenge_load(spec_path=spec)
    alice = User.objects.create_user("alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    client = Client()
    client.force_login(alice)
    listing = client.get(f"/api/v1/challenges/{challenge.slug}/data/").json()
    dev = [f for s in listing["sections"] for f in s["files"] if f["kind"] == "dev"]
    downloads = {f["filename"]: body(client.get(f["url"].removeprefix("http://testserver"))) for f in dev}
    kit = body(client.get(listing["starting_kit"]["url"].removeprefix("http://testserver")))
    base, results = run_kit_locally(kit, downloads, tmp_path / "kit")
    [local] = results
    predictions = (base / "out" / "data.json").read_bytes()
    assert json.loads(predictions), "the baseline answered nothing"
    submission = submitted_to_dev(challenge, team, alice, predictions, django_capture_on_commit_callbacks)
    platform_f1 = Score.objects.get(submission=submission, dataset__slug="data", metric="f1").value
    value = local["result"]
    for key in path:
        value = value[key]
    assert platform_f1 is not None and 0 < platform_f1 < 100
    assert platform_f1 == pytest.approx(value, abs=1e-9), (local["line"], local["result"])


@pytest.mark.django_db
def test_an_interactive_challenges_kit_states_the_protocol_and_carries_the_conversational_baseline(
    tmp_path: Path,
) -> None:
    """The QuAC demo answers turn by turn only: its kit says how, and its baseline answers a request."""
    User.objects.create_user("organizer")
    challenge = challenge_load(spec_path=REPO / "deploy" / "demo" / "quac-demo.yaml")
    path = starting_kit_build(challenge=challenge).path
    with zipfile.ZipFile(path) as kit:
        root = kit.namelist()[0].split("/", 1)[0]
        readme = kit.read(f"{root}/README.md").decode()
        converse = kit.read(f"{root}/system/converse.py")
    assert "Phases that answer turn by turn" in readme and "org.readerboard.protocol=interactive" in readme
    assert "gold history" in readme.lower()
    script = tmp_path / "converse.py"
    script.write_bytes(converse)
    request = {"dialog": 0, "turn": 0, "id": "q0", "question": "Where did Ann go?",
               "passage": "Ann went to the park. Bob stayed home.", "history": []}
    answer = subprocess.run([sys.executable, str(script)], input=json.dumps(request) + "\n", capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert json.loads(answer) == {"id": "q0", "answer": "Ann went to the park.", "yesno": "x", "followup": "y"}


@pytest.mark.django_db
def test_a_challenge_without_data_offers_no_starting_kit_and_says_why() -> None:
    """The MRQA 2019 archive (published results, no data file): no kit on the page, in the API or at
    its address, even for its organizer; a challenge with data keeps its kit (the same rule decides)."""
    organizer = User.objects.create_user("organizer")
    archive = challenge_load(spec_path=REPO / "deploy" / "demo" / "mrqa2019-archive.yaml")
    client = Client()
    client.force_login(organizer)
    page = client.get("/c/mrqa2019/data/").content.decode()
    assert 'id="starting-kit"' not in page and "starting-kit.zip" not in page
    assert page.count("This challenge has no data files, so it has no starting kit either.") == 1
    assert "No dataset has data for this phase" not in page  # one note, not one per phase besides
    assert client.get("/api/v1/challenges/mrqa2019/data/").json()["starting_kit"] is None
    assert client.get("/c/mrqa2019/data/starting-kit.zip").status_code == 404
    assert client.get("/api/v1/challenges/mrqa2019/data/starting-kit.zip").status_code == 404
    detail = client.get("/c/mrqa2019/").content.decode()
    assert ">Data</a>" in detail and "Data and starting kit" not in detail
    assert not archive.datasets.filter(files__isnull=False).exists()

    challenge_load(spec_path=REPO / "deploy" / "demo" / "quac-demo.yaml")
    listing = client.get("/api/v1/challenges/quac-demo/data/").json()
    assert listing["starting_kit"]["filename"] == "quac-demo-starting-kit.zip"
    assert "Data and starting kit" in client.get("/c/quac-demo/").content.decode()
