"""A residual add followed by LayerNorm over 4096 features (KernelBench level 2 kind: norm chain).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s; 8192 x 4096 float32, 134 MB per tensor):
the add reads two tensors and writes one, LayerNorm reads and writes one: 671 MB, about 222 us. A fused
kernel reads x and the residual once and writes once: 403 MB, 133 us, as torch.compile's single
persistent reduction does.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=eps)
        with torch.no_grad():  # not the identity affine: a kernel that skips it must fail
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(features))
            self.norm.bias.copy_(0.1 * torch.randn(features))

    def forward(self, x, residual):
        return self.norm(x + residual)


batch_size = 8192
features = 4096
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, features), torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, eps]
