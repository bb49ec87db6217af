"""Whose fault a child's end is: a hang or a death in the check's own steps is the environment's, not the solution's."""

import signal

import pytest

from kernel_opt.run.events import PhaseEvent
from kernel_opt.run.runner import ChildOutcome

HUGE = {"batch_size": 32768, "dim": 1}


def ended_in(phase: str, **outcome) -> dict:
    events = [PhaseEvent("setup", case=0, dims=HUGE, seed=0), PhaseEvent(phase, case=0, dims=HUGE, seed=0)]
    return ChildOutcome(events=events, timeout_s=300.0, stderr_tail="Killed", **outcome).failure()


def test_a_check_killed_while_computing_the_float64_truth_is_the_environment_s():
    """A CPU-only agent's first evaluate of KernelBench level1 100_HingeLoss: the interpreter could not shrink the
    problem (a tuple-sized input), the float64 truth of 1G elements ran the host out of memory, and the report said
    SOLUTION ERROR (crash)."""
    failure = ended_in("truth", returncode=-signal.SIGKILL)
    assert (failure["kind"], failure["exit_code"]) == ("harness_crash", 4)
    assert failure["message"].startswith("the check's own step died (SIGKILL, killed (often the host ran out of "
                                         "memory)) while computing the reference's float64 truth")
    assert "not the solution's fault" in failure["message"] and failure["hint"].endswith("Killed")


@pytest.mark.parametrize("phase", ["reference", "compare"])
def test_a_hang_in_the_reference_or_the_comparison_is_the_environment_s(phase):
    failure = ended_in(phase, timed_out=True, returncode=-signal.SIGKILL)
    assert (failure["kind"], failure["exit_code"]) == ("harness_timeout", 4)
    assert failure["message"].startswith("the check's own step made no progress for 300 s")


@pytest.mark.parametrize("phase", ["setup", "solution", "before_call"])
def test_a_death_or_hang_where_solution_code_runs_stays_the_solution_s(phase):
    assert ended_in(phase, returncode=-signal.SIGSEGV)["exit_code"] == 3
    assert ended_in(phase, timed_out=True, returncode=-signal.SIGKILL)["kind"] == "timeout"
