"""An engine shared with another platform (the demo, a compute host, another test run): this one's
clean-up touches only what its own instance made (``workers.runner.LABEL_INSTANCE``).  The platform
tests show it for runs (test_faults.py, test_hostile.py: a foreign run of the same submission id
survives them); these show it for the worker's clean-up paths one by one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import docker

from leaderboard.sandbox.contract import DEFAULT_BASE_IMAGE
from tests.builders.systems import foreign_run, foreign_runs_remove, instance, still_running
from workers import runner
from workers.control_runs import local_config
from workers.run_system import ComputeConfig, leftovers_remove


def test_a_dead_workers_run_of_another_instance_is_left_to_it(engine: docker.DockerClient, tmp_path: Path) -> None:
    """A container of a dead worker of this host is removed by a worker of its own instance only."""
    try:
        foreign = foreign_run(engine, 1, dead_worker=True)
        # What else it removes (a dead worker of this test run, found by its owner lock) is its own.
        mine = leftovers_remove(ComputeConfig(work_dir=tmp_path, run_image_repository=instance()), starting=True)
        assert not [entry for entry in mine if foreign.name in entry], mine
        assert still_running(foreign)
        # The probe: without the instance in the filter, as the other platform's worker sees it, it goes.
        other = foreign.labels[runner.LABEL_INSTANCE]
        removed = leftovers_remove(ComputeConfig(work_dir=tmp_path, run_image_repository=other), starting=True)
        assert f"container {foreign.name} of {foreign.labels['readerboard.worker']}" in removed, removed
    finally:
        foreign_runs_remove(engine)


def test_a_hidden_run_removes_only_its_own_instances_leftover_copies(
    engine: docker.DockerClient, tmp_path: Path, copy_made_here: None
) -> None:
    """A per-run hidden copy is named and labelled by its instance; a hidden run removes the copies
    its own instance's dead workers left, never another platform's (which may be in use)."""
    team = engine.images.get("readerboard/baseline:latest")
    policy = dataclasses.replace(local_config().hidden, lock_path=tmp_path / "host.lock")
    sandbox = runner.sandbox_choose(hidden=True, challenge_runtime="", worker_runtime="", policy=policy)
    other = f"{instance()}-other"
    ours = runner.hidden_copy(engine, team.id, instance=instance(), per_run=True)
    theirs = runner.hidden_copy(engine, team.id, instance=other, per_run=True)
    try:
        assert ours != theirs
        assert engine.images.get(theirs).labels[runner.HIDDEN_COPY_PER_RUN_LABEL] == other
        with runner.sandboxed(engine, DEFAULT_BASE_IMAGE, sandbox, policy, keep_copy=True, instance=instance()):
            assert not runner.image_exists(engine, ours)
            assert runner.image_exists(engine, theirs)
        # The probe: the old filter (every per-run copy on the engine) would have removed it.
        assert theirs in [tag for image in engine.images.list(filters={"label": runner.HIDDEN_COPY_PER_RUN_LABEL})
                          for tag in image.tags]
    finally:
        runner.image_remove(engine, ours)
        runner.image_remove(engine, theirs)
