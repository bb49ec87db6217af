"""Wrong on L1_softmax_wide: the denominator sums only the first 256 columns of each row.

A row reduced tile by tile whose sum loop stops after the first tile: the maximum is taken over the
whole row, the denominator over columns 0-255 only, so every value comes out about dim / 256 times
the true one (1536 times at 393216 columns, 16 times at 4096). Even 1536 times a value of 2.5e-6 is
within KernelBench's atol = 1e-2, so that tolerance passes it; nothing in it computes at a lower
precision. Under --kernelbench-tolerances the check must FAIL it (exit 1): the reference-error rule
judges an output that zeros would match at 1e-2, with KernelBench's own verdict (pass) beside it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

FIRST_CHUNK = 256


@triton.jit
def first_chunk_softmax_kernel(x_ptr, y_ptr, N_COLS: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * N_COLS, y_ptr + row * N_COLS
    largest = tl.full((BLOCK,), -float("inf"), dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        largest = tl.maximum(largest, tl.load(x_row + cols, mask=cols < N_COLS, other=-float("inf")))
    row_max = tl.max(largest, axis=0)
    first = tl.arange(0, CHUNK)  # the bug: one tile of the sum, never the rest of the row
    denominator = tl.sum(tl.exp(tl.load(x_row + first, mask=first < N_COLS, other=-float("inf")) - row_max), axis=0)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N_COLS, other=-float("inf"))
        tl.store(y_row + cols, tl.exp(x - row_max) / denominator, mask=cols < N_COLS)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        first_chunk_softmax_kernel[(rows,)](x, y, N_COLS=cols, BLOCK=min(4096, triton.next_power_of_2(cols)),
                                            CHUNK=FIRST_CHUNK, num_warps=8)
        return y
