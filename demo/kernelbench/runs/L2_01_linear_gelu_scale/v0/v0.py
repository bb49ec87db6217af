"""v0: the GEMM in cuBLAS (strict float32, bias included, as the Model's nn.Linear), then GELU (tanh form) and
the scale fused into one Triton kernel that rewrites the GEMM's output in place: one elementwise pass, not two.

0.5 * (1 + tanh(u)) is computed as sigmoid(2u), the same function without a tanh intrinsic.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)  # a plain global float does not compile on a GPU


@triton.jit
def gelu_tanh_scale_kernel(y_ptr, n_elements, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    inner = SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)
    gelu = y * tl.sigmoid(2.0 * inner)
    tl.store(y_ptr + offsets, gelu * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # the Model's name: its weights are copied in
        self.scale = scale

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias).contiguous()
        n_elements = y.numel()
        block = 1024
        gelu_tanh_scale_kernel[(triton.cdiv(n_elements, block),)](y, n_elements, self.scale, BLOCK=block, num_warps=4)
        return y
