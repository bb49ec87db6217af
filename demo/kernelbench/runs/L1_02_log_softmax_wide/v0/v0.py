"""v0: log_softmax in one Triton kernel, one program per row, in chunks: an online max and sum, then a write pass.

Reads each row twice (statistics, then output), writes it once.

The row length is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    running_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    running_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        new_max = tl.maximum(running_max, x)
        # lanes that have seen only -inf keep a sum of 0 (exp(-inf - -inf) would be NaN)
        rescale = tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max))
        added = tl.where(new_max == -float("inf"), 0.0, tl.exp(x - new_max))
        running_sum = running_sum * rescale + added
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    lane_scale = tl.where(running_max == -float("inf"), 0.0, tl.exp(running_max - row_max))
    log_sum = tl.log(tl.sum(running_sum * lane_scale, axis=0))
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, x - row_max - log_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        block = min(triton.next_power_of_2(cols), 2048)
        log_softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=8)
        return y
