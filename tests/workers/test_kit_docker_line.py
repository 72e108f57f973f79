"""The starting kit's ``docker run`` line and Dockerfile are the platform's run, not a copy that drifts.

``starting_kit.docker_run_args`` is written for people (the leaderboard cannot import the compute
worker); this holds it to ``workers.runner._create_kwargs``, flag by flag, for a batch and an
interactive run, and the kit's ``docker/Dockerfile`` to the file the platform builds its base image from.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from leaderboard.challenges.starting_kit import BASE_DOCKERFILE, docker_run_args, starting_kit_build
from leaderboard.sandbox.contract import Limits
from leaderboard.submissions.reload import challenge_load
from workers import runner

REPO = Path(__file__).resolve().parents[2]
LIMITS = Limits(cpus=1.5, memory_mb=300, pids=70, nofile=900, tmp_mb=32, shm_mb=8, time_limit_s=99)


def _flags_of(kwargs: dict[str, Any], interactive: bool) -> dict[str, Any]:
    """The container the runner creates, in ``docker run``'s terms."""
    ulimits = sorted(f"{u['Name']}={u['Soft']}:{u['Hard']}" for u in kwargs["ulimits"])
    [tmp] = kwargs["tmpfs"].items()
    volumes = sorted(f"{v['bind']}:{v['mode']}" for v in kwargs["volumes"].values())
    env = dict(kwargs["environment"])
    if interactive:
        env.update({"READERBOARD_PROTOCOL": "interactive", "READERBOARD_MODE": None})
    return {"user": kwargs["user"], "network": kwargs["network_mode"], "read_only": kwargs["read_only"],
            "tmpfs": f"{tmp[0]}:{tmp[1]}", "shm": kwargs["shm_size"], "memory": kwargs["mem_limit"],
            "swap": kwargs["memswap_limit"], "cpus": kwargs["nano_cpus"] / 1e9, "pids": kwargs["pids_limit"],
            "ulimits": ulimits, "volumes": volumes, "workdir": kwargs["working_dir"], "env": env,
            "cap_drop": kwargs["cap_drop"], "security": kwargs["security_opt"]}


def _flags_of_line(args: list[str]) -> dict[str, Any]:
    pairs: dict[str, list[str]] = {}
    flags: set[str] = set()
    i = 2
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("--rm", "-i", "--read-only"):
            flags.add(args[i])
            i += 1
            continue
        pairs.setdefault(args[i], []).append(args[i + 1])
        i += 2
    env: dict[str, str | None] = {}
    for item in pairs["-e"]:
        key, sep, value = item.partition("=")
        env[key] = value if sep else None
    return {"user": pairs["--user"][0], "network": pairs["--network"][0], "read_only": "--read-only" in flags,
            "tmpfs": pairs["--tmpfs"][0], "shm": pairs["--shm-size"][0], "memory": pairs["--memory"][0],
            "swap": pairs["--memory-swap"][0], "cpus": float(pairs["--cpus"][0]), "pids": int(pairs["--pids-limit"][0]),
            "ulimits": sorted(pairs["--ulimit"]), "volumes": sorted(v.split(":", 1)[1] for v in pairs["-v"]),
            "workdir": pairs["-w"][0], "env": env, "cap_drop": pairs["--cap-drop"],
            "security": pairs["--security-opt"], "image_and_command": args[i:]}


@pytest.mark.parametrize("interactive", [False, True])
def test_the_kits_docker_run_line_is_the_runners_container(interactive: bool, tmp_path: Path) -> None:
    spec = runner.RunSpec(image="readerboard/python:bookworm", input_dir=tmp_path / "in", output_dir=tmp_path / "out",
                          limits=LIMITS, command=["python3", "/system/run.py"], system_dir=tmp_path / "system")
    expected = _flags_of(runner._create_kwargs(spec), interactive)
    line = docker_run_args(LIMITS, base_image="readerboard/python:bookworm", interactive=interactive)
    got = _flags_of_line(line)
    assert got.pop("image_and_command") == ["readerboard/python:bookworm", "python3", "/system/run.py"]
    assert got == expected
    assert ("-i" in line) == interactive


def test_the_kits_dockerfile_is_the_platforms_base_image_file(db: None) -> None:
    User.objects.create_user("organizer")
    challenge = challenge_load(spec_path=REPO / "deploy" / "demo" / "quac-demo.yaml")
    kit = starting_kit_build(challenge=challenge)
    with zipfile.ZipFile(io.BytesIO(kit.path.read_bytes())) as archive:
        shipped = archive.read("quac-demo-starting-kit/docker/Dockerfile")
    assert shipped == BASE_DOCKERFILE.read_bytes() == (REPO / "deploy" / "images" / "base" / "Dockerfile").read_bytes()
    assert b"FROM debian:bookworm-slim" in shipped
