"""GPU timers: per-call kernel time from CUDA events, with the L2 flushed before every call.

Three timers, all on the current torch stream of one CUDA device:
- `time_callable`: the `triton.testing.do_bench` recipe. Estimate the per-call time from a few
  calls, derive warm-up and repetition counts from time budgets, then time each rep with its
  own pair of events. Before every call the L2 is flushed, outside the timed region: the start
  event is recorded after the flush is enqueued, so only `fn` lies between start and end.
  Nothing else happens between the events: no allocation, cloning or host synchronisation (the
  events are created before the loop; one synchronize at the end reads them all).
- `time_callable_cudagraph`: capture many calls of `fn` in one CUDA graph and time replays, the
  `do_bench_cudagraph` recipe. A graph launches all its kernels with one host call, so this is the
  kernel time without launch overhead; for kernels under ~20 us the difference from `time_callable`
  is the launch overhead. Capture failure is a result, not an exception (a solution that
  synchronises inside `solve` cannot be captured, and the report should say so rather than crash).
- `time_interleaved`: two callables timed A B A B ... in one process, the order inside each
  pair alternating, so drift (clocks, temperature) hits both equally. Sample i of A and
  sample i of B form a pair for `statistics.speedup_interval`.

`fn` must enqueue its GPU work on torch's current stream (a CUDA solution receives it as its
`cudaStream_t`); work launched on another stream escapes the events. A `fn` that
synchronises the host inside the timed region still works, and its time then includes the
host round trip: benchmark.py warns about that.

Timing starts only when the GPU reaches the start event. If the host enqueues `fn` more
slowly than the GPU runs the flush, the GPU idles between the events and the launch
overhead lands in the sample: that is what the CUDA-graph timing shows separately.

Needs a CUDA build of torch and a GPU: without one every timer raises EnvironmentFault
(exit 4). The statistics over the samples live in `statistics.py` and run anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.measure import statistics

TimingMethod = Literal["events", "cuda_graph", "cuda_graph_differential"]
# "clean": write a buffer of 2x L2 then read it back. The write evicts everything (including
# the previous call's dirty outputs, whose write-back then happens outside the timed region);
# the read-back replaces the flush's own dirty lines with clean ones, so the timed call does
# not pay for writing the flush buffer back to DRAM either. This is the state Nsight Compute's
# default `--cache-control all` gives (caches flushed and invalidated), which the issue-3
# targets compare against.
# "write": only the write, as triton.testing.do_bench does (`cache.zero_()`); the L2 is then
# full of dirty flush lines whose write-back competes with the timed kernel's own traffic.
# Kept so a run can be compared with do_bench figures like for like.
FlushMode = Literal["clean", "write"]

DEFAULT_WARMUP_MS = 25.0  # triton.testing.do_bench default (`warmup=25`)
DEFAULT_REP_MS = 100.0  # triton.testing.do_bench default (`rep=100`)
# At least 10 reps, so p20 and p80 fall between distinct samples (slow kernels overrun the budget).
MIN_REPS = 10
MAX_REPS = 1000  # for microsecond kernels: 1000 samples pin the median; each rep also costs a flush
ESTIMATE_CALLS = 5  # calls timed to estimate the per-call time, as in do_bench

FLUSH_L2_MULTIPLE = 2  # flush buffer = 2x the L2 size, so no line of the previous call survives
FALLBACK_FLUSH_BYTES = 256 * 1024**2  # when the driver reports no L2 size: triton's 256 MB buffer

# The issue-3 threshold below which a CUDA-graph timing is also reported, because launch
# overhead (a few microseconds per launch) becomes a visible fraction of the kernel time.
CUDA_GRAPH_SUGGESTED_BELOW_US = 20.0
GRAPH_WARMUP_CALLS = 3  # torch's CUDA-graph docs warm up a few iterations on the side stream
# do_bench_cudagraph default (`rep=20`): GPU time of one graph, its flushes included (sized by the call
# alone, a 44 us layernorm's graphs ran 3x that and its kernel time took 5.3 s on an H100).
GRAPH_REP_MS = 20.0
GRAPH_REPLAYS = 20  # do_bench_cudagraph replays 10 times; 20 gives steadier p20/p80
MAX_CALLS_PER_GRAPH = 1000  # bounds capture time and graph memory for sub-microsecond kernels

# Interleaved comparisons feed a bootstrap interval of the median ratio, which needs a few
# dozen pairs before its width means anything.
MIN_INTERLEAVED_PAIRS = 30
DEFAULT_INTERLEAVED_REP_MS = 200.0  # two callables per pair: twice do_bench's budget


@dataclass
class TimingSamples:
    """Per-call times of one callable, in microseconds, and how they were taken.

    `samples_us` holds one value per timed rep; for `method == "cuda_graph"` each value is a
    replay's time divided by `calls_per_sample`. `warmup` counts the untimed calls made
    before the first sample. `flush_l2` says whether the L2 was flushed before every timed
    call (never for CUDA-graph timing: the graph holds only `fn`).
    """

    samples_us: list[float]
    warmup: int
    reps: int
    flush_l2: bool
    method: TimingMethod
    calls_per_sample: int = 1
    flush_mode: FlushMode | None = None
    flush_bytes: int = 0
    estimate_us: float | None = None
    interleaved: bool = False
    device_name: str | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> statistics.SampleSummary:
        return statistics.summarize(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def p20_us(self) -> float:
        return statistics.percentile(self.samples_us, 20.0)

    @property
    def p80_us(self) -> float:
        return statistics.percentile(self.samples_us, 80.0)

    @property
    def min_us(self) -> float:
        return float(min(self.samples_us))

    @property
    def mean_us(self) -> float:
        return float(sum(self.samples_us) / len(self.samples_us))

    @property
    def relative_spread(self) -> float:
        return statistics.relative_spread(self.samples_us)

    def to_dict(self) -> dict:
        payload = asdict(self)
        payload["ok"] = True
        payload.update(
            median_us=self.median_us,
            p20_us=self.p20_us,
            p80_us=self.p80_us,
            min_us=self.min_us,
            mean_us=self.mean_us,
            relative_spread=self.relative_spread,
        )
        return payload


@dataclass(frozen=True)
class GraphCaptureFailure:
    """`fn` could not be captured in a CUDA graph; `reason` is the error torch or CUDA gave.

    Typical causes: `fn` synchronises (cudaDeviceSynchronize, .item(), .cpu()), launches on
    the legacy default stream instead of the current one, or allocates with cudaMalloc.
    """

    reason: str
    method: TimingMethod = "cuda_graph"

    @property
    def message(self) -> str:
        return f"graph capture failed: {self.reason}"

    def to_dict(self) -> dict:
        return {"ok": False, "method": self.method, "error": self.message}


def should_report_cuda_graph(median_us: float) -> bool:
    """Whether a kernel is short enough that its CUDA-graph timing belongs in the report."""
    return median_us < CUDA_GRAPH_SUGGESTED_BELOW_US


def _torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover - torch is a dependency
        raise EnvironmentFault(
            "torch is not installed, so nothing can be timed", hint="pip install torch (a CUDA build)"
        ) from error
    return torch


def cuda_device(device: Any = None, purpose: str = "kernels cannot be timed"):
    """The torch.device to work on; EnvironmentFault (exit 4) when torch sees no CUDA GPU.

    `purpose` ends the message: "no CUDA GPU is visible to torch on this machine, so <purpose>".
    """
    torch = _torch()
    if not torch.cuda.is_available():
        raise EnvironmentFault(
            f"no CUDA GPU is visible to torch on this machine, so {purpose}",
            hint="run this on the GPU machine; `nvidia-smi` should list a GPU and "
            "`python -c 'import torch; print(torch.version.cuda)'` should not print None",
        )
    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    resolved = torch.device(device)
    if resolved.type != "cuda":
        raise UsageError(f"timers need a CUDA device, got {resolved}")
    if resolved.index is None:
        resolved = torch.device("cuda", torch.cuda.current_device())
    return resolved


def _check_counts(low: int, high: int, what: str) -> None:
    if low < 1 or high < low:
        raise UsageError(f"need 1 <= min_{what} <= max_{what}, got {low} and {high}")


def _count_for(budget_ms: float, per_call_us: float, low: int, high: int) -> int:
    """How many calls fill `budget_ms` at `per_call_us` each, clamped to [low, high]."""
    per_call_us = max(per_call_us, 1e-3)  # an event pair never reads 0 for real work, but guard
    return int(min(max(math.ceil(budget_ms * 1000.0 / per_call_us), low), high))


def l2_cache_bytes(device: Any = None) -> int:
    """The L2 size the driver reports for `device`, or 0 when it reports none."""
    torch = _torch()
    properties = torch.cuda.get_device_properties(cuda_device(device))
    return int(getattr(properties, "L2_cache_size", 0) or 0)


class _L2Flusher:
    """Evicts the L2 by writing (and, in "clean" mode, reading back) a buffer of 2x its size.

    The buffer and the reduction's output are allocated once, here, so a flush enqueues two
    kernels and allocates nothing.
    """

    def __init__(self, torch, device, mode: FlushMode):
        if mode not in ("clean", "write"):
            raise UsageError(f"flush_mode must be 'clean' or 'write', got {mode!r}")
        l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
        flush_bytes = FLUSH_L2_MULTIPLE * l2_bytes if l2_bytes > 0 else FALLBACK_FLUSH_BYTES
        elements = -(-flush_bytes // 4)
        self.torch = torch
        self.mode = mode
        self.buffer = torch.empty(elements, dtype=torch.int32, device=device)
        self.sink = torch.empty((), dtype=torch.int64, device=device)
        self.nbytes = elements * 4

    def __call__(self) -> None:
        self.buffer.zero_()
        if self.mode == "clean":
            self.torch.sum(self.buffer, dim=0, out=self.sink)


def _preceded_by(before: Callable[[], Any] | None, flush: Callable[[], None]) -> Callable[[], None]:
    """`before` then the flush: whatever `before` writes is evicted from the L2 again."""
    if before is None:
        return flush

    def step() -> None:
        before()
        flush()

    return step


def _no_flush() -> None:
    return None


def _make_flush(torch, device, flush_l2: bool, mode: FlushMode) -> tuple[Callable[[], None], int]:
    if not flush_l2:
        return _no_flush, 0
    flusher = _L2Flusher(torch, device, mode)
    return flusher, flusher.nbytes


def _estimate_call_us(torch, fn: Callable[[], Any], flush: Callable[[], None], stream, calls: int) -> float:
    """Median per-call time of `calls` calls, each flushed first and timed by its own events."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    for start, end in zip(starts, ends, strict=True):
        flush()
        start.record(stream)
        fn()
        end.record(stream)
    torch.cuda.synchronize(stream.device)
    return statistics.median([start.elapsed_time(end) * 1000.0 for start, end in zip(starts, ends, strict=True)])


def time_callable(
    fn: Callable[[], Any],
    *,
    warmup_ms: float = DEFAULT_WARMUP_MS,
    rep_ms: float = DEFAULT_REP_MS,
    min_reps: int = MIN_REPS,
    max_reps: int = MAX_REPS,
    flush_l2: bool = True,
    flush_mode: FlushMode = "clean",
    device: Any = None,
    before_each: Callable[[], Any] | None = None,
) -> TimingSamples:
    """Time `fn` with CUDA events, the L2 flushed before every call; samples in microseconds.

    Args:
        fn: a callable with no arguments that enqueues the work on torch's current stream.
            Build its inputs (and preallocated outputs) before calling this: whatever `fn`
            itself does is timed.
        warmup_ms: GPU time to spend on untimed calls first (clock ramp-up, caches, JIT).
        rep_ms: GPU time to spend on timed calls; the rep count is rep_ms / estimated call
            time, clamped to [min_reps, max_reps].
        flush_l2: flush the L2 before every call (warm-up and timed calls alike).
        flush_mode: "clean" (default) or "write"; see FlushMode.
        device: the CUDA device (default: the current one).
        before_each: enqueued before every call's flush, outside the timed region; the
            benchmark poisons the outputs there, so the outputs left after timing are the
            last timed call's own (a kernel that skips work on repeat calls shows up).

    Raises:
        EnvironmentFault: no CUDA GPU.
    """
    _check_counts(min_reps, max_reps, "reps")
    torch = _torch()
    device = cuda_device(device)
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        flush, flush_bytes = _make_flush(torch, device, flush_l2, flush_mode)
        flush = _preceded_by(before_each, flush)
        # The first call pays for lazy initialisation (module load, JIT, cuBLAS handles):
        # keep it out of both the estimate and the samples.
        fn()
        torch.cuda.synchronize(device)
        estimate_us = _estimate_call_us(torch, fn, flush, stream, ESTIMATE_CALLS)
        warmup = _count_for(warmup_ms, estimate_us, 1, max_reps)
        reps = _count_for(rep_ms, estimate_us, min_reps, max_reps)

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for _ in range(warmup):
            flush()
            fn()
        for start, end in zip(starts, ends, strict=True):
            flush()
            start.record(stream)  # enqueued after the flush: only fn lies between the events
            fn()
            end.record(stream)
        torch.cuda.synchronize(device)
        samples_us = [start.elapsed_time(end) * 1000.0 for start, end in zip(starts, ends, strict=True)]
        name = torch.cuda.get_device_name(device)
    return TimingSamples(
        samples_us=samples_us,
        warmup=1 + ESTIMATE_CALLS + warmup,
        reps=reps,
        flush_l2=flush_l2,
        method="events",
        flush_mode=flush_mode if flush_l2 else None,
        flush_bytes=flush_bytes,
        estimate_us=estimate_us,
        device_name=name,
    )


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
    torch = _torch()
    device = cuda_device(device)
    with torch.cuda.device(device):
        current = torch.cuda.current_stream(device)
        side = _warm_up_for_capture(torch, device, current, fn)

        if calls_per_graph is None:
            estimate_us = _estimate_call_us(torch, fn, _no_flush, current, ESTIMATE_CALLS)
            calls_per_graph = _count_for(rep_ms, estimate_us, 1, max_calls_per_graph)
        else:
            estimate_us = None

        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=side):
                for _ in range(calls_per_graph):
                    fn()
        except Exception as error:  # capture failure is a result, reported by the caller
            _settle_after_failed_capture(torch, device)
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
    torch = _torch()
    device = cuda_device(device)
    with torch.cuda.device(device):
        current = torch.cuda.current_stream(device)
        flush, flush_bytes = _make_flush(torch, device, True, flush_mode)
        step = _preceded_by(before_each, flush)
        side = _warm_up_for_capture(torch, device, current, lambda: (step(), fn()))
        estimate_us = _estimate_call_us(torch, fn, step, current, ESTIMATE_CALLS)
        iteration_us = _estimate_call_us(torch, lambda: (step(), fn()), _no_flush, current, ESTIMATE_CALLS)
        calls = _count_for(rep_ms, iteration_us, 1, max_calls_per_graph)
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
            _settle_after_failed_capture(torch, device)
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


def _warm_up_for_capture(torch, device, current, calls: Callable[[], Any]):
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


def _settle_after_failed_capture(torch, device) -> None:
    """Drain the device after a failed capture so later timings start from a clean state."""
    try:
        torch.cuda.synchronize(device)
    except Exception:  # the capture's own error may resurface here; it is already reported
        pass


def time_interleaved(
    fn_a: Callable[[], Any],
    fn_b: Callable[[], Any],
    *,
    warmup_ms: float = DEFAULT_WARMUP_MS,
    rep_ms: float = DEFAULT_INTERLEAVED_REP_MS,
    min_pairs: int = MIN_INTERLEAVED_PAIRS,
    max_pairs: int = MAX_REPS,
    flush_l2: bool = True,
    flush_mode: FlushMode = "clean",
    device: Any = None,
    before_a: Callable[[], Any] | None = None,
    before_b: Callable[[], Any] | None = None,
) -> tuple[TimingSamples, TimingSamples]:
    """Time two callables alternately in this process: pairs A B, B A, A B, ...

    Each call is flushed and timed by its own events, exactly as in `time_callable`. Pair i
    runs A first when i is even and B first when i is odd, so a systematic first-in-pair
    effect (a clock still ramping, the other kernel's tail) cancels over the run. Give both
    callables the same input tensors.

    Returns:
        (samples of fn_a, samples of fn_b), with equal counts; sample i of each belongs to
        pair i, ready for `statistics.speedup_interval(samples_a, samples_b)` (paired).
    """
    _check_counts(min_pairs, max_pairs, "pairs")
    torch = _torch()
    device = cuda_device(device)
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        flush, flush_bytes = _make_flush(torch, device, flush_l2, flush_mode)
        # Each callable's own hook (the benchmark poisons that version's outputs) runs before
        # its flush only: poisoning the other's outputs would erase the result of its call.
        steps = {id(fn_a): _preceded_by(before_a, flush), id(fn_b): _preceded_by(before_b, flush)}
        fn_a()
        fn_b()
        torch.cuda.synchronize(device)
        estimate_a = _estimate_call_us(torch, fn_a, steps[id(fn_a)], stream, ESTIMATE_CALLS)
        estimate_b = _estimate_call_us(torch, fn_b, steps[id(fn_b)], stream, ESTIMATE_CALLS)
        warmup_pairs = _count_for(warmup_ms, estimate_a + estimate_b, 1, max_pairs)
        pairs = _count_for(rep_ms, estimate_a + estimate_b, min_pairs, max_pairs)

        starts_a = [torch.cuda.Event(enable_timing=True) for _ in range(pairs)]
        ends_a = [torch.cuda.Event(enable_timing=True) for _ in range(pairs)]
        starts_b = [torch.cuda.Event(enable_timing=True) for _ in range(pairs)]
        ends_b = [torch.cuda.Event(enable_timing=True) for _ in range(pairs)]
        for index in range(warmup_pairs):
            for fn in (fn_a, fn_b) if index % 2 == 0 else (fn_b, fn_a):
                steps[id(fn)]()
                fn()
        for index in range(pairs):
            slot_a = (fn_a, starts_a[index], ends_a[index])
            slot_b = (fn_b, starts_b[index], ends_b[index])
            for fn, start, end in (slot_a, slot_b) if index % 2 == 0 else (slot_b, slot_a):
                steps[id(fn)]()
                start.record(stream)
                fn()
                end.record(stream)
        torch.cuda.synchronize(device)
        samples_a = [start.elapsed_time(end) * 1000.0 for start, end in zip(starts_a, ends_a, strict=True)]
        samples_b = [start.elapsed_time(end) * 1000.0 for start, end in zip(starts_b, ends_b, strict=True)]
        name = torch.cuda.get_device_name(device)
    warmup_calls = 1 + ESTIMATE_CALLS + warmup_pairs
    common = dict(
        warmup=warmup_calls,
        reps=pairs,
        flush_l2=flush_l2,
        method="events",
        flush_mode=flush_mode if flush_l2 else None,
        flush_bytes=flush_bytes,
        interleaved=True,
        device_name=name,
    )
    return (
        TimingSamples(samples_us=samples_a, estimate_us=estimate_a, **common),
        TimingSamples(samples_us=samples_b, estimate_us=estimate_b, **common),
    )
