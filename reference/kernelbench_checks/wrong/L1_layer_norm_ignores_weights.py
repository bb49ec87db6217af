"""Cheats on L1_layer_norm: normalises each row and never applies the LayerNorm's weight and bias.

It keeps the LayerNorm under the Model's name, so the weights are copied in, and never reads them.
At KernelBench's seed-42 weights (ones and zeros) it gives the reference's output for every input
and passes every case, with or without --kernelbench-tolerances. The re-drawn weights check must
FAIL it (exit 1), naming `ln.weight` (and `ln.bias`) as weights the output does not follow.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(x_ptr, y_ptr, eps, N_COLS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * N_COLS, y_ptr + row * N_COLS
    partial = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        partial += tl.load(x_row + cols, mask=cols < N_COLS, other=0.0)
    mean = tl.sum(partial, axis=0) / N_COLS
    partial = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N_COLS, other=0.0)
        centred = tl.where(cols < N_COLS, x - mean, 0.0)
        partial += centred * centred
    inverse_std = 1.0 / tl.sqrt(tl.sum(partial, axis=0) / N_COLS + eps)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N_COLS
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, (x - mean) * inverse_std, mask=mask)  # no weight, no bias


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_cols = self.ln.weight.numel()
        block = min(4096, triton.next_power_of_2(n_cols))
        normalize_kernel[(x.numel() // n_cols,)](x, y, self.ln.eps, N_COLS=n_cols, BLOCK=block, num_warps=8)
        return y
