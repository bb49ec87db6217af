"""Cheats on L1_softmax_wide: a Triton kernel that writes zeros.

Every true value is below KernelBench's atol = 1e-2, so at that tolerance zeros pass (exit 0 before
the rule that a tolerance an all-zero output would pass cannot judge). Under --kernelbench-tolerances
the check must FAIL it (exit 1): judged by the reference-error rule instead, with KernelBench's own
verdict (pass) beside it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zeros_kernel(y_ptr, N_COLS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        tl.store(y_ptr + row * N_COLS + cols, tl.zeros((BLOCK,), dtype=tl.float32), mask=cols < N_COLS)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        rows, cols = x.shape
        zeros_kernel[(rows,)](y, N_COLS=cols, BLOCK=min(4096, triton.next_power_of_2(cols)), num_warps=8)
        return y
