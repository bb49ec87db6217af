"""log_softmax over rows of 65,536 float32 logits (KernelBench level 1 kind: reduction).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s): one ATen kernel reads the 268 MB input
and writes 268 MB: 537 MB, 177 us, a floor; it passes over each 256 KB row three times (max, sum,
write), the later passes from L2 where the row is still there. A kernel with an online max and sum
needs two passes; eager and the fused floor are the same bytes, so the win is in the passes, not DRAM.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=1)


batch_size = 1024
vocab = 65536


def get_inputs():
    return [torch.randn(batch_size, vocab) * 4.0]


def get_init_inputs():
    return []
