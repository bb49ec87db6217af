"""v1: cross-entropy in ONE Triton kernel (v0 ran two: the row kernel, then torch's mean of the row losses).

Each program computes its row's loss as in v0 (an online log-sum-exp over chunks, minus the target's logit) and
stores it; then it takes a ticket from an int32 counter (atomic add, acq_rel). The program that draws the last
ticket sums the row losses in a fixed order (deterministic), divides by the row count, writes the mean and resets
the counter to 0 for the next call.

The row length is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_mean_kernel(logits_ptr, targets_ptr, losses_ptr, counter_ptr, out_ptr, n_cols: tl.constexpr,
                              BLOCK: tl.constexpr, FINAL_BLOCK: tl.constexpr):
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
    # release: this row's loss is visible before its ticket; the last ticket holder acquires all of them
    n_rows = tl.num_programs(0)
    ticket = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")
    if ticket == n_rows - 1:
        total = tl.zeros((FINAL_BLOCK,), tl.float32)
        for start in range(0, n_rows, FINAL_BLOCK):
            idx = start + tl.arange(0, FINAL_BLOCK)
            total += tl.load(losses_ptr + idx, mask=idx < n_rows, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr, tl.sum(total, axis=0) / n_rows)
        tl.store(counter_ptr, 0)  # ready for the next call (kernel boundaries order it)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._counters = {}  # device -> int32 ticket counter, zero between calls

    def forward(self, logits, targets):
        logits = logits.contiguous()
        rows, cols = logits.shape
        device = logits.device
        counter = self._counters.get(device)
        if counter is None:
            counter = self._counters[device] = torch.zeros(1, device=device, dtype=torch.int32)
        losses = torch.empty(rows, device=device, dtype=torch.float32)
        out = torch.empty((), device=device, dtype=torch.float32)
        block = min(triton.next_power_of_2(cols), 2048)
        final_block = min(triton.next_power_of_2(rows), 2048)  # 8 floats a thread: 35 registers (v0: 39)
        cross_entropy_mean_kernel[(rows,)](logits, targets.contiguous(), losses, counter, out, cols, BLOCK=block,
                                           FINAL_BLOCK=final_block, num_warps=8)
        return out
