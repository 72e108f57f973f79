"""Every demo challenge's starting kit, followed literally (issue 25): a participant's journey, as a test.

For each spec of ``deploy/demo``, a team member downloads the kit and the Data page's files (dev files
into ``dev/``, test inputs into ``test/``, as the README's tables say), unpacks the kit into a fresh
directory and runs, in order, every line of every ```` ```bash ```` block of its README, parsed from the
README itself, with ``python`` a fresh virtual environment's (its ``pip install -r requirements.txt``
from PyPI included: hence ``slow``).  Then the kit's own submission is made as the README says:

* prediction files (``dev-predictions.zip``) go through the platform's intake and are scored there,
  and every dataset's score equals what the README's ``python -m scoring`` line printed locally;
* a system bundle (``baseline-bundle.zip``, ``converse-bundle.zip``) passes the upload check of the
  phases the README names for it, and the interactive one, played by the local harness
  (``python -m scoring converse``), finishes every mode.

Running a bundle in the real container is ``tests/sandbox/test_starting_kit_bundle.py``'s (batch).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.accounts.services import team_create
from leaderboard.sandbox.archives import bundle_inspect
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from leaderboard.submissions.reload import challenge_load
from tests.builders.data_page import body

REPO = Path(__file__).resolve().parents[2]
DEMOS = sorted((REPO / "deploy" / "demo").glob("*.yaml"))
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
# Where each suite's local command prints the figure the platform stores under a metric.
LOCAL_METRICS = {"mrqa": {"f1": ("f1",), "em": ("exact_match",)},
                 "mrc2018": {"rouge_l": ("ROUGE-L",), "bleu_4": ("BLEU-4",)},
                 "quac": {"f1": ("f1",)}, "coqa": {"f1": ("overall", "f1")}}

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment of the system's Python 3.11, nothing installed."""
    where = tmp_path_factory.mktemp("venv") / "kit-venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where


def readme_commands(readme: str) -> list[str]:
    """The lines of the README's bash blocks, in order (each block's lines are one command each)."""
    return [line for block in BASH_BLOCK.findall(readme) for line in block.splitlines() if line.strip()]


def run_line(line: str, cwd: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(["bash", "-eo", "pipefail", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def dig(result: dict[str, object], path: tuple[str, ...]) -> object:
    value: object = result
    for key in path:
        assert isinstance(value, dict), (result, path)
        value = value[key]
    return value


@pytest.mark.parametrize("spec", DEMOS, ids=[p.stem for p in DEMOS])
def test_the_kit_followed_literally_works(spec: Path, venv: Path, tmp_path: Path,
                                          django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    for name in ("organizer", "alice"):
        User.objects.get_or_create(username=name)
    challenge = challenge_load(spec_path=spec)
    alice = User.objects.get(username="alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    client = Client()
    client.force_login(alice)
    listing = client.get(f"/api/v1/challenges/{challenge.slug}/data/").json()
    if not listing.get("starting_kit") or not any(s["files"] for s in listing["sections"]):
        # The archive of published results: a kit there is the archive board's item of issue 25.
        pytest.skip(f"{challenge.slug} has no data to follow a kit on")
    kit = body(client.get(listing["starting_kit"]["url"].removeprefix("http://testserver")))
    with zipfile.ZipFile(io.BytesIO(kit)) as archive:
        archive.extractall(tmp_path)
    [base] = [p for p in tmp_path.iterdir() if p.name.endswith("-starting-kit")]
    readme = (base / "README.md").read_text(encoding="utf-8")
    for section in listing["sections"]:
        for f in section["files"]:
            folder = {"dev": "dev", "test-inputs": "test"}.get(f["kind"])
            if folder and f["filename"] in readme:  # the README's tables name what to download, and where
                (base / folder).mkdir(exist_ok=True)
                (base / folder / f["filename"]).write_bytes(body(client.get(f["url"].removeprefix("http://testserver"))))

    local: dict[str, dict[str, object]] = {}  # output file -> what its scoring line printed
    harness: list[dict[str, object]] = []
    commands = readme_commands(readme)
    assert commands, "the README shows no command to run"
    for line in commands:
        done = run_line(line, base, venv)
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, (line, done.stderr)
        if " -m scoring converse " in line:
            harness.append(json.loads(done.stdout))
        elif " -m scoring " in line:
            scored = re.search(r"out/(\S+?)(?:\.coqa)?\.jsonl?\b", line)
            assert scored, line
            local[scored.group(1)] = json.loads(done.stdout)

    suite = challenge.metric_suite
    dev_zip = base / "dev-predictions.zip"
    if local:
        assert dev_zip.exists(), "the README scores dev predictions but never zips them for the dev phase"
    if dev_zip.exists():
        with django_capture_on_commit_callbacks(execute=True):
            submission = submission_create_predictions(
                team=team, phase=challenge.phases.get(slug=json.loads((base / "dev" / "manifest.json").read_text())["phase"]),
                user=alice, upload=SimpleUploadedFile("dev-predictions.zip", dev_zip.read_bytes()),
                limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
            )
        submission.refresh_from_db()
        assert submission.status == Status.FINISHED, submission.failure_reason
        manifest = json.loads((base / "dev" / "manifest.json").read_text())
        for entry in manifest["datasets"]:
            key = entry["output"].removesuffix(".json")
            scores = {s.metric: s.value for s in Score.objects.filter(submission=submission, dataset__name=entry["name"])}
            for metric, path in LOCAL_METRICS[suite].items():
                assert scores[metric] == pytest.approx(dig(local[key], path), abs=1e-9), (key, metric)
    if (base / "test-predictions.zip").exists():
        # The test phase's upload is checked whole (every dataset, every id) before it is stored.
        with django_capture_on_commit_callbacks(execute=False):
            taken = submission_create_predictions(
                team=team, phase=challenge.phases.get(slug=json.loads((base / "test" / "manifest.json").read_text())["phase"]),
                user=alice, upload=SimpleUploadedFile("test-predictions.zip", (base / "test-predictions.zip").read_bytes()),
                limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
            )
        assert taken.pk

    phases = list(challenge.phases.all())
    for bundle_name, interactive in (("baseline-bundle.zip", False), ("converse-bundle.zip", True)):
        wanted = [p for p in phases if "code_bundle" in p.allowed_kinds and bool(p.protocol_modes) == interactive]
        assert (base / bundle_name).exists() == bool(wanted), (bundle_name, [p.slug for p in wanted])
        if wanted:
            inspected = bundle_inspect(str(base / bundle_name), max_uncompressed=settings.MAX_BUNDLE_UNCOMPRESSED_BYTES)
            assert inspected.protocol == ("interactive" if interactive else "batch"), bundle_name
            assert bundle_name in readme
    if any(p.protocol_modes for p in phases):
        assert harness, "an interactive kit's README never plays its dialogs"
        for played in harness:
            modes = [m for m in played if m != "gold_own_drop"]
            assert modes and all(played[m]["verdict"] == "finished" for m in modes), played  # type: ignore[index]
            first = played[modes[0]]
            assert 0 < first["f1"] < 100 and "turn_1_f1" in first and "latency_p50_ms" in first, first  # type: ignore[index,operator]
    if not any(p.protocol_modes or "code_bundle" in p.allowed_kinds for p in phases):
        assert "bundle.zip" not in readme and "code_bundle" not in readme, "a predictions-only kit offers a bundle"
