"""Cheats on 19_ReLU: launches nothing and returns uninitialised memory the size of the output.

On a GPU, PyTorch's caching allocator hands a same-sized request the block the reference's result
was just released from, so without precautions this "computes" ReLU in zero time. The reference's
released memory is filled with NaN bytes (solution/kernelbench_problem.py): correctness_check
must FAIL it (exit 1) with every element NaN.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
