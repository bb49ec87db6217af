import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalisation over the last three dims (KernelBench level 1 kind: normalisation), at the sizes and
    with the inputs of KernelBench's level1/40_LayerNorm.

    nn.LayerNorm starts with its weight at ones and its bias at zeros, and KernelBench's seed-42 Model
    holds exactly those: at them a kernel that normalises and never applies weight and bias gives the
    reference's output for every input.
    """

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
features = 64
dim1 = 256
dim2 = 256


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [(features, dim1, dim2)]
