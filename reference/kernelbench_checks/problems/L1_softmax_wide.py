import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over 32768 columns (KernelBench level 1 kind: reduction).

    Every value of a row is about 1/32768 (3e-5, at most about 2e-3), far below KernelBench's
    atol = 1e-2: at that tolerance an output of zeros passes.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 2048
dim = 32768


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
