"""v0: the convolution in cuDNN (strict float32, its own bias included, as the Model's nn.Conv2d), then the extra
per-channel bias, ReLU and the scale fused into one Triton kernel that rewrites the convolution's output in place.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_scale_kernel(y_ptr, bias_ptr, n_elements, plane_size, channels, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    channel = (offsets // plane_size) % channels
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0) + tl.load(bias_ptr + channel, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, tl.maximum(y, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.zeros(bias_shape))  # both copied from the Model by name
        self.scaling_factor = scaling_factor

    def forward(self, x):
        y = self.conv(x).contiguous()
        batch, channels, height, width = y.shape
        n_elements = y.numel()
        block = 1024
        bias_relu_scale_kernel[(triton.cdiv(n_elements, block),)](
            y, self.bias, n_elements, height * width, channels, self.scaling_factor, BLOCK=block, num_warps=4)
        return y
