"""v0: cross-entropy in one Triton kernel per row (an online log-sum-exp over chunks, minus the target's logit),
then the mean of the per-row losses in torch (a few thousand floats).

The row length is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_rows_kernel(logits_ptr, targets_ptr, losses_ptr, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * n_cols
    running_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    running_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf"))
        new_max = tl.maximum(running_max, x)
        rescale = tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max))
        added = tl.where(new_max == -float("inf"), 0.0, tl.exp(x - new_max))
        running_sum = running_sum * rescale + added
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    lane_scale = tl.where(running_max == -float("inf"), 0.0, tl.exp(running_max - row_max))
    log_sum_exp = row_max + tl.log(tl.sum(running_sum * lane_scale, axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_ptr + target)
    tl.store(losses_ptr + row, log_sum_exp - target_logit)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        logits = logits.contiguous()
        rows, cols = logits.shape
        losses = torch.empty(rows, device=logits.device, dtype=torch.float32)
        block = min(triton.next_power_of_2(cols), 2048)
        cross_entropy_rows_kernel[(rows,)](logits, targets.contiguous(), losses, cols, BLOCK=block, num_warps=8)
        return losses.mean()
