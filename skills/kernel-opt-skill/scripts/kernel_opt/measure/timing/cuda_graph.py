"""Per-call time replayed from CUDA graphs: without launch overhead, and the kernel's own time on a cold L2."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.measure.timing.budget import ESTIMATE_CALLS, count_for, estimate_call_us
from kernel_opt.measure.timing.gpu import cuda_device, torch_module
from kernel_opt.measure.timing.l2_flush import FlushMode, make_flush, no_flush, preceded_by
from kernel_opt.measure.timing.samples import GraphCaptureFailure, TimingSamples

# The threshold below which a CUDA-graph timing is also reported, because launch overhead
# (a few microseconds per launch) becomes a visible fraction of the kernel time.
CUDA_GRAPH_SUGGESTED_BELOW_US = 20.0
GRAPH_WARMUP_CALLS = 3  # torch's CUDA-graph docs warm up a few iterations on the side stream
# do_bench_cudagraph default (`rep=20`): GPU time of one graph, its flushes included (sized by the call
# alone, a 44 us layernorm's graphs ran 3x that and its kernel time took 5.3 s on an H100).
GRAPH_REP_MS = 20.0
GRAPH_REPLAYS = 20  # do_bench_cudagraph replays 10 times; 20 gives steadier p20/p80
MAX_CALLS_PER_GRAPH = 1000  # bounds capture time and graph memory for sub-microsecond kernels


def should_report_cuda_graph(median_us: float) -> bool:
    """Whether a kernel is short enough that its CUDA-graph timing belongs in the report."""
    return median_us < CUDA_GRAPH_SUGGESTED_BELOW_US


def time_callable_cudagraph(
    fn: Callable[[], Any],
    *,
    rep_ms: float = GRAPH_REP_MS,
    replays: int = GRAPH_REPLAYS,
    calls_per_graph: int | None = None,
    max_calls_per_graph: int = MAX_CALLS_PER_GRAPH,
    device: Any = None,
) -> TimingSamples | GraphCaptureFailure:
    """Per-call time of `fn` replayed from a CUDA graph, which removes launch overhead.

    `calls_per_graph` calls of `fn` are captured into one graph (default: enough to fill
    `rep_ms` of GPU time, at most `max_calls_per_graph`), and each of `replays` replays is
    timed by one event pair; a sample is the replay time over the number of calls. The L2 is
    not flushed between the calls inside a graph, so for inputs that fit in the L2 this is a
    warm-cache time: compare it with `time_callable` for launch overhead only when the
    working set is larger than the L2, and say which in the report.

    Returns:
        TimingSamples (method "cuda_graph"), or GraphCaptureFailure when `fn` cannot be
        captured. Errors raised by `fn` before capture (the solution is broken) propagate.
    """
    if replays < 1 or max_calls_per_graph < 1 or (calls_per_graph is not None and calls_per_graph < 1):
        raise UsageError("replays, calls_per_graph and max_calls_per_graph must be at least 1")
    torch = torch_module()
    device = cuda_device(device)
    with torch.cuda.device(device):
        current = torch.cuda.current_stream(device)
        side = warm_up_for_capture(torch, device, current, fn)

        if calls_per_graph is None:
            estimate_us = estimate_call_us(torch, fn, no_flush, current, ESTIMATE_CALLS)
            calls_per_graph = count_for(rep_ms, estimate_us, 1, max_calls_per_graph)
        else:
            estimate_us = None

        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=side):
                for _ in range(calls_per_graph):
                    fn()
        except Exception as error:  # capture failure is a result, reported by the caller
            settle_after_failed_capture(torch, device)
            return GraphCaptureFailure(reason=f"{type(error).__name__}: {error}".strip())

        graph.replay()  # the first replay uploads the graph to the device: keep it untimed
        torch.cuda.synchronize(device)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        for start, end in zip(starts, ends, strict=True):
            start.record(current)
            graph.replay()
            end.record(current)
        torch.cuda.synchronize(device)
        samples_us = [start.elapsed_time(end) * 1000.0 / calls_per_graph
                      for start, end in zip(starts, ends, strict=True)]
        graph.reset()  # give the graph's private memory pool back
        name = torch.cuda.get_device_name(device)
    warmup_calls = GRAPH_WARMUP_CALLS + (ESTIMATE_CALLS if estimate_us is not None else 0) + calls_per_graph
    return TimingSamples(
        samples_us=samples_us,
        warmup=warmup_calls,
        reps=replays,
        flush_l2=False,
        method="cuda_graph",
        calls_per_sample=calls_per_graph,
        estimate_us=estimate_us,
        device_name=name,
        notes=["L2 not flushed between calls inside the graph (warm cache for inputs that fit in L2)"],
    )


def time_kernel_only(
    fn: Callable[[], Any],
    *,
    before_each: Callable[[], Any] | None = None,
    flush_mode: FlushMode = "clean",
    rep_ms: float = GRAPH_REP_MS,
    replays: int = GRAPH_REPLAYS,
    max_calls_per_graph: int = MAX_CALLS_PER_GRAPH,
    device: Any = None,
) -> TimingSamples | GraphCaptureFailure:
    """The kernel's own GPU time on a flushed L2, without launch overhead (what ncu reports).

    Events around each call also count the GPU's launch latency, a few microseconds that
    Nsight Compute's gpu__time_duration leaves out: 6% of a 40 us kernel on an H200
    (tools/timing_gap_probe.py). Here two graphs are captured on one stream: k times
    [before_each, L2 flush, fn], and k times [before_each, L2 flush] alone. Each sample is the
    difference of one replay of each, divided by k, so the flushes and the launch gaps cancel
    and what remains is the kernel's duration after a cold L2.

    Returns:
        TimingSamples (method "cuda_graph_differential"), or GraphCaptureFailure when `fn`
        cannot be captured (e.g. a CUDA solve launching on the legacy default stream).
    """
    if replays < 1 or max_calls_per_graph < 1:
        raise UsageError("replays and max_calls_per_graph must be at least 1")
    torch = torch_module()
    device = cuda_device(device)
    with torch.cuda.device(device):
        current = torch.cuda.current_stream(device)
        flush, flush_bytes = make_flush(torch, device, True, flush_mode)
        step = preceded_by(before_each, flush)
        side = warm_up_for_capture(torch, device, current, lambda: (step(), fn()))
        estimate_us = estimate_call_us(torch, fn, step, current, ESTIMATE_CALLS)
        iteration_us = estimate_call_us(torch, lambda: (step(), fn()), no_flush, current, ESTIMATE_CALLS)
        calls = count_for(rep_ms, iteration_us, 1, max_calls_per_graph)
        with_kernel, flush_only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(with_kernel, stream=side):
                for _ in range(calls):
                    step()
                    fn()
            with torch.cuda.graph(flush_only, stream=side):
                for _ in range(calls):
                    step()
        except Exception as error:  # capture failure is a result, reported by the caller
            settle_after_failed_capture(torch, device)
            return GraphCaptureFailure(reason=f"{type(error).__name__}: {error}".strip())
        with_kernel.replay()  # first replays upload the graphs: keep them untimed
        flush_only.replay()
        torch.cuda.synchronize(device)
        events = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(replays)]
        for index, (start_a, end_a, start_b, end_b) in enumerate(events):
            order = ((with_kernel, start_a, end_a), (flush_only, start_b, end_b))
            for graph, start, end in order if index % 2 == 0 else order[::-1]:
                start.record(current)
                graph.replay()
                end.record(current)
        torch.cuda.synchronize(device)
        samples_us = [
            (start_a.elapsed_time(end_a) - start_b.elapsed_time(end_b)) * 1000.0 / calls
            for start_a, end_a, start_b, end_b in events
        ]
        with_kernel.reset()
        flush_only.reset()
        name = torch.cuda.get_device_name(device)
    return TimingSamples(
        samples_us=samples_us,
        warmup=GRAPH_WARMUP_CALLS + 2 * ESTIMATE_CALLS + calls,
        reps=replays,
        flush_l2=True,
        method="cuda_graph_differential",
        calls_per_sample=calls,
        flush_mode=flush_mode,
        flush_bytes=flush_bytes,
        estimate_us=estimate_us,
        device_name=name,
        notes=["(graph of k x [flush, call]) - (graph of k x [flush]), over k: launch overhead removed, L2 cold"],
    )


def warm_up_for_capture(torch, device, current, calls: Callable[[], Any]):
    """torch's CUDA-graph recipe: warm up on a side stream, then capture on that same stream,
    so lazy initialisation (cuBLAS workspaces, autotuning, allocator growth) is not captured."""
    side = torch.cuda.Stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(GRAPH_WARMUP_CALLS):
            calls()
    current.wait_stream(side)
    torch.cuda.synchronize(device)
    return side


def settle_after_failed_capture(torch, device) -> None:
    """Drain the device after a failed capture so later timings start from a clean state."""
    try:
        torch.cuda.synchronize(device)
    except Exception:  # the capture's own error may resurface here; it is already reported
        pass
