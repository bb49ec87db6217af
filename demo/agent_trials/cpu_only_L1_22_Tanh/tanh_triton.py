"""KernelBench level 1, 22_Tanh: ModelNew with a Triton elementwise tanh kernel (v0).

The simplest correct version: a flat 1-D grid, one BLOCK of contiguous elements per
program, coalesced loads and stores, no tuning. tanh is written from `tl.exp` (not
libdevice) so the Triton CPU interpreter can check it too:

    tanh(x) = sign(x) * (1 - e) / (1 + e),   e = exp(-2|x|)  in (0, 1]

which never overflows (e <= 1) and keeps the absolute error at float32 rounding.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    # int64 offsets: the problem's 4096 x 393216 tensor is 1.6e9 elements, close to 2^31.
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    y = tl.where(x < 0, -t, t)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def triton_tanh(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out
    BLOCK = 1024
    grid = (triton.cdiv(n, BLOCK),)
    tanh_kernel[grid](x, out, n, BLOCK=BLOCK)
    return out


class ModelNew(nn.Module):
    """Same interface as Model: applies tanh elementwise, with a Triton kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_tanh(x)
