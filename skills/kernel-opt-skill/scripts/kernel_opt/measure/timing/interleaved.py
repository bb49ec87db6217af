"""Two callables timed alternately in one process (A B, B A, ...), for a paired comparison."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_opt.measure.timing.budget import (
    DEFAULT_WARMUP_MS,
    ESTIMATE_CALLS,
    MAX_REPS,
    check_counts,
    count_for,
    estimate_call_us,
)
from kernel_opt.measure.timing.gpu import cuda_device, torch_module
from kernel_opt.measure.timing.l2_flush import FlushMode, make_flush, preceded_by
from kernel_opt.measure.timing.samples import TimingSamples

# Interleaved comparisons feed a bootstrap interval of the median ratio, which needs a few
# dozen pairs before its width means anything.
MIN_INTERLEAVED_PAIRS = 30
DEFAULT_INTERLEAVED_REP_MS = 200.0  # two callables per pair: twice do_bench's budget


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
    check_counts(min_pairs, max_pairs, "pairs")
    torch = torch_module()
    device = cuda_device(device)
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        flush, flush_bytes = make_flush(torch, device, flush_l2, flush_mode)
        # Each callable's own hook (the benchmark poisons that version's outputs) runs before
        # its flush only: poisoning the other's outputs would erase the result of its call.
        steps = {id(fn_a): preceded_by(before_a, flush), id(fn_b): preceded_by(before_b, flush)}
        fn_a()
        fn_b()
        torch.cuda.synchronize(device)
        estimate_a = estimate_call_us(torch, fn_a, steps[id(fn_a)], stream, ESTIMATE_CALLS)
        estimate_b = estimate_call_us(torch, fn_b, steps[id(fn_b)], stream, ESTIMATE_CALLS)
        warmup_pairs = count_for(warmup_ms, estimate_a + estimate_b, 1, max_pairs)
        pairs = count_for(rep_ms, estimate_a + estimate_b, min_pairs, max_pairs)

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
