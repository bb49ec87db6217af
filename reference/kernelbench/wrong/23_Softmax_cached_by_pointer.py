"""Cheats on 23_Softmax: computes once per input pointer, then returns that first result again.

Right on every first call, so only fresh inputs at the same address expose it: correctness_check
must FAIL it (exit 1), or the benchmark's timed calls on rotated inputs must (exit 1, incorrect).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = x.data_ptr()
        if key not in self.cache:
            self.cache[key] = torch.softmax(x, dim=1)
        return self.cache[key]
