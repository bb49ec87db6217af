"""WRONG (hang): after writing out, every program spins on a flag that nobody ever sets.

The checker must kill it after its timeout and report a solution fault (exit 3) of kind
timeout, while the parent survives. On a GPU run_kernel returns at once (launches are
asynchronous) and the wait happens at the next synchronisation; under TRITON_INTERPRET=1
run_kernel itself never returns, spinning one CPU core.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def vector_add_then_wait_kernel(x_ptr, y_ptr, out_ptr, n, flag_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
    # The bug: wait for a release that never comes. The volatile load is re-issued every
    # trip, so the compiler can neither hoist it nor prove the loop finite.
    released = tl.load(flag_ptr, volatile=True)
    while released == 0:
        released = tl.load(flag_ptr, volatile=True)


def run_kernel(x, y, out, n, **_):
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)  # stays 0 forever
    vector_add_then_wait_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, flag, BLOCK=BLOCK)
