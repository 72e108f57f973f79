"""Issue 22, section 2: a run on hidden data cannot pass bits to its team's next dev run through the
page cache of the image's files (or any host state the worker isolates).

The probe (``channels/page_cache_probe.py``) is the attack as it was made: a dev run evicts the
probe's files of the base image; a test-phase run evicts them again and reads those whose bit (from
its hidden input) is 1; the team's next dev run times a first-byte read of each and prints the bits
in its log.  The runs are made by ``runner.run_container`` with the sandbox the worker's own
``sandbox_choose`` / ``sandboxed`` give a run (as ``workers.run_system._run`` does): under the
platform's settings it decodes at chance; with the protection switched off, nearly every bit.
"""

from __future__ import annotations

import dataclasses
import io
import secrets
from pathlib import Path

import docker
import docker.errors
import pytest

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE, HiddenRuns, Limits
from workers import runner
from workers.control_runs import local_config

PROBE = Path(__file__).resolve().parent / "channels" / "page_cache_probe.py"
LIMITS = Limits(cpus=1, memory_mb=256, pids=400, time_limit_s=60, log_bytes=64 * 1024)
BITS = 256


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)  # the sandbox's user reads it
    return path


def _run(engine: docker.DockerClient, tmp_path: Path, name: str, *, hidden: bool, policy: HiddenRuns,
         args: list[str], secret: str = "", worker_runtime: str | None = None,
         command: list[str] | None = None) -> str:
    """One run of the probe as the worker runs a bundle on the base image: the sandbox from
    ``sandbox_choose`` for the run's data, entered by ``sandboxed``; its log."""
    base = tmp_path / name
    system_dir, input_dir, output_dir = _folder(base / "system"), _folder(base / "input"), _folder(base / "output")
    (system_dir / "probe.py").write_text(PROBE.read_text())
    (input_dir / "bits.txt").write_text(secret)
    for f in (system_dir / "probe.py", input_dir / "bits.txt"):
        f.chmod(0o644)
    output_dir.chmod(0o777)
    config = local_config()
    worker = config.runtime if worker_runtime is None else worker_runtime
    sandbox = runner.sandbox_choose(hidden=hidden, challenge_runtime="", worker_runtime=worker, policy=policy)
    with runner.sandboxed(engine, DEFAULT_BASE_IMAGE, sandbox, policy, keep_copy=True,
                          instance=config.instance) as image:
        spec = runner.RunSpec(image=image, command=command or ["python3", "-S", "-I", "/system/probe.py", *args],
                              input_dir=input_dir, output_dir=output_dir, system_dir=system_dir, limits=LIMITS,
                              runtime=sandbox.runtime, labels={"readerboard.test": f"page-cache-{name}"})
        outcome, aborted = runner.run_container(engine, spec, output_capped=False, heartbeat=lambda: True,
                                                heartbeat_every=60)
    assert not aborted and outcome.exit_code == 0, outcome.logs
    return outcome.logs


def _decoded(engine: docker.DockerClient, tmp_path: Path, policy: HiddenRuns,
             worker_runtime: str | None = None) -> tuple[int, str]:
    """Bits of a hidden secret the team's dev run decodes, and the dev run's calibration line."""
    order = ["1"] * (BITS // 2) + ["0"] * (BITS // 2)  # balanced: chance is one half
    secrets.SystemRandom().shuffle(order)
    secret = "".join(order)
    _run(engine, tmp_path, "dev-evict", hidden=False, policy=policy, args=["evict"], worker_runtime=worker_runtime)
    _run(engine, tmp_path, "test-set", hidden=True, policy=policy, args=["set", "/input/bits.txt"], secret=secret,
         worker_runtime=worker_runtime)
    log = _run(engine, tmp_path, "dev-read", hidden=False, policy=policy, args=["read"], worker_runtime=worker_runtime)
    [bits] = [line.split()[1] for line in log.splitlines() if line.startswith("BITS ")]
    calibration = next(line for line in log.splitlines() if line.startswith("CALIBRATION"))
    assert len(bits) == BITS
    return sum(a == b for a, b in zip(secret, bits, strict=True)), calibration


@pytest.mark.parametrize("worker_runtime", [None, "runc"], ids=["platform-settings", "dev-runs-under-runc"])
def test_a_hidden_run_cannot_signal_its_teams_next_dev_run_through_the_page_cache(
    engine: docker.DockerClient, tmp_path: Path, copy_made_here: None, worker_runtime: str | None
) -> None:
    """Under the platform's settings; and with the worker's runtime set to runc, where the dev run
    can time the host's cache (it cannot under gVisor): the hidden run's own image copy is what stops it."""
    policy = dataclasses.replace(local_config().hidden, lock_path=tmp_path / "host.lock")
    assert policy.isolate, "the platform's settings switch the protection off"
    right, calibration = _decoded(engine, tmp_path, policy, worker_runtime)
    print(f"\nprotected ({runner.sandbox_choose(hidden=True, challenge_runtime='', worker_runtime='', policy=policy)})"
          f": {right} of {BITS} bits; dev run {calibration}")
    assert right <= 0.6 * BITS, f"{right} of {BITS} bits crossed from the hidden run to the dev run ({calibration})"


def test_without_the_protection_the_same_probe_carries_the_bits(
    engine: docker.DockerClient, tmp_path: Path
) -> None:
    """The probe works: hidden runs on the shared image under runc carry nearly every bit."""
    policy = HiddenRuns(runtime="", isolate=False, lock_path=tmp_path / "host.lock")
    right, calibration = _decoded(engine, tmp_path, policy)
    print(f"\nunprotected: {right} of {BITS} bits; dev run {calibration}")
    assert right >= 0.9 * BITS, f"only {right} of {BITS} bits decoded without the protection ({calibration})"


COUNTER = "import re; print('PROCESSES', re.search(r'^processes (\\d+)', open('/proc/stat').read(), re.M).group(1))"
FORKS = "import os\nfor _ in range(300):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"


def _processes(engine: docker.DockerClient, tmp_path: Path, name: str, policy: HiddenRuns,
               worker_runtime: str | None) -> int:
    log = _run(engine, tmp_path, name, hidden=False, policy=policy, args=[], worker_runtime=worker_runtime,
               command=["python3", "-c", COUNTER])
    return int(next(line.split()[1] for line in log.splitlines() if line.startswith("PROCESSES ")))


@pytest.mark.parametrize("protected", [True, False], ids=["platform-settings", "protection-off"])
def test_a_later_dev_run_reads_no_host_counter_a_hidden_run_moved(
    engine: docker.DockerClient, tmp_path: Path, copy_made_here: None, protected: bool
) -> None:
    """/proc/stat's ``processes`` counts every fork on the host since boot.  Under the platform's
    settings the dev run reads its sandbox's own counter, which no other run moves; with the
    protection off (every run under runc) it reads the hidden run's 300 forks there."""
    policy = dataclasses.replace(local_config().hidden, lock_path=tmp_path / "host.lock")
    if not protected:
        policy = HiddenRuns(runtime="", isolate=False, lock_path=tmp_path / "host.lock")
    worker_runtime = None if protected else ""
    before = _processes(engine, tmp_path, "dev-before", policy, worker_runtime)
    _run(engine, tmp_path, "test-forks", hidden=True, policy=policy, args=[], command=["python3", "-c", FORKS],
         worker_runtime=worker_runtime)
    after = _processes(engine, tmp_path, "dev-after", policy, worker_runtime)
    print(f"\n{'protected' if protected else 'unprotected'}: processes {before} -> {after}")
    if protected:
        assert after == before
    else:
        assert after - before >= 300


def test_a_team_images_hidden_copy_shares_no_layer_and_lives_for_its_run_only(
    engine: docker.DockerClient, tmp_path: Path, copy_made_here: None
) -> None:
    """A team's image (here the baseline image, as a team would submit it) is copied for each hidden
    run: the copy has no layer of the image (so no inode), keeps its command, and is removed after the
    run; a copy a dead worker left is removed by the next hidden run on the host."""
    team = engine.images.get("readerboard/baseline:latest")
    policy = dataclasses.replace(local_config().hidden, lock_path=tmp_path / "host.lock")
    sandbox = runner.sandbox_choose(hidden=True, challenge_runtime="", worker_runtime="", policy=policy)
    instance = local_config().instance
    with runner.sandboxed(engine, team.id, sandbox, policy, keep_copy=False, instance=instance) as image:
        copy = engine.api.inspect_image(image)
        assert image == runner.hidden_copy_reference(team.id, instance=instance)
        assert not set(copy["RootFS"]["Layers"]) & set(team.attrs["RootFS"]["Layers"])
        assert copy["Config"]["Entrypoint"] == team.attrs["Config"]["Entrypoint"]
    assert not runner.image_exists(engine, image)
    left = runner.hidden_copy(engine, team.id, instance=instance, per_run=True)  # as a worker killed in its run leaves it
    with runner.sandboxed(engine, DEFAULT_BASE_IMAGE, sandbox, policy, keep_copy=True, instance=instance):
        assert not runner.image_exists(engine, left)


def test_a_hidden_copy_keeps_the_images_configuration_as_written(engine: docker.DockerClient) -> None:
    """The copy's configuration goes through the engine's Dockerfile parser: a ``$`` or a backslash in
    an ENV value, an odd WORKDIR and a declared VOLUME (where code may write under the read-only root)
    come out as the image has them, so a test run sees what a dev run sees."""
    tag = f"readerboard-test/odd-config:{secrets.token_hex(4)}"
    dockerfile = (f"FROM {DEFAULT_BASE_IMAGE}\n"
                  "ENV ODD='a$HOME\\b \"q\"' PLAIN=x\n"
                  "WORKDIR /srv/my work\n"
                  "VOLUME /scratch /cache\n")
    image, _ = engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, pull=False, rm=True,
                                   labels={"readerboard.test": "hidden-copy-config"})
    copy = None
    try:
        copy = runner.hidden_copy(engine, image.id, instance=local_config().instance, per_run=True)
        got, want = engine.api.inspect_image(copy)["Config"], image.attrs["Config"]
        assert dict(e.partition("=")[::2] for e in got["Env"])["ODD"] == 'a$HOME\\b "q"'
        assert sorted(got["Env"]) == sorted(want["Env"])
        assert (got["WorkingDir"], got["Cmd"]) == (want["WorkingDir"], want["Cmd"]) == ("/srv/my work", ["python3"])
        assert set(got["Volumes"] or {}) == {"/scratch", "/cache"}
    finally:
        if copy is not None:
            runner.image_remove(engine, copy)
        engine.images.remove(tag, force=True)
