"""KernelBench level 1 / 44_Average_Pooling_1D: ModelNew with a Triton kernel of its own.

nn.AvgPool1d(kernel_size, stride, padding) with PyTorch's defaults (ceil_mode=False,
count_include_pad=True): out[r, o] = sum_{k<K} x[r, o*S - P + k] / K, zero outside [0, L).

v0: the simplest correct kernel. The (batch, channel) rows are flattened; each program computes
one contiguous block of BLOCK outputs of one row by K shifted, masked, coalesced loads.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def avg_pool1d_kernel(
    x_ptr, out_ptr,
    L_in, L_out,
    KERNEL_SIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid_l = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    offs = pid_l * BLOCK + tl.arange(0, BLOCK)
    out_mask = offs < L_out
    start = offs * STRIDE - PADDING
    x_row = x_ptr + row * L_in
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in tl.static_range(KERNEL_SIZE):
        idx = start + k
        m = out_mask & (idx >= 0) & (idx < L_in)
        acc += tl.load(x_row + idx, mask=m, other=0.0).to(tl.float32)
    acc = acc / KERNEL_SIZE
    tl.store(out_ptr + row * L_out + offs, acc.to(out_ptr.dtype.element_ty), mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.kernel_size = int(kernel_size)
        self.stride = int(stride) if stride is not None else int(kernel_size)
        self.padding = int(padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, L_in = x.shape
        L_out = (L_in + 2 * self.padding - self.kernel_size) // self.stride + 1
        out = torch.empty((N, C, L_out), device=x.device, dtype=x.dtype)
        rows = N * C
        BLOCK = 1024
        grid = (triton.cdiv(L_out, BLOCK), rows)
        avg_pool1d_kernel[grid](
            x, out, L_in, L_out,
            KERNEL_SIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding,
            BLOCK=BLOCK,
        )
        return out
