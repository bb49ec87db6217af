"""A ModelNew for small_relu.py that asks for 1 TiB inside its own forward: the solution's fault (exit 3)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scratch_bytes = 1 << 40  # 1 TiB (an attribute: a module constant would be one of the problem's sizes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(self.scratch_bytes, dtype=torch.uint8, device=x.device)
        return torch.relu(x) + scratch[:1].float().zero_()
