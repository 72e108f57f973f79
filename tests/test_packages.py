"""The distributions this repository ships, built and installed as a user would.

The scoring library (``deploy/packages/scoring``) is built into a wheel, installed with its
dependencies into a fresh virtual environment of the system's Python 3.11, and its command is run from
a folder outside the repository: the scores it prints equal the repository's own ``python -m scoring``.
Installing pulls numpy and rapidfuzz from the package index: hence ``slow``.

The participants' client (``deploy/packages/client``) is a wheel of its one package and nothing else: no
dependency, no file of the platform; tests/processes/test_client_installed.py runs it installed.
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

import scoring
from leaderboard import client

REPO = Path(__file__).resolve().parents[1]
SCORING_PACKAGE = REPO / "deploy" / "packages" / "scoring"
CLIENT_PACKAGE = REPO / "deploy" / "packages" / "client"

pytestmark = pytest.mark.slow

SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
    "context": "The Normans gave their name to Normandy, a region in France.",
    "qas": [{"id": "q1", "question": "Where?", "answers": [{"text": "Normandy", "answer_start": 27}]},
            {"id": "q2", "question": "Who?", "answers": [{"text": "The Normans", "answer_start": 0}]}]}]}]}
SQUAD_PREDICTIONS = {"q1": "Normandy, a region", "q2": "Normans"}
# MRC2018's ROUGE-L runs through rapidfuzz: a score from it proves the dependency came with the install.
MRC_REFERENCES = [{"question_id": 1, "question_type": "DESCRIPTION", "yesno_answers": [], "entity_answers": [[]],
                   "answers": ["the answer is a long sentence about rivers"], "source": "search"}]
MRC_PREDICTIONS = [{"question_id": 1, "question_type": "DESCRIPTION", "yesno_answers": [], "entity_answers": [[]],
                    "answers": ["a long sentence about rivers"]}]


def _wheel(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp), str(SCORING_PACKAGE)],
                   check=True, timeout=600, capture_output=True, text=True)
    (wheel,) = tmp.glob("readerboard_scoring-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wheel(tmp_path_factory.mktemp("wheel"))


def test_the_scoring_wheel_holds_the_package_its_version_and_its_types_only(wheel: Path) -> None:
    assert wheel.name.startswith(f"readerboard_scoring-{scoring.__version__}-py3-none-any")
    names = zipfile.ZipFile(wheel).namelist()
    assert "scoring/py.typed" in names and "scoring/cli.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")], names
    assert not [n for n in names if n.split("/")[0] not in ("scoring", wheel.name.split("-py3")[0] + ".dist-info")]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    required = sorted(re.findall(r"^Requires-Dist: ([a-z]+)", metadata, re.M))
    assert required == ["nltk", "numpy", "rapidfuzz"], metadata  # nltk as the cjk extra only
    assert "Requires-Dist: nltk>=3.8; extra == 'cjk'" in metadata


def test_installed_on_a_plain_python_its_command_scores_as_the_repository_does(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, timeout=900,
                   capture_output=True, text=True)
    work = tmp_path / "elsewhere"  # not the repository: the installed package, not the checkout
    work.mkdir()
    (work / "dev.json").write_text(json.dumps(SQUAD))
    (work / "pred.json").write_text(json.dumps(SQUAD_PREDICTIONS))
    (work / "ref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in MRC_REFERENCES))
    (work / "pred.jsonl").write_text("".join(json.dumps(p) + "\n" for p in MRC_PREDICTIONS))

    def installed(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "readerboard-score"), *args], cwd=work, capture_output=True,
                              text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})

    def repository(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "scoring", *args], cwd=REPO, capture_output=True, text=True,
                              timeout=120)

    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import scoring; print(scoring.__file__)"],
                           cwd=work, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), where
    usage = installed("--help")
    assert usage.returncode == 0 and usage.stdout.startswith("usage: readerboard-score"), usage
    for args in (("squad1", "dev.json", "pred.json"), ("mrc2018", "pred.jsonl", "ref.jsonl")):
        got = installed(*args)
        assert got.returncode == 0, got.stderr
        want = repository(*(str(work / a) if a.endswith(("json", "jsonl")) else a for a in args))
        assert json.loads(got.stdout) == json.loads(want.stdout), (got.stdout, want.stdout)
    # A bad file is one line that says so, not a traceback.
    bad = installed("squad1", "dev.json", "missing.json")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "missing.json" in bad.stderr, bad.stderr


def test_the_client_wheel_holds_its_package_and_its_command_and_needs_nothing(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(CLIENT_PACKAGE)],
                   check=True, timeout=600, capture_output=True, text=True)
    (wheel,) = tmp_path.glob("readerboard_client-*.whl")
    assert wheel.name.startswith(f"readerboard_client-{client.__version__}-py3-none-any")
    names = zipfile.ZipFile(wheel).namelist()
    sources = {p.name for p in (REPO / "leaderboard" / "client").glob("*.py")}
    assert {n.split("/", 1)[1] for n in names if n.startswith("readerboard_client/")} == sources
    assert not [n for n in names if n.split("/")[0] not in ("readerboard_client", wheel.name.split("-py3")[0] + ".dist-info")]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "Requires-Dist" not in metadata, metadata
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/entry_points.txt"))).decode()
    assert "readerboard = readerboard_client.cli:main" in entry_points


@pytest.fixture(scope="module")
def platform_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("platform-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(where), str(REPO)],
                   check=True, timeout=600, capture_output=True, text=True)
    (wheel,) = where.glob("readerboard-*.whl")
    return wheel


def _pins() -> list[str]:
    lines = (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return sorted(line.split("#")[0].strip().lower() for line in lines if line.split("#")[0].strip())


def test_the_platform_wheel_holds_its_packages_files_and_pinned_requirements(platform_wheel: Path) -> None:
    assert platform_wheel.name.startswith(f"readerboard-{scoring.__version__}-py3-none-any")
    zipped = zipfile.ZipFile(platform_wheel)
    names = zipped.namelist()
    for member in ("leaderboard/core/templates/base.html", "leaderboard/submissions/migrations/0001_initial.py",
                   "workers/compute.py", "scoring/py.typed"):
        assert member in names, member
    assert not [n for n in names if n.split("/")[0] in ("tests", "docs", "deploy", "var") or "__pycache__" in n]
    metadata = zipped.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    required = sorted(line.removeprefix("Requires-Dist: ").lower() for line in metadata.splitlines()
                      if line.startswith("Requires-Dist: "))
    # One list: the wheel's dependencies are requirements.txt's pins (test tools are requirements-dev.txt's).
    assert required == [pin.replace("_", "-") if "==" in pin else pin for pin in _pins()], (required, _pins())


def test_the_platform_installs_and_checks_outside_the_checkout(platform_wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(platform_wheel)], check=True, timeout=1200,
                   capture_output=True, text=True)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "leaderboard.settings.dev",
           "READERBOARD_VAR_DIR": str(tmp_path / "var")}
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "django", "check"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "no issues" in check.stdout, check.stdout + check.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import leaderboard; print(leaderboard.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), where
    # What a web process does to send a task: the broker's transport loads with the pins alone.
    transport = subprocess.run([str(venv / "bin" / "python"), "-c", "import kombu.transport.redis"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=120)
    assert transport.returncode == 0, transport.stderr
    score = subprocess.run([str(venv / "bin" / "readerboard-score"), "--help"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert score.returncode == 0 and "mrc2018" in score.stdout, score.stderr


def test_every_distribution_carries_the_one_version() -> None:
    """One scheme (calendar, YEAR.MONTH.N), one number: the client's copy (it may import nothing of the
    platform) equals the scoring library's, which the platform's and the scoring wheel read."""
    assert re.fullmatch(r"20\d\d\.(1[0-2]|[1-9])\.\d+", scoring.__version__), scoring.__version__
    assert client.__version__ == scoring.__version__
    for project in (REPO / "pyproject.toml", SCORING_PACKAGE / "pyproject.toml"):
        assert 'path = "' in project.read_text() and "scoring/__init__.py" in project.read_text(), project


@pytest.mark.django_db
def test_the_starting_kits_wheel_is_the_scoring_wheel(wheel: Path) -> None:
    """The kit builds its wheel itself (no build tool on the platform's hosts): the same files, the same
    dependencies and extras, the same command as ``pip wheel`` of deploy/packages/scoring."""
    from leaderboard.challenges.starting_kit import scoring_wheel  # noqa: PLC0415 - Django set up by the test

    name, data = scoring_wheel()
    assert name == wheel.name
    ours, theirs = zipfile.ZipFile(io.BytesIO(data)), zipfile.ZipFile(wheel)
    content = [n for n in theirs.namelist() if not n.endswith((".dist-info/RECORD", ".dist-info/WHEEL"))
               and ".dist-info/licenses/" not in n]
    assert sorted(n for n in ours.namelist() if not n.endswith((".dist-info/RECORD", ".dist-info/WHEEL"))) \
        == sorted(content)
    for member in content:
        if member.endswith("/METADATA"):
            def fields(text: str) -> list[str]:
                return sorted(line for line in text.splitlines()
                              if line.split(":")[0] in ("Name", "Version", "Requires-Python", "Requires-Dist",
                                                        "Provides-Extra"))
            assert fields(ours.read(member).decode()) == fields(theirs.read(member).decode())
        elif member.endswith("entry_points.txt"):
            assert ours.read(member).split() == theirs.read(member).split()
        else:
            assert ours.read(member) == theirs.read(member), member
