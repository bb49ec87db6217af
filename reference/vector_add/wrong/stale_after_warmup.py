"""WRONG (stale after warm-up): correct for its first 64 calls in a process, then skips the launch.

Stands in for a kernel that goes wrong only under repetition (state that is never reset, a
result memoised once "warm"). correctness_check makes at most 18 calls in its process
(6 shapes x 3 seeds), so it PASSES there (exit 0): that check alone cannot see this bug.
What must report it: the benchmark, which poisons the outputs before every timed call and
compares what the last timed call left: FAIL (exit 1), outputs of the timed calls all NaN.
"""

import triton
import triton.language as tl

BLOCK = 1024
HONEST_CALLS = 64

_calls = 0


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    global _calls
    _calls += 1
    if _calls > HONEST_CALLS:  # the bug: assumes nothing changes once warm
        return
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
