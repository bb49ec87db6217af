"""Mean cross-entropy over a 32,768-way vocabulary (KernelBench level 1 kind: loss).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s): F.cross_entropy runs log_softmax, which
reads the 537 MB of float32 logits and writes 537 MB, then nll_loss gathers one value per row:
1.07 GB, about 355 us. A kernel with an online log-sum-exp reads the logits once and writes one float
per row: 537 MB, 177 us; torch.compile reads each row twice (max, then sum of exponentials).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return torch.nn.functional.cross_entropy(logits, targets)


batch_size = 4096
vocab = 32768


def get_inputs():
    return [torch.randn(batch_size, vocab) * 3.0, torch.randint(0, vocab, (batch_size,))]


def get_init_inputs():
    return []
