"""Mean smooth-L1 (Huber) loss between two float32 matrices (KernelBench level 1 kind: loss).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s; two 16384 x 4096 inputs of 268 MB): one
ATen op that reads both, 537 MB, 177 us, a floor: inside it writes the elementwise loss (268 MB) and
reads it back to take the mean, about 1.07 GB and 355 us in all. A fused kernel reads both inputs once
and writes one float: 537 MB, 177 us. torch.compile fuses the same way, so beating it needs a
reduction closer to the copy roofline than Inductor's split reduction: expected hard against compile.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, predictions, targets):
        return torch.nn.functional.smooth_l1_loss(predictions, targets, beta=self.beta)


batch_size = 16384
dim = 4096
beta = 0.5


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
