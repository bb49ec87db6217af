"""Row softmax in Triton, written the general way first: any row length, three passes.

One program per row walks the row in chunks of BLOCK columns three times: once for the max,
once for the sum of exponentials, once to write exp(x - max) / sum. Nothing is held between
passes, so any D works with a fixed block, at the price of reading each row three times
(the second and third reads come from L2 when the row is still there).
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def softmax_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
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
    softmax_kernel[(N,)](x, out, D, BLOCK=BLOCK, num_warps=4)
