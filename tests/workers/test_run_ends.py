"""How a run ended, from evidence (``run_end_classify``): a kill is the team's only when the engine
says out of memory or the runner killed it at a limit; any other sent signal is the platform's."""

from __future__ import annotations

import itertools

import pytest

from leaderboard.sandbox.contract import (
    RunEnd,
    RunnerKill,
    outcome_as_json,
    outcome_end,
    outcome_from_json,
    run_end_classify,
)
from tests.builders.runs import outcome

EXIT_CODES = [None, -1, 0, 1, 3, 127, 129, 130, 131, 134, 136, 137, 139, 143, 255]
KILLS = [None, *RunnerKill]


def expected(kill: RunnerKill | None, oom: bool, code: int | None, not_started: bool, too_large: bool) -> RunEnd:
    """The rule written out plainly, case by case, to check the function against."""
    if not_started:
        return RunEnd.NOT_STARTED
    if kill is not None:
        return {RunnerKill.ABORT: RunEnd.ABORTED, RunnerKill.TIME_LIMIT: RunEnd.TIMED_OUT,
                RunnerKill.OUTPUT_LIMIT: RunEnd.OUTPUT_CAPPED}[kill]
    if too_large:
        return RunEnd.OUTPUT_CAPPED
    if oom:
        return RunEnd.OUT_OF_MEMORY
    if code is None or code < 0:
        return RunEnd.NO_STATUS
    if code in (129, 130, 131, 137, 143):  # SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM: sent from outside
        return RunEnd.KILLED_OUTSIDE
    return RunEnd.EXITED  # its own exit, or its own fault (SIGABRT 134, SIGFPE 136, SIGSEGV 139)


@pytest.mark.parametrize(("kill", "oom", "code", "not_started", "too_large"),
                         list(itertools.product(KILLS, [False, True], EXIT_CODES, [False, True], [False, True])))
def test_every_combination_ends_as_the_rule_says(kill: RunnerKill | None, oom: bool, code: int | None,
                                                 not_started: bool, too_large: bool) -> None:
    got = run_end_classify(runner_killed=kill, oom_killed=oom, exit_code=code, not_started=not_started,
                           output_too_large=too_large)
    assert got is expected(kill, oom, code, not_started, too_large)


def test_a_bare_sigkill_is_killed_outside_not_the_teams() -> None:
    assert run_end_classify(runner_killed=None, oom_killed=False, exit_code=137) is RunEnd.KILLED_OUTSIDE
    # The case: 5 MiB peak under a 1024 MiB limit is no evidence of memory.
    assert run_end_classify(runner_killed=None, oom_killed=False, exit_code=137, peak_memory_bytes=5 * 2**20,
                            memory_limit_mb=1024) is RunEnd.KILLED_OUTSIDE


@pytest.mark.parametrize(("peak_mib", "code", "end"), [
    (1000, 137, RunEnd.OUT_OF_MEMORY),  # at the limit: the kernel's OOM killer, unflagged
    (973, 137, RunEnd.OUT_OF_MEMORY),  # 95 % of 1024 MiB is 972.8 MiB: 973 counts, 972 does not
    (972, 137, RunEnd.KILLED_OUTSIDE),
    (1024, 143, RunEnd.KILLED_OUTSIDE),  # a SIGTERM is no OOM kill, whatever the memory
    (1024, 1, RunEnd.EXITED),
])
def test_peak_memory_at_the_limit_is_evidence_of_an_oom_kill(peak_mib: int, code: int, end: RunEnd) -> None:
    assert run_end_classify(runner_killed=None, oom_killed=False, exit_code=code, peak_memory_bytes=peak_mib * 2**20,
                            memory_limit_mb=1024) is end


def test_the_end_travels_with_the_outcome_and_an_older_workers_is_classified_alike() -> None:
    sent = outcome(exit_code=137, end=RunEnd.KILLED_OUTSIDE)
    raw = outcome_as_json(sent)
    assert raw["end"] == "killed_outside"
    assert outcome_from_json(raw, outputs={}, slugs={}).end is RunEnd.KILLED_OUTSIDE
    older = {k: v for k, v in raw.items() if k != "end"}
    parsed = outcome_from_json(older, outputs={}, slugs={})
    assert parsed.end is None and outcome_end(parsed) is RunEnd.KILLED_OUTSIDE
    assert outcome_end(outcome(exit_code=None, timed_out=True)) is RunEnd.TIMED_OUT
    assert outcome_end(outcome(exit_code=137, oom_killed=True)) is RunEnd.OUT_OF_MEMORY
    with pytest.raises(ValueError, match="'end'"):
        outcome_from_json({**raw, "end": "vanished"}, outputs={}, slugs={})
