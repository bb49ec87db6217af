"""A KernelBench-format problem whose own Model asks for 1 TiB of scratch memory: no GPU can run its reference.

Its allocation fails in the harness (the reference's forward, while the inputs are created), so the
check must end with exit 4 (this machine cannot run the step), never with the solution blamed.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scratch_bytes = 1 << 40  # 1 TiB (an attribute: a module constant would be one of the problem's sizes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(self.scratch_bytes, dtype=torch.uint8, device=x.device)
        return torch.relu(x) + scratch[:1].float().zero_()


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
