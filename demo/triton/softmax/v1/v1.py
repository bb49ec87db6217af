"""Row softmax in Triton: one program per row, any row length.

Rows up to MAX_SINGLE_PASS columns are read once: the whole row sits in one block (padding
lanes hold -inf, so they lose the max and add exp(-inf) = 0 to the sum), and the max, the sum
and the output all come from those registers. Longer rows fall back to v0's three passes over
BLOCK-column chunks, which hold nothing between passes.
v1: the row read once into registers when it fits (v0: three chunked passes for every row).
"""

import triton
import triton.language as tl

BLOCK = 1024  # chunk of the three-pass fallback
MAX_SINGLE_PASS = 8192  # 64 fp32 per thread at 4 warps: past this the row would spill


@triton.jit
def softmax_row_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * D
    columns = tl.arange(0, BLOCK)
    mask = columns < D
    x = tl.load(x_ptr + row_start + columns, mask=mask, other=-float("inf"))
    numerator = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row_start + columns, numerator / tl.sum(numerator, axis=0), mask=mask)


@triton.jit
def softmax_chunked_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * D
    columns = tl.arange(0, BLOCK)
    # Per-lane running max and sum, reduced across lanes after each pass.
    lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in range(0, D, BLOCK):
        mask = start + columns < D
        x = tl.load(x_ptr + row_start + start + columns, mask=mask, other=-float("inf"))
        lane_max = tl.maximum(lane_max, x)
    row_max = tl.max(lane_max, axis=0)
    lane_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, D, BLOCK):
        mask = start + columns < D
        x = tl.load(x_ptr + row_start + start + columns, mask=mask, other=-float("inf"))
        lane_sum += tl.exp(x - row_max)  # padding: exp(-inf) = 0
    row_sum = tl.sum(lane_sum, axis=0)
    for start in range(0, D, BLOCK):
        mask = start + columns < D
        x = tl.load(x_ptr + row_start + start + columns, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row_start + start + columns, tl.exp(x - row_max) / row_sum, mask=mask)


def run_kernel(x, out, N, D, **_):
    if D <= MAX_SINGLE_PASS:
        softmax_row_kernel[(N,)](x, out, D, BLOCK=triton.next_power_of_2(D), num_warps=4)
    else:
        softmax_chunked_kernel[(N,)](x, out, D, BLOCK=BLOCK, num_warps=4)
