"""How many calls a timer makes: the per-call estimate, and the counts a time budget gives."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.measure import statistics

DEFAULT_WARMUP_MS = 25.0  # triton.testing.do_bench default (`warmup=25`)
DEFAULT_REP_MS = 100.0  # triton.testing.do_bench default (`rep=100`)
# At least 10 reps, so p20 and p80 fall between distinct samples (slow kernels overrun the budget).
MIN_REPS = 10
MAX_REPS = 1000  # for microsecond kernels: 1000 samples pin the median; each rep also costs a flush
ESTIMATE_CALLS = 5  # calls timed to estimate the per-call time, as in do_bench


def check_counts(low: int, high: int, what: str) -> None:
    """UsageError unless 1 <= low <= high: a timer needs at least one timed call."""
    if low < 1 or high < low:
        raise UsageError(f"need 1 <= min_{what} <= max_{what}, got {low} and {high}")


def count_for(budget_ms: float, per_call_us: float, low: int, high: int) -> int:
    """How many calls fill `budget_ms` at `per_call_us` each, clamped to [low, high]."""
    per_call_us = max(per_call_us, 1e-3)  # an event pair never reads 0 for real work, but guard
    return int(min(max(math.ceil(budget_ms * 1000.0 / per_call_us), low), high))


def estimate_call_us(torch, fn: Callable[[], Any], flush: Callable[[], None], stream, calls: int) -> float:
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
