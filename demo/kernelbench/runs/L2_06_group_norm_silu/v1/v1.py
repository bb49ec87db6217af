"""v1: GroupNorm and SiLU as a split reduction in two wide Triton kernels, one program per (image, channel) plane.

1. plane_stats_kernel: each program reads its channel's plane once and writes the plane's mean and M2 (sum of
   squared deviations from that mean; chunks of the plane are combined with Chan's parallel formula, each chunk's
   M2 taken about its own mean, so no E[x^2] - E[x]^2 cancellation).
2. norm_silu_kernel: each program combines its group's channels_per_group (mean, M2) pairs the same way,
   then normalises its plane with the channel's affine and applies SiLU. Programs walk the planes last to first,
   so the first planes re-read are the ones the stats kernel read last, still in L2.

v0 ran one program per (image, group): 256 programs for 132 SMs, and three passes over each 512 KB group.
Here both kernels launch batch * channels programs (2048) and the input is read twice.

The plane size is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def plane_stats_kernel(x_ptr, stats_ptr, plane_size: tl.constexpr, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    start = plane * plane_size
    mean = 0.0
    m2 = 0.0
    for offset in range(0, plane_size, BLOCK):
        index = offset + tl.arange(0, BLOCK)
        mask = index < plane_size
        x = tl.load(x_ptr + start + index, mask=mask, other=0.0)
        count = tl.minimum(plane_size - offset, BLOCK).to(tl.float32)
        chunk_mean = tl.sum(x, axis=0) / count
        centered = tl.where(mask, x - chunk_mean, 0.0)
        chunk_m2 = tl.sum(centered * centered, axis=0)
        # Chan et al.: merge (offset values, mean, m2) with (count values, chunk_mean, chunk_m2)
        seen = offset * 1.0
        total = seen + count
        delta = chunk_mean - mean
        mean = mean + delta * (count / total)
        m2 = m2 + chunk_m2 + delta * delta * (seen * count / total)
    tl.store(stats_ptr + 2 * plane, mean)
    tl.store(stats_ptr + 2 * plane + 1, m2)


@triton.jit
def norm_silu_kernel(x_ptr, stats_ptr, weight_ptr, bias_ptr, y_ptr, plane_size: tl.constexpr, num_planes, channels,
                     channels_per_group, eps, BLOCK: tl.constexpr, GROUP_BLOCK: tl.constexpr):
    plane = (num_planes - 1 - tl.program_id(0)).to(tl.int64)  # last to first: the stats kernel's last reads are in L2
    channel = plane % channels
    first_plane = plane - channel % channels_per_group
    members = tl.arange(0, GROUP_BLOCK)
    member_mask = members < channels_per_group
    means = tl.load(stats_ptr + 2 * (first_plane + members), mask=member_mask, other=0.0)
    m2s = tl.load(stats_ptr + 2 * (first_plane + members) + 1, mask=member_mask, other=0.0)
    mean = tl.sum(means, axis=0) / channels_per_group
    spread = tl.where(member_mask, means - mean, 0.0)
    m2 = tl.sum(m2s, axis=0) + tl.sum(spread * spread, axis=0) * plane_size
    inverse_std = 1.0 / tl.sqrt(m2 / (channels_per_group * plane_size) + eps)
    scale = tl.load(weight_ptr + channel) * inverse_std
    bias = tl.load(bias_ptr + channel)
    start = plane * plane_size
    for offset in range(0, plane_size, BLOCK):
        index = offset + tl.arange(0, BLOCK)
        mask = index < plane_size
        x = tl.load(x_ptr + start + index, mask=mask, other=0.0)
        y = (x - mean) * scale + bias
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
        num_planes = batch * channels
        stats = torch.empty((num_planes, 2), device=x.device, dtype=torch.float32)
        block = min(triton.next_power_of_2(plane_size), 4096)
        plane_stats_kernel[(num_planes,)](x, stats, plane_size, BLOCK=block, num_warps=8)
        norm_silu_kernel[(num_planes,)](x, stats, self.norm.weight, self.norm.bias, y, plane_size, num_planes,
                                        channels, channels_per_group, self.norm.eps, BLOCK=block,
                                        GROUP_BLOCK=triton.next_power_of_2(channels_per_group), num_warps=8)
        return y
