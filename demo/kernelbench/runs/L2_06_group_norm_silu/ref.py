"""GroupNorm (32 groups) followed by SiLU on an NCHW activation (KernelBench level 2 kind: norm + activation).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s; 8 x 256 x 128 x 128 float32, 134 MB):
GroupNorm and SiLU each read and write 134 MB: 537 MB, 177 us, a floor (GroupNorm reads its input a
second time to normalise). A fused kernel needs a group's statistics (4 MB per group) before it
writes: two reads, the second partly from L2, and one write, 268-403 MB, 89-133 us.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_groups, channels, eps):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, channels, eps=eps)
        with torch.no_grad():  # not the identity affine: a kernel that skips it must fail
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(channels))
            self.norm.bias.copy_(0.1 * torch.randn(channels))

    def forward(self, x):
        return torch.nn.functional.silu(self.norm(x))


batch_size = 8
channels = 256
height = 128
width = 128
num_groups = 32
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [num_groups, channels, eps]
