"""RMSNorm in Triton, written from ref.py's PyTorch: v0, the simplest correct kernel.

One program per row with the whole row in one block, float32 math, one rounding at the
store, in the reference's order ((x * rstd) * weight). Padding lanes load 0, so they add
nothing to the sum of squares; the mean divides by the real N. The row is held in
registers, so very long rows spill on a GPU long before tl.arange's 2^20-element limit.
v5 (from v0; v1-v4 did not beat it): the weight is loaded together with the row, before the
sum of squares, so its L2 round trip overlaps the row's DRAM load and the reduction instead of
starting after the reduction's barrier; it stays bfloat16 in registers until the multiply.
"""

import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, weight_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * N
    columns = tl.arange(0, BLOCK)
    mask = columns < N
    x = tl.load(x_ptr + row_start + columns, mask=mask, other=0.0)
    weight = tl.load(weight_ptr + columns, mask=mask, other=0.0)  # issued before the reduction waits
    x = x.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row_start + columns, (x * rstd * weight.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=mask)


def run_kernel(x, weight, y, M, N, eps, **_):
    block = triton.next_power_of_2(N)
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    rmsnorm_kernel[(M,)](x, weight, y, N, eps, BLOCK=block, num_warps=num_warps)
