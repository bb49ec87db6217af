"""WRONG (unwritten element): never writes out[n - 1]; every other element is right.

An off-by-one mask (`offsets < n - 1`). The checker must FAIL it (exit 1): out[n - 1] still
holds the NaN the checker filled in, a NaN where the reference has none, at every shape
(at n=1 nothing at all is written).
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n - 1  # the bug: should be offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def run_kernel(x, y, out, n, **_):
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
