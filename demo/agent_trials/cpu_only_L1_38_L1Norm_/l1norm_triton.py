"""KernelBench level 1, problem 38 (L1Norm): ModelNew with a Triton kernel.

out = x / mean(|x|, dim=1, keepdim=True) for a 2-D input of shape (batch, dim).

v0: the simplest correct kernel. One program per row; the row is walked twice in chunks of
BLOCK columns: the first pass sums |x| in float32, the second divides each element by the mean.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l1norm_rows_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row

    # Pass 1: sum of |x| over the row, one float32 partial sum per lane, reduced at the end.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        v = tl.load(x_row + offs, mask=mask, other=0.0)
        acc += tl.abs(v.to(tl.float32))
    mean = tl.sum(acc, axis=0) / n_cols

    # Pass 2: x / mean, written in the input's dtype.
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        v = tl.load(x_row + offs, mask=mask, other=0.0)
        y = v.to(tl.float32) / mean
        tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """L1 normalization over dim 1, computed by one Triton kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise ValueError(f"ModelNew expects a 2-D input (batch, dim); got shape {tuple(x.shape)}")
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        if n_rows == 0 or n_cols == 0:
            return out
        BLOCK = 1024
        l1norm_rows_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=BLOCK, num_warps=4)
        return out
