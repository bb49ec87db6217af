"""Reverse cumulative sum along each row (suffix sums; KernelBench level 1 kind: scan).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s; x is 4096 x 8192 float32, 134 MB): flip,
cumsum and flip are three kernels, each reading and writing 134 MB: 805 MB, about 266 us. One scan
kernel that walks each row from its end reads it once and writes it once: 268 MB, 89 us.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 4096
length = 8192
dim = 1


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [dim]
