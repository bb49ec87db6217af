"""An honest ModelNew for L1_layer_norm: one Triton program per row, the row read three times (mean, variance,
then normalised, scaled by the weight and shifted by the bias), all in float32.

The LayerNorm is kept under the Model's name (`ln`), so its weight and bias are copied in by name, and
the kernel reads them. The row length is a constexpr, so the loop bounds are known when the kernel
compiles (and the Triton interpreter under NumPy 2.4 runs it, triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, weight_ptr, bias_ptr, y_ptr, eps, N_COLS: tl.constexpr, BLOCK: tl.constexpr):
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
        weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
        bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, (x - mean) * inverse_std * weight + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)  # the Model's name: its weights are copied in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_cols = self.ln.weight.numel()
        block = min(4096, triton.next_power_of_2(n_cols))
        layer_norm_kernel[(x.numel() // n_cols,)](x, self.ln.weight, self.ln.bias, y, self.ln.eps, N_COLS=n_cols,
                                                  BLOCK=block, num_warps=8)
        return y
