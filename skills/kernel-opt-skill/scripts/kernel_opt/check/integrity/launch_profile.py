"""The GPU side of the launch check: one call under the torch profiler, fenced on the caller's stream.

On the caller's stream: a spin kernel long enough to outlast the call's host side (the fence),
the call, a tiny spin kernel as soon as it returns (the marker), then a full synchronize. The
profiler (Kineto over CUPTI, GPU activity only) gives every kernel, copy and memset with its
stream and GPU times; launch_rules.py judges them. The first profiler session in a process
starts CUPTI (6.5 s on the probe's H100, torch 2.11); later ones take milliseconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from kernel_opt.check.integrity.launch_rules import GpuActivity

# The fence lasts at least FENCE_MIN_US and FENCE_HOST_MULTIPLE times the call's host-side time
# on an earlier call, so that a side stream launched late in a slow host path still starts
# while the fence runs. torch.cuda._sleep counts SM clock cycles: 2e6 cycles took 1011 us on
# the H100 (1.98 GHz); cycles are sized for 3 GHz, above any NVIDIA SM clock, so the fence is
# never shorter than intended (1.5 ms on the H100).
FENCE_MIN_US = 1000.0
FENCE_HOST_MULTIPLE = 4.0
FENCE_MAX_US = 5_000_000.0  # a call whose host side takes seconds gets a 5 s fence, no more
CYCLES_PER_US_BOUND = 3000.0
MARKER_CYCLES = 1_000  # the marker: about 0.5 us of spinning, enough to be a kernel of its own
# GPU-side records that are no work of the solution's: waits enqueued on a stream (Kineto records
# them only when asked), CUPTI's own overhead (seen as "Activity Buffer Request" in the probe's
# CPU+GPU table), ranges of user annotations. torch 2.13 tells them by activity type; torch 2.11,
# which has no activity_type(), by name.
_NOT_WORK = ("event sync", "stream sync", "stream wait event", "context sync", "activity buffer request")
_NOT_WORK_TYPES = ("sync", "runtime", "driver", "overhead", "annotation")


def fence_cycles(call_host_s: float) -> int:
    """Spin cycles for a fence of max(FENCE_MIN_US, FENCE_HOST_MULTIPLE x the call's host time)."""
    target_us = min(FENCE_MAX_US, max(FENCE_MIN_US, FENCE_HOST_MULTIPLE * call_host_s * 1e6))
    return int(math.ceil(target_us * CYCLES_PER_US_BOUND))


def outlasted_fence(call_host_s: float, fenced_for_host_s: float) -> bool:
    """Whether a call's host side ran longer than the shortest fence sized for `fenced_for_host_s` can last: then a
    side-stream launch late in the call may have started after the fence ended, unseen."""
    return call_host_s * 1e6 > fence_cycles(fenced_for_host_s) / CYCLES_PER_US_BOUND


def activity_of(event: Any) -> GpuActivity | None:
    """A Kineto event as a GpuActivity; None for what is not GPU work (CPU events, waits)."""
    if not str(event.device_type()).endswith("CUDA"):
        return None
    name = event.name()
    kind = getattr(event, "activity_type", None)  # torch 2.13 has it, 2.11 does not
    kind_text = str(kind()).lower() if callable(kind) else ""
    if name.lower() in _NOT_WORK or any(word in kind_text for word in _NOT_WORK_TYPES):
        return None
    return GpuActivity(name=name, stream=int(event.device_resource_id()), start_ns=int(event.start_ns()),
                       duration_ns=int(event.duration_ns()))


def profile_fenced_call(call: Callable[[Callable[[], None]], None], caller_stream: Any,
                        call_host_s: float) -> tuple[list[GpuActivity], float]:
    """Run `call(marker)` fenced on `caller_stream` under the profiler; its GPU activity and host time (s).

    `call` runs the solution and calls `marker()` as soon as the solution returns (before it
    synchronizes). Exceptions from the call propagate; the profiler's own failures do too, and
    the caller reports them as "not profiled".
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    sleep, synchronize = torch.cuda._sleep, torch.cuda.synchronize  # the originals, whatever the call does
    cycles = fence_cycles(call_host_s)
    synchronize()
    host = {"s": 0.0}

    def marker() -> None:
        host["s"] = time.perf_counter() - started
        sleep(MARKER_CYCLES)

    with profile(activities=[ProfilerActivity.CUDA]) as profiler, torch.cuda.stream(caller_stream):
        sleep(cycles)
        started = time.perf_counter()
        call(marker)
        synchronize()
    events = profiler.profiler.kineto_results.events()
    activities = [activity for activity in map(activity_of, events) if activity is not None]
    return activities, host["s"]
