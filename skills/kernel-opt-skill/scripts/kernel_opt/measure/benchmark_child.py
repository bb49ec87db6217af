"""The benchmark's child side: times the solution, its baselines and another version, and reports through events."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import SolutionError
from kernel_opt.measure.benchmark import DEFAULT_COMPILE_MODES, TimedEntry


def _refill_inputs(values: dict[str, Any], outputs: list[str], fresh: dict[str, Any]) -> None:
    """Copy fresh random values into the existing input buffers (same pointers, new contents)."""
    import torch

    for name, value in values.items():
        if name in outputs or not isinstance(value, torch.Tensor):
            continue
        value.copy_(fresh[name])


def _expected_outputs(reference, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> dict[str, Any]:
    import torch

    from kernel_opt.check.compare import run_reference

    kwargs = {**dims, **{n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in values.items()}}
    run_reference(reference.reference, kwargs, outputs)
    torch.cuda.synchronize()
    return {name: kwargs[name] for name in outputs}


def _compare_all(reference, values, expected, request) -> dict[str, Any]:
    from kernel_opt.check.compare import compare_tensors, resolve_tolerance

    comparisons = []
    for name, want in expected.items():
        atol, rtol, _ = resolve_tolerance(values[name].dtype, reference.atol, reference.rtol, request.get("atol"), request.get("rtol"))
        comparisons.append(compare_tensors(name, values[name], want, atol, rtol))
    return {"passed": all(c.passed for c in comparisons), "outputs": [asdict(c) for c in comparisons]}


def run_benchmark(request: dict[str, Any], events) -> None:
    """Time the solution (and baselines, and another version) at the command-line shape."""
    import torch

    from kernel_opt.check.compare import poison_
    from kernel_opt.measure import timing
    from kernel_opt.run.events import environment_info
    from kernel_opt.solution.contract import accepted_kwargs, load_reference, problem_cases, set_matmul_precision
    from kernel_opt.solution.loaded import call_solution, instance_maker, solution_or_fault

    if not torch.cuda.is_available():
        from kernel_opt.core.errors import EnvironmentFault

        raise EnvironmentFault("the benchmark needs an NVIDIA GPU and torch sees none in the worker")
    events.emit("environment", info=environment_info("cuda"))
    reference = load_reference(Path(request["reference"]))
    events.emit("precision", **set_matmul_precision(reference.allow_tf32))  # same policy as the correctness check
    events.emit("phase", phase="load_solution")
    solution = solution_or_fault(request)
    other = solution_or_fault(request["against"]) if request.get("against") else None
    make = instance_maker(reference, solution, "cuda", events)
    dims = problem_cases(request["cli_dims"], [], reference.setup or solution.setup)[0]
    seed = int(request.get("seed", 0))
    events.emit("phase", phase="setup", dims=dims, seed=seed)
    instance = make(dict(dims), seed)
    values, outputs, dims = instance.values, instance.outputs, instance.dims
    events.emit(
        "problem",
        dims=dims,
        seed=seed,
        dtypes={n: str(v.dtype).removeprefix("torch.") for n, v in values.items() if isinstance(v, torch.Tensor)},
    )
    work = _emit_work(reference, values, outputs, dims, events)
    _emit_ceilings(events)

    # The solution: one untimed call, fresh inputs, poisoned outputs, then timing.
    events.emit("phase", phase="solution", dims=dims, seed=seed)
    call_solution(solution, values, dims, outputs)
    fresh = make(dict(dims), seed + 1).values
    _refill_inputs(values, outputs, fresh)
    expected = _expected_outputs(reference, values, dims, outputs)
    run = solution.prepared(values, dims, outputs)
    other_values = other_run = None
    if other is not None:
        other_values = {n: (v.clone() if n in outputs else v) for n, v in values.items()}  # same inputs, own outputs
        call_solution(other, other_values, dims, outputs)
        other_run = other.prepared(other_values, dims, outputs)
    def poison_outputs() -> None:
        for name in outputs:
            poison_(values[name])

    def poison_other_outputs() -> None:
        for name in outputs:
            poison_(other_values[name])

    torch.cuda.synchronize()
    try:
        samples = timing.time_callable(run, flush_l2=True, before_each=poison_outputs)
        torch.cuda.synchronize()
        solution.raise_launch_error()
    except SolutionError:
        raise
    except Exception as error:
        from kernel_opt.run.events import classify_exception_message, one_line

        raise SolutionError(f"the solution raised {one_line(error)} while being timed", kind=classify_exception_message(str(error))) from error
    events.emit("timed", entry=asdict(TimedEntry.from_samples("solution", samples)))
    events.emit("post_timing_check", name="solution", **_compare_all(reference, values, expected, request))

    device = next((v.device for v in values.values() if isinstance(v, torch.Tensor)), None)
    _time_copy_of_same_bytes(work.get("bytes"), device, events)

    events.emit("phase", phase="kernel_time")
    kernel_only = timing.time_kernel_only(run, before_each=poison_outputs)
    solution.launcher.clear_launch_error()  # a refused capture leaves its error behind: clear it
    if isinstance(kernel_only, timing.GraphCaptureFailure):
        events.emit("kernel_time", error=solution.launcher.capture_failure_reason(kernel_only.message))
    elif min(kernel_only.samples_us) <= 0:
        # A difference of two graph timings: a call that does (almost) no GPU work shows as noise
        # around zero. That is evidence, not a timing: the post-timing check says what happened.
        median = sorted(kernel_only.samples_us)[len(kernel_only.samples_us) // 2]
        events.emit("kernel_time", error=f"not measurable: the call adds no GPU time beyond the L2 flush that this "
                                         f"method can resolve (median difference {median:.2f} us); does it launch "
                                         "any work, or is it shorter than the method's noise?")
    else:
        events.emit("kernel_time", entry=asdict(TimedEntry.from_samples("solution kernel time", kernel_only)))
    events.emit("post_timing_check", name="solution (kernel time)", **_compare_all(reference, values, expected, request))

    if timing.should_report_cuda_graph(samples.median_us):
        events.emit("phase", phase="cuda_graph")
        graph = timing.time_callable_cudagraph(run)
        solution.launcher.clear_launch_error()  # a refused capture leaves its error behind: clear it
        if isinstance(graph, timing.GraphCaptureFailure):
            events.emit("cuda_graph", error=solution.launcher.capture_failure_reason(graph.message))
        else:
            events.emit("cuda_graph", entry=asdict(TimedEntry.from_samples("solution (CUDA graph)", graph)))

    if other is not None:
        events.emit("phase", phase="comparison")
        samples_this, samples_other = timing.time_interleaved(
            run, other_run, before_a=poison_outputs, before_b=poison_other_outputs
        )
        torch.cuda.synchronize()
        events.emit("post_timing_check", name="solution (interleaved)", **_compare_all(reference, values, expected, request))
        events.emit("post_timing_check", name="against", **_compare_all(reference, other_values, expected, request))
        events.emit("interleaved", this=samples_this.to_dict(), other=samples_other.to_dict())

    _time_baselines(reference, values, dims, request, events, accepted_kwargs)
    events.emit("done")


def _time_copy_of_same_bytes(traffic_bytes: float | None, device, events) -> None:
    """Time a device copy that moves the problem's minimum bytes (half read, half written).

    The cached copy ceiling comes from a 2 GiB copy. A problem of tens of MB ends its timed
    call with part of its output still dirty in the 50 MB L2; that write-back lands after the
    end event, so such a kernel can beat the 2 GiB copy's rate. A copy of the same size, timed
    the same way, gets the same benefit: the roofline takes the stricter of the two.
    """
    import torch

    from kernel_opt.measure.ceilings import measure_copy_bandwidth
    from kernel_opt.measure.timing import DEFAULT_REP_MS

    half = int(traffic_bytes or 0) // 2
    if half <= 0 or device is None or device.type != "cuda":
        return
    free, _ = torch.cuda.mem_get_info(device)
    if 2 * half > free // 2:
        events.emit("note", text=f"no same-size copy was timed: {2 * half / 1e9:.1f} GB would not fit beside the problem")
        return
    events.emit("phase", phase="copy_same_bytes")
    events.emit("copy_same_bytes", copy=asdict(measure_copy_bandwidth(device, buffer_bytes=half, rep_ms=DEFAULT_REP_MS)))


def _emit_work(reference, values, outputs, dims, events) -> dict[str, Any]:
    """FLOPs and minimum bytes per call: ref.py's flops()/bytes() first, counted otherwise."""
    import torch

    from kernel_opt.measure import roofline
    from kernel_opt.solution.contract import call_with_accepted

    work: dict[str, Any] = {}
    if reference.flops is not None:
        work.update(flops=float(call_with_accepted(reference.flops, dims)), flops_source="ref.py flops()")
    else:
        kwargs = {**dims, **{n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in values.items()}}
        count = roofline.count_flops(reference.reference, kwargs)
        work.update(flops=count.flops, flops_source="counted by torch FlopCounterMode" if count.flops is not None else None,
                    flops_note=count.reason)
    if reference.bytes is not None:
        work.update(bytes=float(call_with_accepted(reference.bytes, dims)), bytes_source="ref.py bytes()")
    else:
        inputs = {n: v for n, v in values.items() if n not in outputs}
        traffic = roofline.count_minimum_traffic(inputs, {n: values[n] for n in outputs})
        work.update(bytes=float(traffic.total_bytes), bytes_source="inputs read once + outputs written once")
    first_output = values[outputs[0]]
    work["dtype"] = str(first_output.dtype).removeprefix("torch.")
    events.emit("work", **work)
    return work


def _emit_ceilings(events) -> None:
    from kernel_opt.measure import ceilings

    try:
        measured = ceilings.load_cached()
    except Exception as error:  # a broken cache must not stop a benchmark; the report says so
        events.emit("ceilings", measured=None, error=str(error))
        return
    events.emit("ceilings", measured=None if measured is None else measured.to_dict())


def _time_baselines(reference, values, dims, request, events, accepted_kwargs) -> None:
    import torch

    from kernel_opt.measure import timing

    kinds = request.get("baselines", ["eager", "compile"])
    kwargs = accepted_kwargs(
        reference.reference, {**dims, **{n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in values.items()}}
    )
    function = reference.reference
    if "eager" in kinds:
        events.emit("phase", phase="baseline eager")
        try:
            samples = timing.time_callable(lambda: function(**kwargs))
            events.emit("timed", entry=asdict(TimedEntry.from_samples("eager", samples)))
        except Exception as error:
            events.emit("timed", entry=asdict(TimedEntry("eager", error=f"{type(error).__name__}: {error}"[:500])))
    if "compile" not in kinds:
        return
    for mode in request.get("compile_modes", list(DEFAULT_COMPILE_MODES)):
        name = f"torch.compile ({mode})"
        events.emit("phase", phase=f"baseline {name}")
        try:
            # compile_s is all that torch.compile costs before its first result: the first
            # reset imports dynamo and inductor (seconds in a fresh process), then tracing
            # and code generation run on the first call.
            started = time.perf_counter()
            torch._dynamo.reset()
            compiled = torch.compile(function, mode=mode, dynamic=False)
            compiled(**kwargs)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - started
            samples = timing.time_callable(lambda: compiled(**kwargs))
            events.emit("timed", entry=asdict(TimedEntry.from_samples(name, samples, compile_s=compile_s)))
        except Exception as error:  # a baseline that fails to compile is reported; the others still run
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            events.emit("timed", entry=asdict(TimedEntry(name, error=f"{type(error).__name__}: {message}"[:500])))
