"""Causal softmax(Q K^T * scale) V in float16 with head dim 64 (KernelBench level 2 kind: attention).

Estimate (tools/kernelbench_estimate.py, H100: 678 TFLOP/s fp16, 3.03 TB/s): the score matrix (4 x 8 x
1536^2 fp16 values, 151 MB) is written by the first matmul, read and written by the scale, the mask
and the softmax, and read by the second: 1.24 GB, about 410 us (the matmuls' 9.7 GFLOP each take
14 us on the tensor cores). A flash-attention kernel never writes the scores and skips the masked
half: Q, K, V and the output are 25 MB.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v):
        seq = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


batch_size = 4
heads = 8
seq_len = 1536
head_dim = 64


def get_inputs():
    shape = (batch_size, heads, seq_len, head_dim)
    return [torch.randn(shape, dtype=torch.float16) for _ in range(3)]


def get_init_inputs():
    return [head_dim]
