"""v0: GroupNorm and SiLU in one Triton kernel, one program per (image, group), whose channels are one contiguous
span in NCHW: a pass for the mean, a pass for the variance about it, a pass that normalises, applies the
channel's affine and SiLU. Three reads of the group, one write.

The group's size is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_silu_kernel(x_ptr, weight_ptr, bias_ptr, y_ptr, group_size: tl.constexpr, plane_size, channels_per_group,
                           num_groups, eps, BLOCK: tl.constexpr):
    program = tl.program_id(0).to(tl.int64)
    group = program % num_groups
    start = program * group_size
    total = tl.zeros((BLOCK,), tl.float32)
    for offset in range(0, group_size, BLOCK):
        index = offset + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + start + index, mask=index < group_size, other=0.0)
    mean = tl.sum(total, axis=0) / group_size
    squares = tl.zeros((BLOCK,), tl.float32)
    for offset in range(0, group_size, BLOCK):
        index = offset + tl.arange(0, BLOCK)
        mask = index < group_size
        centered = tl.where(mask, tl.load(x_ptr + start + index, mask=mask, other=0.0) - mean, 0.0)
        squares += centered * centered
    inverse_std = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / group_size + eps)
    for offset in range(0, group_size, BLOCK):
        index = offset + tl.arange(0, BLOCK)
        mask = index < group_size
        channel = group * channels_per_group + index // plane_size
        weight = tl.load(weight_ptr + channel, mask=mask, other=0.0)
        bias = tl.load(bias_ptr + channel, mask=mask, other=0.0)
        x = tl.load(x_ptr + start + index, mask=mask, other=0.0)
        y = (x - mean) * inverse_std * weight + bias
        tl.store(y_ptr + start + index, y * tl.sigmoid(y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups, channels, eps):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, channels, eps=eps)  # weight and bias copied from the Model by name

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, channels = x.shape[:2]
        plane_size = x.numel() // (batch * channels)
        groups = self.norm.num_groups
        channels_per_group = channels // groups
        block = 2048
        group_norm_silu_kernel[(batch * groups,)](x, self.norm.weight, self.norm.bias, y,
                                                  channels_per_group * plane_size, plane_size, channels_per_group,
                                                  groups, self.norm.eps, BLOCK=block, num_warps=8)
        return y
