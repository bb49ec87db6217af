"""Whose fault a failed allocation is (run/memory.py), and each step's peak memory in the records.

An out-of-memory error raised below the solution's own call (LoadedSolution.call, a timed call's
InputRotation.call) is the solution's: exit 3, with what it asked for. Raised anywhere else (the
reference, the comparison, a copy the checks make, the input pool), it is the harness's or this
machine's: exit 4, never solution_error, whatever wrapped it on the way up.
"""

import json
import os
from pathlib import Path

import pytest
import torch
from conftest import REFERENCE_DIR, TESTS_DIR

from kernel_opt.check.records import CorrectnessReport
from kernel_opt.core.errors import EnvironmentFault, SolutionError, UsageError
from kernel_opt.measure.input_pool import InputRotation
from kernel_opt.measure.records import BenchmarkReport, TimedSolution
from kernel_opt.run.entry import child_main, error_event
from kernel_opt.run.events import ErrorEvent, MemoryEvent, PhaseEvent, read_event_log
from kernel_opt.run.memory import (
    MemoryUse,
    MeteredEventLog,
    allocation_failure,
    is_out_of_memory,
    out_of_memory_in,
    raised_in_solution,
)
from kernel_opt.run.request import ChildRequest, CorrectnessPart, SolutionSpec
from kernel_opt.solution.loaded import LoadedSolution, call_solution

TORCH_MESSAGE = ("CUDA out of memory. Tried to allocate 56.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which "
                 "10.44 GiB is free. Including non-PyTorch memory, this process has 129.35 GiB memory in use.")


def out_of_memory(asked: str = "56.00 GiB") -> torch.OutOfMemoryError:
    return torch.OutOfMemoryError(TORCH_MESSAGE.replace("56.00 GiB", asked))


def raise_(error):
    raise error


class FakeLauncher:
    """A backend's launcher whose prepared call is `call` (the solution's own code)."""

    def __init__(self, call):
        self.call = call

    def prepared(self, values, dims, outputs):
        return self.call

    def raise_launch_error(self):
        pass


def loaded(call) -> LoadedSolution:
    solution = object.__new__(LoadedSolution)  # loading is not what is tested here
    solution.launcher, solution._last_call, solution.last_call_host_s = FakeLauncher(call), None, 0.0
    solution.path = __file__  # the solution's own code is in this file
    return solution


def test_what_counts_as_running_out_of_memory():
    assert is_out_of_memory(out_of_memory())
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert is_out_of_memory(RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
                                         "allocate memory: you tried to allocate 4096 bytes."))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("out of resource: shared memory, Required: 262144"))
    assert not is_out_of_memory(ValueError("out of memory"))  # not an allocator's error


def test_an_allocation_that_fails_inside_the_solution_s_call_is_the_solution_s_with_the_sizes():
    solution = loaded(lambda: raise_(out_of_memory("2.00 GiB")))
    with pytest.raises(SolutionError) as raised:
        call_solution(solution, {"x": torch.ones(2)}, {}, ["x"])
    error = raised.value
    assert (error.exit_code, error.kind) == (3, "out_of_memory")
    assert error.message == "the solution's call ran out of memory: it asked for 2.00 GiB"  # no GPU: no free figure
    assert error.hint.startswith("test_memory.py line ")  # where in its own code it asked
    assert ", in raise_: raise error; OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB." in error.hint
    event = error_event(error)  # as run/entry.py reports it: still the solution's
    assert (event.exit_code, event.kind) == (3, "out_of_memory")


def test_an_allocation_that_fails_in_the_harness_is_exit_4_naming_the_step(tmp_path):
    events = MeteredEventLog(str(tmp_path / "events.jsonl"))
    events.emit(PhaseEvent("compare", case=0, dims={"n": 8}, seed=2))
    event = error_event(out_of_memory())  # raised by the comparison, not below any solution call
    assert (event.exit_code, event.kind) == (4, "harness_out_of_memory")
    assert event.message == ("the GPU ran out of memory in the harness while comparing outputs (n=8, seed 2), outside "
                             "the solution's call: it asked for 56.00 GiB. The solution is not at fault")
    assert "smaller sizes" in event.hint and "Tried to allocate 56.00 GiB" in event.hint


def test_the_harness_s_failure_stays_exit_4_whatever_wrapped_it():
    """The reference's OutOfMemoryError wrapped as ref.py's fault, or a bare RuntimeError from the host's allocator."""
    try:
        try:
            raise out_of_memory()
        except torch.OutOfMemoryError as error:
            raise UsageError("the reference raised OutOfMemoryError", kind="reference_error") from error
    except UsageError as wrapped:
        assert out_of_memory_in(wrapped) is wrapped.__cause__
        assert error_event(wrapped).exit_code == 4
    host = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 13958643712 bytes.")
    event = error_event(host)
    assert event.exit_code == 4 and event.message.startswith("the host ran out of memory in the harness")
    assert "it asked for 13.00 GiB" in event.message
    fault = EnvironmentFault("no GPU")
    fault.__cause__ = out_of_memory()
    assert error_event(fault).message == "no GPU"  # already this machine's: kept as it is


def test_an_error_raised_while_handling_an_allocation_failure_is_not_one():
    try:
        try:
            raise out_of_memory()
        except torch.OutOfMemoryError:
            raise ValueError("the solution's own bug") from None
    except ValueError as error:
        assert out_of_memory_in(error) is None and error_event(error).exit_code == 3


def test_in_a_timed_loop_only_the_timed_call_is_the_solution_s():
    """InputRotation.call runs the solution; before_call (the harness) copies the next value set into its buffers."""
    def copying(destination, source):
        raise out_of_memory("4.00 GiB")

    buffers = [{"x": torch.zeros(2)}, {"x": torch.zeros(2)}]
    value_sets = [{"x": torch.ones(2)}, {"x": torch.ones(2)}, {"x": torch.ones(2)}]
    solution_calls = [lambda: raise_(out_of_memory("1.00 GiB"))] * 2
    rotation = InputRotation(buffers, value_sets, [], solution_calls, lambda d, s: None, lambda t: None)
    with pytest.raises(torch.OutOfMemoryError) as inside:
        rotation.call()
    assert raised_in_solution(inside.value) and isinstance(allocation_failure(inside.value), SolutionError)
    rotation._copy = copying
    with pytest.raises(torch.OutOfMemoryError) as outside:
        rotation.before_call()
    assert not raised_in_solution(outside.value)
    failure = allocation_failure(outside.value)
    assert isinstance(failure, EnvironmentFault) and "asked for 4.00 GiB" in failure.message


def run_child(tmp_path: Path, runner) -> tuple[int, list]:
    events = tmp_path / "events.jsonl"
    request = ChildRequest(SolutionSpec("toy", "toy.py"), "ref.py", "cpu", {}, CorrectnessPart([0]))
    path = request.with_events(events).write(tmp_path / "request.json")
    return child_main([str(path)], {CorrectnessPart.mode: runner}), read_event_log(events)


def test_a_child_whose_harness_runs_out_of_memory_exits_4_and_writes_no_memory_events_on_the_cpu(tmp_path):
    def runner(request, events):
        events.emit(PhaseEvent("truth", case=0, dims={"n": 8}, seed=0))
        raise out_of_memory()

    code, logged = run_child(tmp_path, runner)
    assert code == 4 and [type(event) for event in logged] == [PhaseEvent, ErrorEvent]  # CUDA never in use here
    assert logged[1].message.startswith("the GPU ran out of memory in the harness while computing the reference's "
                                        "float64 truth (n=8, seed 0)")


def test_each_step_keeps_its_highest_peak_and_the_plans_are_listed_once():
    memory = MemoryUse()
    for event in (MemoryEvent("reference", 10, case=0, dims={"n": 8}, seed=0),
                  MemoryEvent("truth", 30, case=0, dims={"n": 8}, seed=0),
                  MemoryEvent("reference", 25, case=1, dims={"n": 4}, seed=1),
                  MemoryEvent("reference", 20, case=2, dims={"n": 2}, seed=0),
                  MemoryEvent("truth", plan="the float64 truth in 2 row chunks"),
                  MemoryEvent("truth", plan="the float64 truth in 2 row chunks")):
        memory.add(event)
    assert memory.to_dict() == {
        "peak_bytes": 30,
        "steps": [{"step": "reference", "peak_bytes": 25, "dims": {"n": 4}, "seed": 1},
                  {"step": "truth", "peak_bytes": 30, "dims": {"n": 8}, "seed": 0}],
        "plans": ["the float64 truth in 2 row chunks"]}
    assert MemoryUse.from_dict(json.loads(json.dumps(memory.to_dict()))) == memory


def test_the_records_carry_the_memory_section_only_where_there_is_one():
    memory = MemoryUse()
    memory.add(MemoryEvent("truth", 7, case=0, dims={}, seed=0))
    memory.add(MemoryEvent("truth", plan="kept on the host"))
    correctness = CorrectnessReport("pass", "s", "r", "toy", None, False, "c", {}, [0])
    benchmark = BenchmarkReport(solution=TimedSolution(), reference="r", backend="toy", command="c")
    for record, read in ((correctness, CorrectnessReport.from_dict), (benchmark, BenchmarkReport.from_dict)):
        assert "memory" not in record.to_dict()  # records of runs without it read and write as before
        record.memory = memory
        payload = json.loads(json.dumps(record.to_dict()))
        assert payload["memory"]["peak_bytes"] == 7 and read(payload).memory == memory
    assert "memory" not in CorrectnessReport.from_dict(correctness.to_dict()).integrity  # not taken for a check's


# --- end to end on the CPU, in the child process: a toy solution, a ref.py -----------------------------

OOM_TOY = '''
import torch


def toy_solution(x, y, out, **_):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of "
                                 "79.19 GiB of which 1.00 GiB is free.")
'''
GOOD_TOY = '''
import torch


def toy_solution(x, y, out, **_):
    torch.add(x, y, out=out)
'''
OOM_REFERENCE = '''
import torch


def setup(n=64, seed=0, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    x, y = torch.randn(n, generator=generator), torch.randn(n, generator=generator)
    return {"inputs": {"x": x.to(device), "y": y.to(device), "out": torch.empty(n, device=device)}, "outputs": ["out"]}


def reference(x, y, out, **_):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
                                 "79.19 GiB of which 5.00 GiB is free.")
'''


@pytest.fixture
def toy_backend(monkeypatch):
    from kernel_opt.solution import registry

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")])))
    backend = registry.register_module("toy_backend.backend")
    yield backend
    registry.unregister(backend.name)


def check(tmp_path: Path, toy: str, reference: Path):
    from kernel_opt.check.correctness import CheckOptions, check_correctness
    from kernel_opt.solution.backend import BuildOptions

    solution = tmp_path / "solution.toy"
    solution.write_text(toy)
    return check_correctness(solution, reference, "toy", "cpu", {"n": 64}, CheckOptions(seeds=1), BuildOptions(),
                             tmp_path / "build", "test")


@pytest.mark.slow
def test_a_toy_solution_that_runs_out_of_memory_is_blamed_exit_3(toy_backend, tmp_path):
    report = check(tmp_path, OOM_TOY, REFERENCE_DIR / "vector_add" / "ref.py")
    assert report.verdict == "solution_error" and report.error.exit_code == 3
    assert report.error.kind == "out_of_memory"
    assert report.error.message.startswith("the solution's call ran out of memory: it asked for 3.00 GiB (in the "
                                              "solution's call (n=64, seed 0))")


@pytest.mark.slow
def test_a_reference_that_runs_out_of_memory_is_this_machine_s_exit_4_never_the_solution_s(toy_backend, tmp_path):
    reference = tmp_path / "ref.py"
    reference.write_text(OOM_REFERENCE)
    report = check(tmp_path, GOOD_TOY, reference)
    assert report.verdict == "environment_error" and report.error.exit_code == 4
    assert report.error.kind == "harness_out_of_memory"
    assert report.error.message == ("the GPU ran out of memory in the harness in the reference (n=64, seed 0), "
                                       "outside the solution's call: it asked for 20.00 GiB. The solution is not at "
                                       "fault")
