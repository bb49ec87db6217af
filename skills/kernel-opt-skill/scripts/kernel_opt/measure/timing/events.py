"""Per-call time from CUDA events, the L2 flushed before every call: the `triton.testing.do_bench` recipe."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_opt.measure.timing.budget import (
    DEFAULT_REP_MS,
    DEFAULT_WARMUP_MS,
    ESTIMATE_CALLS,
    MAX_REPS,
    MIN_REPS,
    check_counts,
    count_for,
    estimate_call_us,
)
from kernel_opt.measure.timing.gpu import cuda_device, torch_module
from kernel_opt.measure.timing.l2_flush import FlushMode, make_flush, preceded_by
from kernel_opt.measure.timing.samples import TimingSamples


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
    check_counts(min_reps, max_reps, "reps")
    torch = torch_module()
    device = cuda_device(device)
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        flush, flush_bytes = make_flush(torch, device, flush_l2, flush_mode)
        flush = preceded_by(before_each, flush)
        # The first call pays for lazy initialisation (module load, JIT, cuBLAS handles):
        # keep it out of both the estimate and the samples.
        fn()
        torch.cuda.synchronize(device)
        estimate_us = estimate_call_us(torch, fn, flush, stream, ESTIMATE_CALLS)
        warmup = count_for(warmup_ms, estimate_us, 1, max_reps)
        reps = count_for(rep_ms, estimate_us, min_reps, max_reps)

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
