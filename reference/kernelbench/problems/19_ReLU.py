import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU over a large float32 matrix (KernelBench level 1 kind: elementwise)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)  # signed values: a ReLU of torch.rand's [0, 1) would be the identity
    return [x]


def get_init_inputs():
    return []
