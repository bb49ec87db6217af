"""v1 (from v0): reverse cumulative sum in one Triton kernel, one program per row, walking the row from its end in chunks:
each chunk is loaded back to front, scanned with tl.cumsum and offset by the running total of the chunks after it.
v1: software-pipelined by hand: the load of chunk i+1 is issued before chunk i is scanned and stored (a register
double buffer), so every program keeps a load in flight while it scans instead of waiting on each load in turn.

The row length is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def reverse_cumsum_kernel(x_ptr, y_ptr, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    carry = tl.zeros((), tl.float32)
    first = tl.arange(0, BLOCK)
    x = tl.load(x_row + (n_cols - 1 - first), mask=first < n_cols, other=0.0)  # the first chunk, before the loop
    for start in range(0, n_cols, BLOCK):
        steps = start + tl.arange(0, BLOCK)  # distance from the row's end
        cols = n_cols - 1 - steps
        mask = steps < n_cols
        # prefetch: the next chunk's load is issued before this chunk's scan, so it is in flight during it
        next_steps = steps + BLOCK
        x_next = tl.load(x_row + (n_cols - 1 - next_steps), mask=next_steps < n_cols, other=0.0)
        sums = tl.cumsum(x, axis=0) + carry
        tl.store(y_row + cols, sums, mask=mask)
        carry += tl.sum(x, axis=0)
        x = x_next


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if self.dim not in (-1, x.dim() - 1):
            raise ValueError(f"this kernel scans the last dim of a 2-D tensor, not dim {self.dim}")
        x = x.contiguous()
        y = torch.empty_like(x)
        n_cols = x.shape[-1]
        block = min(triton.next_power_of_2(n_cols), 1024)
        reverse_cumsum_kernel[(x.numel() // n_cols,)](x, y, n_cols, BLOCK=block, num_warps=4)
        return y
