"""Distillation loss: KL(softmax(teacher / T) || softmax(student / T)) * T^2, batch mean (level 2: loss).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s; two 512 x 32768 float32 logit matrices of
67 MB): the two divisions, log_softmax, softmax and kl_div's pointwise ops and sum (ten kernels) move
1.14 GB, about 377 us. One kernel per row with online maxima reads both matrices once or twice and
writes one float per row: 134-268 MB, 44-89 us; torch.compile splits it into reductions that each
re-read the rows.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, student_logits, teacher_logits):
        t = self.temperature
        log_q = torch.nn.functional.log_softmax(student_logits / t, dim=-1)
        p = torch.nn.functional.softmax(teacher_logits / t, dim=-1)
        return torch.nn.functional.kl_div(log_q, p, reduction="batchmean") * (t * t)


batch_size = 512
vocab = 32768
temperature = 2.0


def get_inputs():
    return [torch.randn(batch_size, vocab) * 2.0, torch.randn(batch_size, vocab) * 2.0]


def get_init_inputs():
    return [temperature]
