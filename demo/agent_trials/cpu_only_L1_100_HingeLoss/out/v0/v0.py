"""KernelBench L1 100_HingeLoss: ModelNew with a Triton kernel of its own.

forward(predictions, targets) = mean(clamp(1 - predictions * targets, min=0)), targets broadcast
against predictions as torch broadcasts them.

v0: the simplest correct kernel. Both operands are broadcast to one shape and viewed as 2-D
(rows = all leading dims merged, cols = the last dim). Stage 1: one program per row walks the row
in BLOCK-wide chunks, accumulates clamp(1 - p*t, 0) in a float32 vector and writes the row's sum.
Stage 2: one program sums the row partials and divides by the element count.
The column count and row count are tl.constexpr so that loop bounds are compile-time values (the
Triton CPU interpreter with NumPy >= 2.4 rejects runtime loop bounds).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_row_sum_kernel(p_ptr, t_ptr, partial_ptr,
                         sp0, sp1, st0, st1,
                         N_COLS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    p_row = p_ptr + row * sp0
    t_row = t_ptr + row * st0
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N_COLS
        p = tl.load(p_row + cols * sp1, mask=mask, other=0.0).to(tl.float32)
        t = tl.load(t_row + cols * st1, mask=mask, other=0.0).to(tl.float32)
        v = tl.maximum(1.0 - p * t, 0.0)
        acc += tl.where(mask, v, 0.0)
    tl.store(partial_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def mean_kernel(partial_ptr, out_ptr, inv_count,
                N_PARTIALS: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N_PARTIALS, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < N_PARTIALS, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * inv_count)


def hinge_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.result_type(predictions, targets)
    p, t = torch.broadcast_tensors(predictions, targets)
    shape = p.shape
    n_cols = shape[-1] if len(shape) > 0 else 1
    count = p.numel()
    n_rows = count // n_cols if n_cols > 0 else 0
    # 2-D views; reshape of a broadcast view stays a view whenever strides allow it.
    p2 = p.reshape(n_rows, n_cols)
    t2 = t.reshape(n_rows, n_cols)
    out = torch.empty((), device=predictions.device, dtype=torch.float32)
    if count == 0:
        out.fill_(float("nan"))
        return out.to(out_dtype)
    partials = torch.empty(n_rows, device=predictions.device, dtype=torch.float32)
    hinge_row_sum_kernel[(n_rows,)](p2, t2, partials,
                                    p2.stride(0), p2.stride(1), t2.stride(0), t2.stride(1),
                                    N_COLS=n_cols, BLOCK=1024)
    mean_kernel[(1,)](partials, out, 1.0 / count, N_PARTIALS=n_rows, BLOCK=1024)
    return out if out_dtype == torch.float32 else out.to(out_dtype)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return hinge_loss(predictions, targets)
