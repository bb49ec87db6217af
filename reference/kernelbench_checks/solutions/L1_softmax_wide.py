"""An honest ModelNew for L1_softmax_wide: one Triton program per row, three passes over it (max, sum, write).

The row length is a constexpr, so the loop bounds are known when the kernel compiles (and the Triton
interpreter under NumPy 2.4 runs it, triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N_COLS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * N_COLS, y_ptr + row * N_COLS
    largest = tl.full((BLOCK,), -float("inf"), dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        largest = tl.maximum(largest, tl.load(x_row + cols, mask=cols < N_COLS, other=-float("inf")))
    row_max = tl.max(largest, axis=0)
    partial = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        partial += tl.exp(tl.load(x_row + cols, mask=cols < N_COLS, other=-float("inf")) - row_max)
    denominator = tl.sum(partial, axis=0)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N_COLS, other=-float("inf"))
        tl.store(y_row + cols, tl.exp(x - row_max) / denominator, mask=cols < N_COLS)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, y, N_COLS=cols, BLOCK=min(4096, triton.next_power_of_2(cols)), num_warps=8)
        return y
