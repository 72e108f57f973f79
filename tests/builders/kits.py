"""A demo challenge's starting kit followed literally, as a new participant would (issue 25).

``kit_follow`` loads a spec of ``deploy/demo``, registers a team member, downloads the kit and the
Data page's files (dev files into ``dev/``, test inputs into ``test/``, as the README's tables say),
unpacks the kit into a fresh directory and runs, in order, every line of every ```` ```bash ````
block of its README, parsed from the README itself, with ``python`` a fresh virtual environment's
(the ``kit_venv`` fixture).  ``kit_checks`` holds what every kit must then give; the tests (``tests/kits/`` for
every demo, ``tests/sandbox/`` for the platform runs of the interactive bundles) add the scores.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Challenge
from leaderboard.sandbox.archives import bundle_inspect
from leaderboard.submissions.reload import challenge_load
from tests.builders.responses import body

REPO = Path(__file__).resolve().parents[2]
DEMOS = sorted((REPO / "deploy" / "demo").glob("*.yaml"))
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
HARNESS_DIALOGS = re.compile(r"--dialogs (\S+)")


def interactive_demo(spec: Path) -> bool:
    """Whether a demo spec has a phase that answers turn by turn (its kit's bundle needs the engine)."""
    return any(phase.get("protocol") for phase in yaml.safe_load(spec.read_text(encoding="utf-8"))["phases"])


def venv_create(where: Path) -> Path:
    """A fresh virtual environment of the system's Python 3.11, nothing installed."""
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


@dataclass
class FollowedKit:
    challenge: Challenge
    team: Team
    client: Client  # logged in as the team's member
    base: Path  # the unpacked kit
    readme: str
    listing: dict[str, Any]  # the Data page's API listing
    dev_files: list[str] = field(default_factory=list)  # the Data page's dev downloads, as saved
    local: dict[str, dict[str, Any]] = field(default_factory=dict)  # output file -> its scoring line's result
    harness: dict[str, dict[str, Any]] = field(default_factory=dict)  # --dialogs path -> what converse printed


def kit_follow(spec: Path, venv: Path, tmp_path: Path) -> FollowedKit | None:
    """The kit of ``spec``'s challenge followed literally; None where the challenge has no kit (no data)."""
    for name in ("organizer", "alice"):
        User.objects.get_or_create(username=name)
    challenge = challenge_load(spec_path=spec)
    alice = User.objects.get(username="alice")
    team = team_create(challenge=challenge, owner=alice, name="Alpha")
    client = Client()
    client.force_login(alice)
    listing = client.get(f"/api/v1/challenges/{challenge.slug}/data/").json()
    if not listing.get("starting_kit"):
        return None
    kit = body(client.get(listing["starting_kit"]["url"].removeprefix("http://testserver")))
    with zipfile.ZipFile(io.BytesIO(kit)) as archive:
        archive.extractall(tmp_path)
    [base] = [p for p in tmp_path.iterdir() if p.name.endswith("-starting-kit")]
    readme = (base / "README.md").read_text(encoding="utf-8")
    followed = FollowedKit(challenge=challenge, team=team, client=client, base=base, readme=readme, listing=listing)
    for section in listing["sections"]:
        for f in section["files"]:
            folder = {"dev": "dev", "test-inputs": "test"}.get(f["kind"])
            if folder and f["filename"] in readme:  # the README's tables name what to download, and where
                (base / folder).mkdir(exist_ok=True)
                (base / folder / f["filename"]).write_bytes(body(client.get(f["url"].removeprefix("http://testserver"))))
                if folder == "dev":
                    followed.dev_files.append(f"dev/{f['filename']}")

    commands = readme_commands(readme)
    assert commands, "the README shows no command to run"
    for line in commands:
        done = run_line(line, base, venv)
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, (line, done.stderr)
        if " -m scoring converse " in line:
            dialogs = HARNESS_DIALOGS.search(line)
            assert dialogs, line
            followed.harness[dialogs.group(1)] = json.loads(done.stdout)
        elif " -m scoring " in line:
            scored = re.search(r"out/(\S+?)(?:\.coqa)?\.jsonl?\b", line)
            assert scored, line
            followed.local[scored.group(1)] = json.loads(done.stdout)
    return followed


def kit_checks(followed: FollowedKit) -> None:
    """What every kit gives whatever its phases take: a bundle for each kind of system phase, which
    passes their upload check; an interactive kit's harness played on the practice and the dev
    dialogs to the end of every mode; no bundle in a kit for prediction files only."""
    base, readme = followed.base, followed.readme
    phases = list(followed.challenge.phases.all())
    for bundle_name, interactive in (("baseline-bundle.zip", False), ("converse-bundle.zip", True)):
        wanted = [p for p in phases if "code_bundle" in p.allowed_kinds and bool(p.protocol_modes) == interactive]
        assert (base / bundle_name).exists() == bool(wanted), (bundle_name, [p.slug for p in wanted])
        if wanted:
            inspected = bundle_inspect(str(base / bundle_name), max_uncompressed=settings.MAX_BUNDLE_UNCOMPRESSED_BYTES)
            assert inspected.protocol == ("interactive" if interactive else "batch"), bundle_name
            assert bundle_name in readme
    if any(p.protocol_modes for p in phases):
        assert followed.harness, "an interactive kit's README never plays its dialogs"
        # A dev phase in the turn-by-turn protocol: the README plays every one of its dev files.
        if any(p.protocol_modes and p.portion == "dev" for p in phases):
            assert followed.dev_files and set(followed.dev_files) <= set(followed.harness), followed.harness
        for played in followed.harness.values():
            modes = [m for m in played if m != "gold_own_drop"]
            assert modes and all(played[m]["verdict"] == "finished" for m in modes), played
            first = played[modes[0]]
            assert 0 < first["f1"] < 100 and "turn_1_f1" in first and "latency_p50_ms" in first, first
    if not any(p.protocol_modes or "code_bundle" in p.allowed_kinds for p in phases):
        assert "bundle.zip" not in readme and "code_bundle" not in readme, "a predictions-only kit offers a bundle"
