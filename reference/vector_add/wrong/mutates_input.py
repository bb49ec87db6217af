"""WRONG (mutates input): out is exactly right, but the sum is also stored into x.

The checker must FAIL it (exit 1) and name input `x` as modified. Comparing outputs alone
would pass it; so would a reference that ran on the same (now overwritten) tensors.
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
    tl.store(x_ptr + offsets, x + y, mask=mask)  # the bug: scribbles over an input


def run_kernel(x, y, out, n, **_):
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
