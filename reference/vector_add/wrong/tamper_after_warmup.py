"""WRONG (timer tampering after a warm-up): correct, until its 60th call replaces torch.cuda.Event.elapsed_time.

correctness_check makes at most 29 calls in its process (6 shapes x 3 seeds, the launch check's
warm-up and profiled calls, then the rounding probe's 9: once as it is, then x and y each rounded
four ways), so it never sees the patch: PASS (exit 0). benchmark.py times hundreds of calls in
its own process, and its child checks the primitives again after every timing, before it records
the time: exit 3, verdict solution_error, kind `tampering`, "the solution replaced
torch.cuda.Event.elapsed_time (found after the timed calls)", and no time in the record.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
TAMPER_AT_CALL = 60
_calls = 0


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    global _calls
    _calls += 1
    if _calls == TAMPER_AT_CALL:
        torch.cuda.Event.elapsed_time = lambda self, end_event: 0.001  # the cheat, once warmed up
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
