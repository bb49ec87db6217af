import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over 393216 columns of torch.rand values (KernelBench level 1 kind: reduction), at the sizes and
    with the inputs of KernelBench's level1/23_Softmax.

    Every value of a row is about 1/393216 (2.5e-6, at most about 4e-6), far below KernelBench's
    atol = 1e-2: at that tolerance an output of zeros passes, and so does one whose denominator
    sums only the first 256 columns (every value about 1536 times the true one, still under 1e-2).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
