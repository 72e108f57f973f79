"""Hostile systems, each contained with a clear failure reason while the worker goes on to the next.

Every script in tests/sandbox/hostile/ attacks the sandbox one way and prints ``BLOCKED:`` for each
attempt that was stopped and ``BREACH:`` for any that succeeded; its docstring's ``EXPECT:`` line says
how the platform must end the run.  They all run through the real path (upload, queue, worker, engine)
with runc and with gVisor (runsc), then an honest system runs to show the worker is still healthy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container

from leaderboard.submissions.models import FailureCause, Status, Submission
from tests.builders.systems import (
    SYSTEMS,
    TEST_LIMITS,
    Platform,
    bundle,
    our_containers,
    script_bundle,
    still_running,
)

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = Path(__file__).resolve().parent / "hostile"
SETUID_IMAGE = "readerboard-test/hostile-setuid"
# gVisor traps every system call: snoop_answers, which opens each of the image's ~4,600 files, takes
# 0.5 s under runc and 6.5 s under runsc here, and CI machines have run it more than 2.5 times slower.
# Under runc, log_flood pushes 500 MiB through the log pipes: it once took over 10 s in CI's second
# (Postgres) pass, and timed out instead of failing on its empty answers.
TIME_LIMITS = {"runc": 20, "runsc": 40}

# What each expected outcome looks like to the team: the status and words of the reason.
REASONS = {
    "timeout": "timed out: still running after",
    # Only on the engine's evidence (its OOM flag, or the peak at the limit): a bare SIGKILL is the platform's.
    "oom": "ran out of memory",
    "output_too_large": ("to /output (the output limit); nothing of it is scored", "larger than the output limit"),
    "invalid_output": "invalid output",
    "output_missing": "output missing",
}


def expectation(script: Path, runtime: str) -> str:
    text = script.read_text()
    # gVisor ends some attacks differently (its kernel counts a fork bomb's memory, not just pids).
    match = re.search(rf"^EXPECT-{runtime.upper()}: (\S+)", text, re.M) or re.search(r"^EXPECT: (\S+)", text, re.M)
    assert match, f"{script.name} has no EXPECT line"
    return match.group(1)


def scripts() -> list[Path]:
    return sorted(p for p in HOSTILE.glob("*.py") if p.stem != "setuid_escalation")


def setuid_archive(engine: docker.DockerClient, tmp: Path) -> bytes:
    engine.images.build(path=str(HOSTILE), dockerfile="setuid/Dockerfile", tag=SETUID_IMAGE, pull=False, rm=True)
    path = tmp / "setuid.tar"
    with open(path, "wb") as fh:
        for chunk in engine.images.get(SETUID_IMAGE).save(named=True):
            fh.write(chunk)
    return path.read_bytes()


def check(submission: Submission, expected: str, limits: Mapping[str, float]) -> list[str]:
    """Problems with how a hostile run ended (empty when it was contained as expected)."""
    problems = []
    name = submission.description
    if "BREACH" in submission.log:
        breaches = [line for line in submission.log.splitlines() if "BREACH" in line]
        problems.append(f"{name}: the sandbox was breached: {breaches[:5]}")
    if expected == "finished":
        if submission.status != Status.FINISHED:
            problems.append(f"{name}: expected finished, got {submission.status}: {submission.failure_reason}")
        return problems
    if submission.status != Status.FAILED or submission.failure_cause != FailureCause.PARTICIPANT:
        problems.append(f"{name}: expected a failure of the submission, got {submission.status} "
                        f"({submission.failure_cause}): {submission.failure_reason}")
        return problems
    if expected.startswith("exit:"):
        wanted: tuple[str, ...] = (f"exited with code {expected[5:]}",)
    else:
        reason = REASONS[expected]
        wanted = reason if isinstance(reason, tuple) else (reason,)
    if not any(w in submission.failure_reason for w in wanted):
        problems.append(f"{name}: expected {expected} ({wanted}), got: {submission.failure_reason}\n"
                        f"  log tail: {submission.log[-800:]!r}")
    if len(submission.log) > limits["log_bytes"] + 200:
        problems.append(f"{name}: log of {len(submission.log)} characters, over the cap")
    return problems


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_hostile_systems_are_contained_with_clear_reasons(
    foreign_runs: Callable[[int], Container], platform: Platform, engine: docker.DockerClient, tmp_path: Path,
    runtime: str
) -> None:
    limits = {**TEST_LIMITS, "time_limit_s": TIME_LIMITS[runtime]}
    challenge = platform.cast.challenge
    challenge.system_settings = {"runtime": runtime, "limits": limits}
    challenge.save()
    submitted: list[tuple[int, str]] = []
    for script in scripts():
        pk = platform.submit(script_bundle(script))
        Submission.objects.filter(pk=pk).update(description=script.stem)
        submitted.append((pk, expectation(script, runtime)))
    foreign = foreign_runs(submitted[0][0])
    pk = platform.submit(setuid_archive(engine, tmp_path), kind="docker_image", name="setuid.tar")
    Submission.objects.filter(pk=pk).update(description="setuid_escalation")
    submitted.append((pk, expectation(HOSTILE / "setuid_escalation.py", runtime)))
    # After all of them, an honest system: the worker must still run it normally.
    honest = platform.submit(bundle(("run.py", (SYSTEMS / "trivial" / "run.py").read_text())))

    problems: list[str] = []
    table = []
    for pk, expected in submitted:
        submission = platform.wait_final(pk, timeout=180)
        table.append(f"{submission.description:20s} {expected:17s} {submission.status:9s} "
                     f"{submission.run_seconds or 0:5.1f}s  {submission.failure_reason[:90]}")
        problems += check(submission, expected, limits)
    finished = platform.wait_final(honest, timeout=120)
    print(f"\n[{runtime}]\n" + "\n".join(table))
    assert finished.status == Status.FINISHED, finished.failure_reason
    assert finished.runtime == runtime
    assert not problems, "\n".join(problems)
    assert not our_containers(engine, "readerboard.submission")
    # Another platform's run of the same submission id on the engine was left alone, though the
    # test's old filter (every container labelled with a submission) would have counted it.
    assert still_running(foreign)
    assert foreign.id in [c.id for c in engine.containers.list(all=True, filters={"label": "readerboard.submission"})]
