"""WRONG (padding in the sum): pads the row to BLOCK with 0.0 instead of -inf.

The row is rounded up to a power of two; the padding lanes are masked on load and store
but take part in the max and the sum, each adding exp(0 - max) to the denominator. Right
whenever D is a power of two (the default D=4096, and D=1 and D=128 in SHAPES). The checker
must FAIL it (exit 1) at D=127, 129 and 1000: every element comes out too small, by
28-42% at D=129, where 127 padding lanes join 129 real ones, by 0.3-1.5% at D=127 and 1000.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * D
    columns = tl.arange(0, BLOCK)
    mask = columns < D
    x = tl.load(x_ptr + row_start + columns, mask=mask, other=0.0)  # the bug: other=-inf
    numerator = tl.exp(x - tl.max(x, axis=0))
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row_start + columns, numerator / denominator, mask=mask)


def run_kernel(x, out, N, D, **_):
    block = triton.next_power_of_2(D)
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    softmax_kernel[(N,)](x, out, D, BLOCK=block, num_warps=num_warps)
