"""WRONG (precision downgrade: a half-precision intermediate): float32 softmax, exponentials kept in float16.

Identical to good/softmax.py except that exp(x - max) is rounded to float16 (10 mantissa bits)
before it is summed and divided, as a kernel staging its numerators in half precision to save
registers or shared memory would. Every output then carries a relative error up to 2^-11
(about 4.9e-4), far above the float32 floor (1e-5): the checker must FAIL it (exit 1), on a
GPU and under the Triton interpreter alike.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * D
    columns = tl.arange(0, BLOCK)
    mask = columns < D
    x = tl.load(x_ptr + row_start + columns, mask=mask, other=-float("inf"))
    numerator = tl.exp(x - tl.max(x, axis=0)).to(tl.float16).to(tl.float32)  # the downgrade
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row_start + columns, numerator / denominator, mask=mask)


def run_kernel(x, out, N, D, **_):
    block = triton.next_power_of_2(D)
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    softmax_kernel[(N,)](x, out, D, BLOCK=block, num_warps=num_warps)
