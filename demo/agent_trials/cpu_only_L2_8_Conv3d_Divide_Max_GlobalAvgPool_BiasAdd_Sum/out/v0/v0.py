"""ModelNew for KernelBench level 2, problem 8: Conv3d -> /divisor -> MaxPool3d -> global avg pool
-> + bias -> sum over channels, written as two Triton kernels.

v0 (the simplest correct version, no tuning):
  kernel 1: one program per (batch, block of BLOCK_P pooled positions), all output channels at
            once as a [BLOCK_P, BLOCK_OC] tile. For each of the pool window's offsets it computes the
            direct convolution (outer-product accumulation over in_channels x KD x KH x KW), adds
            the conv bias, divides by the divisor and keeps the running max. The tile's pooled
            values are summed (over positions and channels) into one partial per program.
  kernel 2: one program per batch element: sum of its partials / (number of pooled positions)
            + sum of the extra bias over the channels.
Nothing but the input is read from DRAM in bulk: the conv output is never written.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_div_maxpool_partial_kernel(
    x_ptr, w_ptr, cb_ptr, part_ptr,
    C_in, D, H, W,            # input sizes
    PD, PH, PW, P,            # pooled sizes, P = PD * PH * PW
    OC, n_blocks, divisor,
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
    POOL_D: tl.constexpr, POOL_H: tl.constexpr, POOL_W: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_p = tl.program_id(1)

    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    mask_p = offs_p < P
    pd = offs_p // (PH * PW)
    ph = (offs_p // PW) % PH
    pw = offs_p % PW

    offs_oc = tl.arange(0, BLOCK_OC)
    mask_oc = offs_oc < OC
    cb = tl.load(cb_ptr + offs_oc, mask=mask_oc, other=0.0)

    HW = H * W
    DHW = D * HW
    x_base = x_ptr + pid_b * C_in * DHW
    KVOL: tl.constexpr = KD * KH * KW
    w_oc = w_ptr + offs_oc * (C_in * KVOL)

    m = tl.full([BLOCK_P, BLOCK_OC], float("-inf"), tl.float32)
    for i in tl.static_range(POOL_D):
        for j in tl.static_range(POOL_H):
            for k in tl.static_range(POOL_W):
                od = pd * POOL_D + i
                oh = ph * POOL_H + j
                ow = pw * POOL_W + k
                sp = od * HW + oh * W + ow          # top-left-front input index of this output
                acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
                for ic in range(C_in):
                    x_c = x_base + ic * DHW + sp
                    w_c = w_oc + ic * KVOL
                    for kd in tl.static_range(KD):
                        for kh in tl.static_range(KH):
                            for kw in tl.static_range(KW):
                                xv = tl.load(x_c + (kd * HW + kh * W + kw), mask=mask_p, other=0.0)
                                wv = tl.load(w_c + (kd * KH * KW + kh * KW + kw), mask=mask_oc, other=0.0)
                                acc += xv[:, None] * wv[None, :]
                val = (acc + cb[None, :]) / divisor
                m = tl.maximum(m, val)

    valid = mask_p[:, None] & mask_oc[None, :]
    s = tl.sum(tl.sum(tl.where(valid, m, 0.0), axis=1), axis=0)
    tl.store(part_ptr + pid_b * n_blocks + pid_p, s)


@triton.jit
def finalize_kernel(part_ptr, bias_ptr, out_ptr, n_blocks, OC, inv_P,
                    BLOCK_N: tl.constexpr, BLOCK_OC: tl.constexpr):
    pid_b = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_blocks, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        acc += tl.load(part_ptr + pid_b * n_blocks + offs, mask=offs < n_blocks, other=0.0)
    total = tl.sum(acc, axis=0) * inv_P
    offs_oc = tl.arange(0, BLOCK_OC)
    b = tl.load(bias_ptr + offs_oc, mask=offs_oc < OC, other=0.0)
    total += tl.sum(b, axis=0)
    tl.store(out_ptr + pid_b, total)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divisor, pool_size, bias_shape, sum_dim):
        super().__init__()
        # Same parameter names and shapes as Model: conv.weight, conv.bias, bias.
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.divisor = float(divisor)
        self.pool_size = tuple(pool_size) if isinstance(pool_size, (tuple, list)) else (pool_size,) * 3
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.sum_dim = sum_dim
        assert sum_dim == 1, "this kernel sums over the channel dim"

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        cb = self.conv.bias.contiguous()
        bias = self.bias.contiguous()
        B, C_in, D, H, W = x.shape
        OC, _, KD, KH, KW = w.shape
        PDp, PHp, PWp = self.pool_size
        OD, OH, OW = D - KD + 1, H - KH + 1, W - KW + 1
        PD, PH, PW = OD // PDp, OH // PHp, OW // PWp
        P = PD * PH * PW

        BLOCK_P = 64
        BLOCK_OC = triton.next_power_of_2(OC)
        n_blocks = triton.cdiv(P, BLOCK_P)
        part = torch.empty((B, n_blocks), device=x.device, dtype=torch.float32)
        out = torch.empty((B, 1, 1, 1), device=x.device, dtype=x.dtype)

        conv_div_maxpool_partial_kernel[(B, n_blocks)](
            x, w, cb, part,
            C_in, D, H, W,
            PD, PH, PW, P,
            OC, n_blocks, self.divisor,
            KD=KD, KH=KH, KW=KW,
            POOL_D=PDp, POOL_H=PHp, POOL_W=PWp,
            BLOCK_P=BLOCK_P, BLOCK_OC=BLOCK_OC,
        )
        finalize_kernel[(B,)](
            part, bias, out, n_blocks, OC, 1.0 / P,
            BLOCK_N=128, BLOCK_OC=triton.next_power_of_2(bias.numel()),
        )
        return out
