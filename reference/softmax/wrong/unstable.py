"""WRONG (unstable): softmax without subtracting the row max, exp(x) / sum(exp(x)).

Mathematically equal, and right on the plain N(0, 1) inputs of the default shape; but
exp(x) overflows float32 to inf above x = 88.7, and inf / inf is NaN. The checker must
FAIL it (exit 1) on the SHAPES entry with scale=100 (NaN where the reference has none),
and on every shape when run with --scale=100.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * D
    columns = tl.arange(0, BLOCK)
    mask = columns < D
    x = tl.load(x_ptr + row_start + columns, mask=mask, other=-float("inf"))
    numerator = tl.exp(x)  # the bug: should be tl.exp(x - tl.max(x, axis=0))
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row_start + columns, numerator / denominator, mask=mask)


def run_kernel(x, out, N, D, **_):
    block = triton.next_power_of_2(D)
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    softmax_kernel[(N,)](x, out, D, BLOCK=block, num_warps=num_warps)
