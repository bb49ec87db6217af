"""ModelNew for KernelBench level 2 / 79: Conv3d -> *multiplier -> InstanceNorm3d -> clamp -> *multiplier -> max(dim=1).

Triton, two kernels, the simplest correct form (no tuning):

1. conv_mul_stats_kernel: one program per (block of BLOCK output positions, batch n), all COUT
   output channels at once. Direct 3-D convolution (valid padding, stride 1) as CIN*K^3 outer
   products acc[COUT, BLOCK] += w[:, tap] * x[tap-shifted positions], then y = (acc + bias) * m,
   stored to an fp32 intermediate y[N, COUT, S]. Each program also writes its block's per-channel
   mean and M2 (sum of squared deviations from the block mean) for the instance-norm statistics.
2. norm_clamp_max_kernel: one program per (block of positions, n). It combines the block partials
   of its n with Chan's parallel formula (mean, biased variance over S), then for its positions:
   (y - mean) * rstd -> clamp -> * m -> max over channels -> out[N, OD, OH, OW].

All sizes are tl.constexpr (no runtime loop bounds), so the CPU interpreter runs it with any NumPy.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_mul_stats_kernel(
    x_ptr, w_ptr, b_ptr, m_ptr, y_ptr, pmean_ptr, pm2_ptr,
    CIN: tl.constexpr, D: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
    OH: tl.constexpr, OW: tl.constexpr, S: tl.constexpr,
    COUT: tl.constexpr, COUT_P: tl.constexpr, K: tl.constexpr,
    BLOCK: tl.constexpr, NBLK: tl.constexpr,
):
    pid_s = tl.program_id(0)
    n = tl.program_id(1)

    offs = pid_s * BLOCK + tl.arange(0, BLOCK)
    smask = offs < S
    od = offs // (OH * OW)
    rem = offs % (OH * OW)
    oh = rem // OW
    ow = rem % OW
    in_base = od * (H * W) + oh * W + ow

    co = tl.arange(0, COUT_P)
    cmask = co < COUT

    x_n = x_ptr + n * (CIN * D * H * W)
    acc = tl.zeros((COUT_P, BLOCK), dtype=tl.float32)
    for ci in tl.static_range(CIN):
        for kd in tl.static_range(K):
            for kh in tl.static_range(K):
                for kw in tl.static_range(K):
                    xv = tl.load(x_n + (ci * D * H * W + kd * H * W + kh * W + kw) + in_base,
                                 mask=smask, other=0.0)
                    wv = tl.load(w_ptr + co * (CIN * K * K * K) + (ci * K * K * K + kd * K * K + kh * K + kw),
                                 mask=cmask, other=0.0)
                    acc += wv[:, None] * xv[None, :]

    bias = tl.load(b_ptr + co, mask=cmask, other=0.0)
    mult = tl.load(m_ptr + co, mask=cmask, other=0.0)
    y = (acc + bias[:, None]) * mult[:, None]

    mask2 = cmask[:, None] & smask[None, :]
    tl.store(y_ptr + n * (COUT * S) + co[:, None] * S + offs[None, :], y, mask=mask2)

    # Per-block statistics over the valid positions of this block.
    cnt = tl.minimum(S - pid_s * BLOCK, BLOCK).to(tl.float32)
    ysum = tl.sum(tl.where(smask[None, :], y, 0.0), axis=1)
    bmean = ysum / cnt
    dev = tl.where(smask[None, :], y - bmean[:, None], 0.0)
    bm2 = tl.sum(dev * dev, axis=1)
    pidx = (n * NBLK + pid_s) * COUT_P + co
    tl.store(pmean_ptr + pidx, bmean)
    tl.store(pm2_ptr + pidx, bm2)


@triton.jit
def norm_clamp_max_kernel(
    y_ptr, pmean_ptr, pm2_ptr, m_ptr, out_ptr,
    S: tl.constexpr, COUT: tl.constexpr, COUT_P: tl.constexpr,
    BLOCK: tl.constexpr, NBLK: tl.constexpr, NBLK_P: tl.constexpr,
    EPS: tl.constexpr, CMIN: tl.constexpr, CMAX: tl.constexpr,
):
    pid_s = tl.program_id(0)
    n = tl.program_id(1)

    co = tl.arange(0, COUT_P)
    cmask = co < COUT

    # Combine the NBLK block partials of this n (Chan et al.): mean and biased variance over S.
    b = tl.arange(0, NBLK_P)
    bmask = b < NBLK
    pidx = (n * NBLK + b[:, None]) * COUT_P + co[None, :]
    pm = tl.load(pmean_ptr + pidx, mask=bmask[:, None], other=0.0)
    p2 = tl.load(pm2_ptr + pidx, mask=bmask[:, None], other=0.0)
    cnt_b = tl.where(bmask, tl.minimum(S - b * BLOCK, BLOCK), 0).to(tl.float32)
    mean = tl.sum(cnt_b[:, None] * pm, axis=0) / S
    d = pm - mean[None, :]
    m2 = tl.sum(p2 + cnt_b[:, None] * d * d, axis=0)
    var = m2 / S
    rstd = 1.0 / tl.sqrt_rn(var + EPS)

    mult = tl.load(m_ptr + co, mask=cmask, other=0.0)

    offs = pid_s * BLOCK + tl.arange(0, BLOCK)
    smask = offs < S
    mask2 = cmask[:, None] & smask[None, :]
    y = tl.load(y_ptr + n * (COUT * S) + co[:, None] * S + offs[None, :], mask=mask2, other=0.0)
    v = (y - mean[:, None]) * rstd[:, None]
    v = tl.minimum(tl.maximum(v, CMIN), CMAX)
    v = v * mult[:, None]
    v = tl.where(cmask[:, None], v, float("-inf"))
    r = tl.max(v, axis=0)
    tl.store(out_ptr + n * S + offs, r, mask=smask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, multiplier_shape, clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.multiplier = nn.Parameter(torch.randn(multiplier_shape))
        self.instance_norm = nn.InstanceNorm3d(out_channels)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        conv = self.conv
        assert conv.stride == (1, 1, 1) and conv.padding == (0, 0, 0) and conv.dilation == (1, 1, 1)
        assert conv.groups == 1 and conv.kernel_size[0] == conv.kernel_size[1] == conv.kernel_size[2]
        x = x.contiguous()
        w = conv.weight.contiguous()
        bias = conv.bias.contiguous()
        mult = self.multiplier.reshape(-1).contiguous()

        N, CIN, D, H, W = x.shape
        COUT = w.shape[0]
        K = conv.kernel_size[0]
        OD, OH, OW = D - K + 1, H - K + 1, W - K + 1
        S = OD * OH * OW
        COUT_P = triton.next_power_of_2(COUT)
        BLOCK = 1024
        NBLK = triton.cdiv(S, BLOCK)

        y = torch.empty((N, COUT, S), device=x.device, dtype=torch.float32)
        pmean = torch.empty((N, NBLK, COUT_P), device=x.device, dtype=torch.float32)
        pm2 = torch.empty((N, NBLK, COUT_P), device=x.device, dtype=torch.float32)
        out = torch.empty((N, OD, OH, OW), device=x.device, dtype=torch.float32)

        grid = (NBLK, N)
        conv_mul_stats_kernel[grid](
            x, w, bias, mult, y, pmean, pm2,
            CIN=CIN, D=D, H=H, W=W, OH=OH, OW=OW, S=S,
            COUT=COUT, COUT_P=COUT_P, K=K, BLOCK=BLOCK, NBLK=NBLK,
            num_warps=8,
        )
        norm_clamp_max_kernel[grid](
            y, pmean, pm2, mult, out,
            S=S, COUT=COUT, COUT_P=COUT_P, BLOCK=BLOCK, NBLK=NBLK,
            NBLK_P=triton.next_power_of_2(NBLK),
            EPS=float(self.instance_norm.eps),
            CMIN=float(self.clamp_min), CMAX=float(self.clamp_max),
            num_warps=8,
        )
        return out
