"""ModelNew for KernelBench L2/15: ConvTranspose3d -> BatchNorm3d (training mode) -> x - mean_spatial(x).

Algebra used (exact, not an approximation):
    y   = conv_transpose3d(x, W) + b
    z   = (y - mu_c) * g_c / sqrt(var_c + eps) + beta_c        # BN, batch statistics over (N, D, H, W)
    out = z - mean_{D,H,W}(z)
        = g_c / sqrt(var_c + eps) * (y - m_nc)                 # beta_c, mu_c (and b) cancel
where m_nc is the spatial mean of y for sample n, channel c, and var_c the biased variance of y
over (N, D, H, W).

v0: the transposed convolution is PyTorch's (cuDNN on a GPU); the rest is two Triton kernels:
  1. _row_stats: one program per (n, c) row: mean and centred sum of squares (shifted sums).
  2. _apply: per channel, combine the N row statistics (Chan's formula) into var_c, then
     out = (y - m_nc) * g_c * rsqrt(var_c + eps).
No tuning: that is the loop's job.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_stats(y_ptr, mean_ptr, m2_ptr, S: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = y_ptr + row.to(tl.int64) * S
    shift = tl.load(base)  # shifted sums: robust against a large mean
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, S, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < S
        v = tl.load(base + offs, mask=mask, other=0.0)
        d = tl.where(mask, v - shift, 0.0)
        acc += d
        acc2 += d * d
    s1 = tl.sum(acc, axis=0)
    s2 = tl.sum(acc2, axis=0)
    mean_d = s1 / S
    m2 = s2 - s1 * mean_d
    tl.store(mean_ptr + row, shift + mean_d)
    tl.store(m2_ptr + row, tl.maximum(m2, 0.0))


@triton.jit
def _apply(y_ptr, out_ptr, mean_ptr, m2_ptr, gamma_ptr, N, C, eps,
           S: tl.constexpr, BLOCK: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    row = tl.program_id(1)
    c = row % C
    # channel statistics from the N row statistics of channel c
    ns = tl.arange(0, BLOCK_N)
    nmask = ns < N
    means = tl.load(mean_ptr + ns * C + c, mask=nmask, other=0.0)
    m2s = tl.load(m2_ptr + ns * C + c, mask=nmask, other=0.0)
    mean_c = tl.sum(means, axis=0) / N
    dm = tl.where(nmask, means - mean_c, 0.0)
    m2_c = tl.sum(m2s, axis=0) + S * tl.sum(dm * dm, axis=0)
    var_c = m2_c / (N * S)
    scale = tl.load(gamma_ptr + c) / tl.sqrt(var_c + eps)
    shift = tl.load(mean_ptr + row)

    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < S
    base = row.to(tl.int64) * S
    v = tl.load(y_ptr + base + offs, mask=mask, other=0.0)
    tl.store(out_ptr + base + offs, (v - shift) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias=True):
        super().__init__()
        # same modules as Model, so its state_dict loads by name
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size,
                                                 stride=stride, padding=padding, bias=bias)
        self.batch_norm = nn.BatchNorm3d(out_channels)

    def forward(self, x):
        y = self.conv_transpose(x).contiguous()
        N, C = y.shape[0], y.shape[1]
        S = y.numel() // (N * C)
        rows = N * C
        mean = torch.empty(rows, device=y.device, dtype=torch.float32)
        m2 = torch.empty(rows, device=y.device, dtype=torch.float32)
        _row_stats[(rows,)](y, mean, m2, S=S, BLOCK=1024)
        out = torch.empty_like(y)
        BLOCK = 1024
        _apply[(triton.cdiv(S, BLOCK), rows)](
            y, out, mean, m2, self.batch_norm.weight, N, C, self.batch_norm.eps,
            S=S, BLOCK=BLOCK, BLOCK_N=triton.next_power_of_2(N))
        return out
