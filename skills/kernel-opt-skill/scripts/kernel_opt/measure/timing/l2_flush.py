"""The L2 flush every timer runs before a timed call, outside the timed region."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from kernel_opt.core.errors import UsageError
from kernel_opt.measure.timing.gpu import cuda_device, torch_module

# "clean": write a buffer of 2x L2 then read it back. The write evicts everything (including
# the previous call's dirty outputs, whose write-back then happens outside the timed region);
# the read-back replaces the flush's own dirty lines with clean ones, so the timed call does
# not pay for writing the flush buffer back to DRAM either. This is the state Nsight Compute's
# default `--cache-control all` gives (caches flushed and invalidated), which the measurement
# targets in docs/measurement.md compare against.
# "write": only the write, as triton.testing.do_bench does (`cache.zero_()`); the L2 is then
# full of dirty flush lines whose write-back competes with the timed kernel's own traffic.
# Kept so a run can be compared with do_bench figures like for like.
FlushMode = Literal["clean", "write"]

FLUSH_L2_MULTIPLE = 2  # flush buffer = 2x the L2 size, so no line of the previous call survives
FALLBACK_FLUSH_BYTES = 256 * 1024**2  # when the driver reports no L2 size: triton's 256 MB buffer


def l2_cache_bytes(device: Any = None) -> int:
    """The L2 size the driver reports for `device`, or 0 when it reports none."""
    torch = torch_module()
    properties = torch.cuda.get_device_properties(cuda_device(device))
    return int(getattr(properties, "L2_cache_size", 0) or 0)


class L2Flusher:
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


def preceded_by(before: Callable[[], Any] | None, flush: Callable[[], None]) -> Callable[[], None]:
    """`before` then the flush: whatever `before` writes is evicted from the L2 again."""
    if before is None:
        return flush

    def step() -> None:
        before()
        flush()

    return step


def no_flush() -> None:
    return None


def make_flush(torch, device, flush_l2: bool, mode: FlushMode) -> tuple[Callable[[], None], int]:
    """The flush to run before each call (a no-op when `flush_l2` is off) and its buffer's size in bytes."""
    if not flush_l2:
        return no_flush, 0
    flusher = L2Flusher(torch, device, mode)
    return flusher, flusher.nbytes
