"""v1: RMSNorm in one Triton kernel, one program per row, the row held in registers (one read, one write).
v1 change: num_warps 8 -> 4 per row program (32 floats per thread), so more row programs fit per SM.

The same float operations as the Model: mean of squares, + eps, sqrt, x / rms, * weight.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, weight_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean_square = tl.sum(x * x, axis=0) / n_cols
    rms = tl.sqrt(mean_square + eps)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x / rms * weight, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # the Model's weight is copied in by name

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_cols = x.shape[-1]
        rows = x.numel() // n_cols
        block = triton.next_power_of_2(n_cols)
        rms_norm_kernel[(rows,)](x, self.weight, y, n_cols, self.eps, BLOCK=block, num_warps=4)
        return y
