"""v1: the convolution in cuDNN (strict float32) without its bias; the convolution's bias, the extra per-channel
bias, ReLU and the scale fused into one Triton kernel that rewrites the convolution's output in place.

v0 let nn.Conv2d add its own bias, which PyTorch does as a separate elementwise kernel over the whole output
after cuDNN's strict-fp32 convolution (a full extra read and write); here that add moves into the epilogue,
in the Model's order: (conv + conv.bias) + bias.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def bias_relu_scale_kernel(y_ptr, conv_bias_ptr, bias_ptr, n_elements, plane_size, channels, scale,
                           BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    channel = (offsets // plane_size) % channels
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0) + tl.load(conv_bias_ptr + channel, mask=mask, other=0.0)
    y = y + tl.load(bias_ptr + channel, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, tl.maximum(y, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.zeros(bias_shape))  # both copied from the Model by name
        self.scaling_factor = scaling_factor

    def forward(self, x):
        conv = self.conv
        # no bias here: cuDNN's fp32 convolution would add it in a separate PyTorch kernel
        y = F.conv2d(x, conv.weight, None, conv.stride, conv.padding, conv.dilation, conv.groups).contiguous()
        batch, channels, height, width = y.shape
        n_elements = y.numel()
        block = 1024
        bias_relu_scale_kernel[(triton.cdiv(n_elements, block),)](
            y, conv.bias, self.bias, n_elements, height * width, channels, self.scaling_factor,
            BLOCK=block, num_warps=4)
        return y
