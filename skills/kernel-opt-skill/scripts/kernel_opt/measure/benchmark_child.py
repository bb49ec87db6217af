"""The benchmark's child side: times the solution, its baselines and another version, and reports through events."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from kernel_opt.measure.baseline_timing import solution_faults, time_baselines, time_eager_beside_solution
from kernel_opt.measure.input_pool import POOL_BUFFER_SETS, InputRotation, copy_unless_same, plan_pool
from kernel_opt.measure.records import TimedEntry
from kernel_opt.run.events import (
    CeilingsEvent,
    CopySameBytesEvent,
    CudaGraphEvent,
    DoneEvent,
    EnvironmentEvent,
    EventLog,
    InterleavedEvent,
    KernelTimeEvent,
    MemoryEvent,
    NoteEvent,
    PhaseEvent,
    PostTimingCheckEvent,
    PrecisionEvent,
    ProblemEvent,
    TimedEvent,
    WorkEvent,
)
from kernel_opt.run.release import wait_for_release
from kernel_opt.run.request import ChildRequest, Tolerances
from kernel_opt.run.tampering import PrimitiveGuard
from kernel_opt.solution.inputs import cloned_arguments


def _tensor_bytes(values: dict[str, Any], names: list[str]) -> int:
    return sum(values[name].numel() * values[name].element_size() for name in names)


@dataclass
class _Timed:
    """The problem as the timers see it: the input pool, what each value set should give, and the checks."""

    outputs: list[str]
    policy: Any  # check.tolerance.TolerancePolicy, the correctness check's
    events: EventLog
    expected: _Expected  # what each value set should give
    rotation: InputRotation  # the solution's buffer sets; its buffer set 0 is the problem instance
    guard: PrimitiveGuard  # checked before every comparison: nothing the timers and checks use was replaced
    other: InputRotation | None = None  # another version's own buffer sets, same value sets

    @property
    def values(self) -> dict[str, Any]:
        return self.rotation.buffers[0]

    def poison_outputs(self) -> None:
        """Before each call of a graph timing, which runs on buffer set 0 alone (a graph fixes its pointers)."""
        from kernel_opt.check.compare import poison_

        for name in self.outputs:
            poison_(self.values[name])

    def check_rotation(self, name: str, rotation: InputRotation) -> None:
        """Every buffer set's last outputs against the reference for the value set that call received."""
        self._emit(name, [(buffer, values, rotation.buffers[buffer]) for buffer, values in rotation.results()])

    def check_fixed(self, name: str) -> None:
        """Buffer set 0's outputs (a graph timing's last call) against the reference for its values."""
        from kernel_opt.solution.returning_call import deliver_outputs

        deliver_outputs(self.rotation.calls[0])
        self._emit(name, [(0, self.rotation.loaded[0], self.values)])

    def _emit(self, name: str, checked: list[tuple[int, int, dict[str, Any]]]) -> None:
        from kernel_opt.check.tolerance import judge

        self.guard.verify(f"the timed calls ({name})", who="the solution or the --against version")
        comparisons = []
        for buffer, value_set, buffers in checked:
            expectation = self.expected.of(value_set)
            for output in self.outputs:
                comparison = judge(output, buffers[output], expectation, self.policy)[0]
                comparison.name = f"{output} (buffer set {buffer}, value set {value_set})"
                comparisons.append(comparison)
            del expectation  # one value set's expected outputs at a time where they are computed for the check
        passed = bool(comparisons) and all(c.passed for c in comparisons)
        self.events.emit(PostTimingCheckEvent(name=name, passed=passed, outputs=[c.to_dict() for c in comparisons]))


@dataclass
class _Expected:
    """What each value set should give: computed before the timed calls and kept, or, where the pool leaves no room
    to keep them (input_pool.PoolPlan.expected_after_timing), computed on the GPU each time one is checked."""

    compute: Callable[[int], Any]  # value set -> check.tolerance.Expectation
    kept: list[Any] | None = None

    def of(self, value_set: int) -> Any:
        return self.kept[value_set] if self.kept is not None else self.compute(value_set)


def _build_pool(make, tolerances: Tolerances, reference, instance, seed: int, solution, other,
                events: EventLog, guard: PrimitiveGuard) -> _Timed:
    """Value sets (fresh draws, seeds seed+1...), their expected outputs, and the buffer sets to rotate.

    Sized by input_pool.plan_pool from the problem's bytes and the memory available now; the
    expected outputs are computed when they are checked where only that lets the pool rotate.
    """
    import torch

    from kernel_opt.check.compare import poison_
    from kernel_opt.check.tolerance import TolerancePolicy, expect
    from kernel_opt.check.truth import memory_budget
    from kernel_opt.solution.returning_call import deliver_outputs

    values, outputs, dims = instance.values, instance.outputs, instance.dims
    policy = TolerancePolicy.for_run(reference, tolerances)
    inputs = [name for name, value in values.items() if isinstance(value, torch.Tensor) and name not in outputs]
    truth = sum(8 * values[name].numel() for name in outputs if policy.needs_truth(values[name].dtype))
    budget = memory_budget(values[outputs[0]].device)
    plan = plan_pool(_tensor_bytes(values, inputs), _tensor_bytes(values, outputs),
                     _tensor_bytes(values, outputs) + truth, budget.device_available,
                     versions=2 if other is not None else 1, defer_expected=True)
    if plan.value_sets == 1:
        value_sets = [{name: values[name] for name in inputs}]
    else:
        value_sets = []
        for index in range(plan.value_sets):  # one draw per value set: its inputs, weights included
            drawn = make(dict(dims), seed + 1 + index).values
            value_sets.append({name: drawn[name] for name in inputs})
            del drawn  # its output buffers
    row_arguments = reference.row_arguments(dims) if reference.row_arguments is not None else ()

    def expected_for(value_set: int) -> Any:
        expectation = expect(reference.reference, policy, dims, {**values, **value_sets[value_set]}, outputs,
                             row_arguments)
        if expectation.truth_plan is not None:
            step = "timed outputs check" if plan.expected_after_timing else "input pool"
            events.emit(MemoryEvent(step=step, plan=expectation.truth_plan))
        return expectation

    expected = _Expected(expected_for)
    if not plan.expected_after_timing:
        expected.kept = [expected_for(index) for index in range(len(value_sets))]
    torch.cuda.synchronize()

    def rotation_of(launcher, buffers: list[dict[str, Any]]) -> InputRotation:
        calls = [launcher.prepared(buffer, dims, outputs) for buffer in buffers]
        return InputRotation(buffers, value_sets, outputs, calls, copy_unless_same, poison_, deliver_outputs)

    def fresh_buffers() -> dict[str, Any]:
        return {name: torch.empty_like(value) if isinstance(value, torch.Tensor) else value
                for name, value in values.items()}

    rotation = rotation_of(solution, [values] + [fresh_buffers() for _ in range(plan.buffer_sets - 1)])
    other_rotation = None
    if other is not None:
        other_rotation = rotation_of(other, [fresh_buffers() for _ in range(plan.buffer_sets)])
    events.emit(NoteEvent(plan.note()))
    if plan.expected_after_timing or plan.value_sets < POOL_BUFFER_SETS + 1:
        events.emit(MemoryEvent(step="input pool", plan=plan.note()))
    return _Timed(outputs, policy, events, expected, rotation, guard, other_rotation)


def run_benchmark(request: ChildRequest, events: EventLog) -> None:
    """Time the solution (and baselines, and another version) at the command-line shape.

    A held worker (run/release.py) prepares, then waits until it is released: everything timed
    comes after that, with the request's fields the release carried.
    """
    prepared = _prepare(request, events)
    if request.benchmark.wait_for_release:
        _release_cached_memory()  # what preparing freed goes back to the GPU: the checks run beside this wait
        release = wait_for_release(events)
        if release is None:
            return  # stopped: the checks failed, nothing is timed
        request = request.released(release)
    _time_prepared(prepared, request, events)


@dataclass
class _Prepared:
    """What the worker sets up before it times anything: loaded code, the problem instance, its work."""

    reference: Any  # solution.contract.Reference
    solution: Any  # solution.loaded.LoadedSolution
    other: Any | None  # the --against version, loaded the same way
    guard: PrimitiveGuard
    make: Callable[[dict[str, Any], int], Any]  # (dims, seed) -> ProblemInstance
    instance: Any  # the problem at the command-line shape and seed
    seed: int
    work: dict[str, Any]
    compiler_warm_up_s: float = 0.0  # torch.compile's one-off start, paid while held (_warm_up_compiler)


def _prepare(request: ChildRequest, events: EventLog) -> _Prepared:
    """Untimed and light on the GPU: load the reference and the solution, build the instance, count the work."""
    import torch

    from kernel_opt.check.compare import dtype_name
    from kernel_opt.run.events import environment_info
    from kernel_opt.solution.contract import load_reference, problem_cases, set_matmul_precision
    from kernel_opt.solution.loaded import instance_maker, runtime_modules, solution_or_fault

    if not torch.cuda.is_available():
        from kernel_opt.core.errors import EnvironmentFault

        raise EnvironmentFault("the benchmark needs an NVIDIA GPU and torch sees none in the worker")
    events.emit(EnvironmentEvent(environment_info("cuda")))
    reference = load_reference(Path(request.reference))
    events.emit(PrecisionEvent(**set_matmul_precision(reference.allow_tf32)))  # same policy as the correctness check
    events.emit(PhaseEvent("load_solution"))
    guard = PrimitiveGuard(runtime_modules(request))
    solution = solution_or_fault(request)
    guard.verify("loading the solution")
    # The other version loads with the problem and the event log too (a ModelNew needs the problem it solves).
    against = request.benchmark.against
    other = solution_or_fault(replace(request, solution=against)) if against is not None else None
    guard.verify("loading the --against version", who="the --against version")
    make = instance_maker(reference, solution, "cuda", events)
    dims = problem_cases(request.cli_dims, [], reference.setup or solution.setup)[0]
    seed = request.benchmark.seed
    events.emit(PhaseEvent("setup", dims=dims, seed=seed))
    instance = make(dict(dims), seed)
    values, outputs, dims = instance.values, instance.outputs, instance.dims
    events.emit(ProblemEvent(dims=dims, seed=seed, dtypes={
        n: dtype_name(v.dtype) for n, v in values.items() if isinstance(v, torch.Tensor)}))
    events.emit(PhaseEvent("work count"))
    work = request.benchmark.work or problem_work(reference, values, outputs, dims)  # the run's cache first
    events.emit(WorkEvent(work))
    warm = request.benchmark.warm_compiler
    compiler_warm_up_s = _warm_up_compiler(values[outputs[0]].device, events) if warm else 0.0
    return _Prepared(reference, solution, other, guard, make, instance, seed, work, compiler_warm_up_s)


def _compiler_warm_up(x):
    return x * 2.0 + 1.0


def _warm_up_compiler(device, events: EventLog) -> float:
    """Pay torch.compile's one-off start (importing dynamo and inductor, its compile workers, Triton's
    compiler) on a trivial function while a held worker waits for the checks; its seconds.

    CPU work but for one 8-element kernel: the baselines' own compiling and autotuning, which time
    kernels, still wait for the release, each after a dynamo reset.
    """
    import torch

    events.emit(PhaseEvent("warming torch.compile"))
    started = time.perf_counter()
    torch.compile(_compiler_warm_up, dynamic=False)(torch.zeros(8, device=device))
    if device.type == "cuda":
        torch.cuda.synchronize()
    torch._dynamo.reset()
    return time.perf_counter() - started


def _time_prepared(prepared: _Prepared, request: ChildRequest, events: EventLog) -> None:
    """Everything timed: the solution on rotated inputs, the same-size copy, kernel time, a CUDA graph, the
    interleaved comparison and the baselines, each checked after."""
    from kernel_opt.solution.loaded import call_solution

    # Read now, not while held: evaluate's ceilings step, between the checks and the release, may measure them.
    _emit_ceilings(events)
    solution, other, guard, instance = prepared.solution, prepared.other, prepared.guard, prepared.instance
    values, outputs, dims, seed = instance.values, instance.outputs, instance.dims, prepared.seed

    # The solution: one untimed call, then the pool of fresh inputs, then timing on rotated inputs.
    events.emit(PhaseEvent("solution", dims=dims, seed=seed))
    call_solution(solution, values, dims, outputs)
    solution.forget_call()  # what a ModelNew returned: not kept through the timing
    guard.verify("the solution's first call")
    events.emit(PhaseEvent("input pool"))
    timed = _build_pool(prepared.make, request.benchmark.tolerances, prepared.reference, instance, seed, solution,
                        other, events, guard)
    if other is not None:
        call_solution(other, timed.other.buffers[0], dims, outputs)
        other.forget_call()
        guard.verify("the --against version's first call", who="the --against version")
    events.emit(PhaseEvent("timing"))
    median_us = _time_solution(solution, timed)
    _time_copy_of_same_bytes(prepared.work.get("bytes"), values[outputs[0]].device, events)
    fixed = timed.rotation.calls[0]  # graph timings replay buffer set 0: a graph fixes its pointers
    _time_kernel_only(solution, fixed, timed)
    _time_cuda_graph(solution, fixed, median_us, timed)
    if other is not None:
        _time_interleaved(timed)
    eager_beside = time_eager_beside_solution(prepared.reference, timed, dims, request, events)
    del timed, fixed  # the pool's buffers, value sets and expected outputs: not kept while the baselines run
    _release_cached_memory()
    time_baselines(prepared.reference, values, dims, request, events, prepared.compiler_warm_up_s,
                   eager=not eager_beside)
    events.emit(DoneEvent())


def _release_cached_memory() -> None:
    """Give the allocator's unused blocks back, so a torch.compile baseline's own memory pool (CUDA graphs) can
    have them."""
    import torch

    torch.cuda.empty_cache()


def _time_solution(solution, timed: _Timed) -> float:
    """The solution's own timing on rotated inputs (input_pool.py), L2 flushed before each call; its median (us)."""
    import torch

    from kernel_opt.measure.timing.events import time_callable

    torch.cuda.synchronize()
    # An allocation failure is the solution's only where it failed inside its call (InputRotation.call).
    with solution_faults("while being timed", only_in_its_call=False):
        samples = time_callable(timed.rotation.call, flush_l2=True, before_each=timed.rotation.before_call)
        torch.cuda.synchronize()
        solution.raise_launch_error()
    timed.guard.verify("the timed calls")  # before a time measured with replaced timers is recorded
    timed.events.emit(TimedEvent(TimedEntry.from_samples("solution", samples).to_dict()))
    timed.check_rotation("solution", timed.rotation)
    return samples.median_us


def _time_kernel_only(solution, run: Callable[[], None], timed: _Timed) -> None:
    """Kernel time without launch overhead (a CUDA graph of calls, minus one of L2 flushes)."""
    from kernel_opt.measure.timing.cuda_graph import time_kernel_only
    from kernel_opt.measure.timing.samples import GraphCaptureFailure

    events = timed.events
    events.emit(PhaseEvent("kernel_time"))
    kernel_only = time_kernel_only(run, before_each=timed.poison_outputs)
    timed.guard.verify("the kernel-time graphs")
    solution.launcher.clear_launch_error()  # a refused capture leaves its error behind: clear it
    if isinstance(kernel_only, GraphCaptureFailure):
        events.emit(KernelTimeEvent(error=solution.launcher.capture_failure_reason(kernel_only.message)))
    elif min(kernel_only.samples_us) <= 0:
        # A difference of two graph timings: a call that does (almost) no GPU work shows as noise
        # around zero. That is evidence, not a timing: the post-timing check says what happened.
        median = sorted(kernel_only.samples_us)[len(kernel_only.samples_us) // 2]
        events.emit(KernelTimeEvent(error=f"not measurable: the call adds no GPU time beyond the L2 flush that this "
                                          f"method can resolve (median difference {median:.2f} us); does it launch "
                                          "any work, or is it shorter than the method's noise?"))
    else:
        events.emit(KernelTimeEvent(entry=TimedEntry.from_samples("solution kernel time", kernel_only).to_dict()))
    timed.check_fixed("solution (kernel time)")


def _time_cuda_graph(solution, run: Callable[[], None], median_us: float, timed: _Timed) -> None:
    """A CUDA-graph timing beside the plain one, for calls short enough that launch overhead shows."""
    from kernel_opt.measure.timing.cuda_graph import should_report_cuda_graph, time_callable_cudagraph
    from kernel_opt.measure.timing.samples import GraphCaptureFailure

    if not should_report_cuda_graph(median_us):
        return
    events = timed.events
    events.emit(PhaseEvent("cuda_graph"))
    graph = time_callable_cudagraph(run)
    timed.guard.verify("the CUDA-graph timing")
    solution.launcher.clear_launch_error()  # a refused capture leaves its error behind: clear it
    if isinstance(graph, GraphCaptureFailure):
        events.emit(CudaGraphEvent(error=solution.launcher.capture_failure_reason(graph.message)))
    else:
        events.emit(CudaGraphEvent(entry=TimedEntry.from_samples("solution (CUDA graph)", graph).to_dict()))


def _time_interleaved(timed: _Timed) -> None:
    """This solution and another version, A B, B A, ... in one process, each on its own rotated buffer sets."""
    import torch

    from kernel_opt.measure.timing.interleaved import time_interleaved

    timed.events.emit(PhaseEvent("comparison"))
    this, other = timed.rotation, timed.other
    samples_this, samples_other = time_interleaved(this.call, other.call, before_a=this.before_call,
                                                          before_b=other.before_call)
    torch.cuda.synchronize()
    timed.guard.verify("the interleaved timing", who="the solution or the --against version")
    timed.check_rotation("solution (interleaved)", this)
    timed.check_rotation("against", other)
    timed.events.emit(InterleavedEvent(this=samples_this.to_dict(), other=samples_other.to_dict()))


def _time_copy_of_same_bytes(traffic_bytes: float | None, device, events: EventLog) -> None:
    """Time a device copy that moves the problem's minimum bytes (half read, half written).

    The cached copy ceiling comes from a 2 GiB copy. A problem of tens of MB ends its timed
    call with part of its output still dirty in the 50 MB L2; that write-back lands after the
    end event, so such a kernel can beat the 2 GiB copy's rate. A copy of the same size, timed
    the same way, gets the same benefit: the roofline takes the stricter of the two.
    """
    import torch

    from kernel_opt.measure.ceilings import measure_copy_bandwidth
    from kernel_opt.measure.timing.budget import DEFAULT_REP_MS

    half = int(traffic_bytes or 0) // 2
    if half <= 0 or device is None or device.type != "cuda":
        return
    free, _ = torch.cuda.mem_get_info(device)
    if 2 * half > free // 2:
        events.emit(NoteEvent(f"no same-size copy was timed: {2 * half / 1e9:.1f} GB would not fit beside the problem"))
        return
    events.emit(PhaseEvent("copy_same_bytes"))
    events.emit(CopySameBytesEvent(asdict(measure_copy_bandwidth(device, buffer_bytes=half, rep_ms=DEFAULT_REP_MS))))


def problem_work(reference, values: dict[str, Any], outputs: list[str], dims: dict[str, Any]) -> dict[str, Any]:
    """FLOPs and minimum bytes per call: ref.py's flops()/bytes() first, counted otherwise.

    Shared with the size sweep (profile/sweep), so its GB/s and % of ceiling rest on the very
    counts the benchmark uses.
    """
    from kernel_opt.measure import roofline
    from kernel_opt.solution.contract import call_with_accepted

    work: dict[str, Any] = {}
    if reference.flops is not None:
        work.update(flops=float(call_with_accepted(reference.flops, dims)), flops_source="ref.py flops()")
    else:
        count = roofline.count_flops(reference.reference, cloned_arguments(dims, values))
        source = None if count.flops is None else (
            "counted by torch FlopCounterMode" if count.complete else "at least: counted by torch FlopCounterMode")
        if source and count.zero_product_flops:
            source += ", multiply-adds with a zero operand left out"
        work.update(flops=count.flops, flops_source=source, flops_note=count.reason,
                    flops_lower_bound=count.flops is not None and not count.complete)
    if reference.bytes is not None:
        work.update(bytes=float(call_with_accepted(reference.bytes, dims)), bytes_source="ref.py bytes()")
    else:
        inputs = {n: v for n, v in values.items() if n not in outputs}
        traffic = roofline.count_minimum_traffic(inputs, {n: values[n] for n in outputs})
        work.update(bytes=float(traffic.total_bytes), bytes_source="inputs read once + outputs written once")
    work["dtype"] = arithmetic_dtype(values, outputs)
    return work


def arithmetic_dtype(values: dict[str, Any], outputs: list[str]) -> str:
    """The dtype the problem's arithmetic runs in, which picks its compute roof: that of the floating input with the
    most bytes (an FP8 GEMM's e4m3 operands, not its bfloat16 output or float32 scales), else the first output's."""
    import torch

    from kernel_opt.check.compare import dtype_name

    inputs = [value for name, value in values.items() if name not in outputs and isinstance(value, torch.Tensor)
              and value.dtype.is_floating_point]
    if not inputs:
        return dtype_name(values[outputs[0]].dtype)
    return dtype_name(max(inputs, key=lambda value: value.numel() * value.element_size()).dtype)


def _emit_ceilings(events: EventLog) -> None:
    from kernel_opt.measure import ceilings

    try:
        measured = ceilings.load_cached()
    except Exception as error:  # a broken cache must not stop a benchmark; the report says so
        events.emit(CeilingsEvent(measured=None, error=str(error)))
        return
    events.emit(CeilingsEvent(measured=None if measured is None else measured.to_dict()))
