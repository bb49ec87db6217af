import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x @ W^T + b), a linear layer whose bias starts at zero (KernelBench level 2 kind: GEMM + epilogue),
    at the sizes and with the inputs of KernelBench's level2/63_Gemm_ReLU_Divide and 76_Gemm_Add_ReLU.

    The bias is initialised with nn.init.zeros_, as transformer MLPs start theirs, so KernelBench's
    seed-42 Model holds zeros there: at them an epilogue that never adds the bias gives the
    reference's output for every input.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
