"""v2 (change vs v0: num_warps 8 -> 16 for the one-row program, as Inductor picks for a 4096-wide row: 8 floats
per thread per input instead of 16, 32 registers instead of 40, so 4 programs of 16 warps fill all 64 warp slots
of an SM instead of 6 programs of 8 warps filling 48).

v0: residual add and LayerNorm in one Triton kernel, one program per row held in registers: the sum, its mean,
the variance about the mean (two passes over registers, not over memory), then the affine; one read of each
input, one write.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layer_norm_kernel(x_ptr, residual_ptr, weight_ptr, bias_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = (tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
         + tl.load(residual_ptr + row * n_cols + cols, mask=mask, other=0.0))
    mean = tl.sum(h, axis=0) / n_cols
    centered = tl.where(mask, h - mean, 0.0)
    variance = tl.sum(centered * centered, axis=0) / n_cols
    normalized = centered * (1.0 / tl.sqrt(variance + eps))
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, normalized * weight + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=eps)  # weight and bias copied from the Model by name

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        y = torch.empty_like(x)
        n_cols = x.shape[-1]
        block = triton.next_power_of_2(n_cols)
        add_layer_norm_kernel[(x.numel() // n_cols,)](x, residual, self.norm.weight, self.norm.bias, y, n_cols,
                                                       self.norm.eps, BLOCK=block, num_warps=16)
        return y
