"""RMS normalisation of each row with a learned scale (KernelBench level 1 kind: norm).

Estimate (tools/kernelbench_estimate.py: one kernel per ATen op, H100 at 3.03 TB/s; x is 8192 x 4096
float32, 134 MB): x * x, mean, x / rms and * weight read and write 940 MB, about 310 us in eager.
A fused kernel reads x once and writes y once: 268 MB, 89 us; torch.compile fuses it the same way.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


batch_size = 8192
dim = 4096
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, eps]
