"""WRONG (cached output): computes on its first call only; later calls return at once.

A cheat that makes a benchmark look fast: after the first call run_kernel skips the launch
and leaves whatever is in `out`. The checker fills outputs with NaN before every call, so
any second call in the same process leaves all-NaN output. What must report it:
- the benchmark's re-check after timing: FAIL (exit 1), outputs all NaN after the timed calls;
- correctness_check: FAIL (exit 1) if two calls (seeds or shapes) share one process; a
  checker that starts a fresh process for every call cannot see it, by design of this file.
"""

import triton
import triton.language as tl

BLOCK = 1024

_already_computed = False


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def run_kernel(x, y, out, n, **_):
    global _already_computed
    if _already_computed:  # the bug: assumes the inputs, and out, never change
        return
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    _already_computed = True
