"""v1: smooth-L1 loss in ONE Triton kernel (v0 ran three: the partials kernel, torch's sum, torch's divide).

Each program writes one partial sum per block as in v0 (no float atomics: deterministic); then it takes a ticket
from an int32 counter (atomic add, acq_rel). The program that draws the last ticket sums every partial in a fixed
order, divides by the element count, writes the mean and resets the counter to 0 for the next call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def smooth_l1_mean_kernel(pred_ptr, target_ptr, partials_ptr, counter_ptr, out_ptr, n_elements, beta,
                          BLOCK: tl.constexpr, FINAL_BLOCK: tl.constexpr):
    block = tl.program_id(0)
    n_blocks = tl.num_programs(0)
    offsets = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    difference = tl.abs(tl.load(pred_ptr + offsets, mask=mask, other=0.0)
                        - tl.load(target_ptr + offsets, mask=mask, other=0.0))
    loss = tl.where(difference < beta, 0.5 * difference * difference / beta, difference - 0.5 * beta)
    tl.store(partials_ptr + block, tl.sum(tl.where(mask, loss, 0.0), axis=0))
    # release: this program's partial is visible before its ticket; the last ticket holder acquires all of them
    ticket = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")
    if ticket == n_blocks - 1:
        total = tl.zeros((FINAL_BLOCK,), tl.float32)
        for start in range(0, n_blocks, FINAL_BLOCK):
            idx = start + tl.arange(0, FINAL_BLOCK)
            total += tl.load(partials_ptr + idx, mask=idx < n_blocks, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr, tl.sum(total, axis=0) / n_elements)
        tl.store(counter_ptr, 0)  # ready for the next call (kernel boundaries order it)


class ModelNew(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta
        self._counters = {}  # device -> int32 ticket counter, zero between calls

    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        targets = targets.contiguous()
        n_elements = predictions.numel()
        device = predictions.device
        counter = self._counters.get(device)
        if counter is None:
            counter = self._counters[device] = torch.zeros(1, device=device, dtype=torch.int32)
        block = 4096
        blocks = triton.cdiv(n_elements, block)
        partials = torch.empty(blocks, device=device, dtype=torch.float32)
        out = torch.empty((), device=device, dtype=torch.float32)
        final_block = min(triton.next_power_of_2(blocks), 4096)  # 16 floats a thread: 40 registers, as v0
        smooth_l1_mean_kernel[(blocks,)](predictions, targets, partials, counter, out, n_elements, self.beta,
                                         BLOCK=block, FINAL_BLOCK=final_block, num_warps=8)
        return out
