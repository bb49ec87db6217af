"""ModelNew for KernelBench level 2 #83: Conv3d -> GroupNorm -> min(x, min_value) -> clamp -> Dropout.

v0: the simplest correct Triton version, no tuning.
  kernel 1 `conv3d_direct_kernel`: direct (valid, stride 1) 3-D convolution, one program per
           (sample, output channel, block of output voxels); the Cin*K^3 taps are unrolled.
  kernel 2 `groupnorm_min_clamp_dropout_kernel`: one program per (sample, group); the group is
           contiguous in memory (Cg channels x spatial), so it is a "row": pass 1 mean, pass 2
           variance (two-pass, fp32), pass 3 normalise + affine + min + clamp + dropout, written once.
Dropout follows nn.Dropout: active only in training mode, keep-probability 1-p, kept values scaled
by 1/(1-p); the mask comes from Triton's Philox (tl.rand) with a seed drawn from torch's generator.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv3d_direct_kernel(x_ptr, w_ptr, b_ptr, y_ptr,
                         D, H, W, OD, OH, OW,
                         C_IN: tl.constexpr, C_OUT: tl.constexpr, K: tl.constexpr,
                         BLOCK: tl.constexpr):
    pid_nc = tl.program_id(0)          # n * C_OUT + co
    pid_s = tl.program_id(1)           # block of output voxels
    n = pid_nc // C_OUT
    co = pid_nc % C_OUT
    s_out = OD * OH * OW
    offs = pid_s * BLOCK + tl.arange(0, BLOCK)
    mask = offs < s_out
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    od = t // OH
    hw = H * W
    dhw = D * hw
    x_base = x_ptr + n.to(tl.int64) * (C_IN * dhw)
    sp = od * hw + oh * W + ow                      # input voxel of tap (0, 0, 0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for ci in tl.static_range(C_IN):
        for kd in tl.static_range(K):
            for kh in tl.static_range(K):
                for kw in tl.static_range(K):
                    wv = tl.load(w_ptr + (((co * C_IN + ci) * K + kd) * K + kh) * K + kw)
                    xv = tl.load(x_base + ci * dhw + sp + (kd * hw + kh * W + kw), mask=mask, other=0.0)
                    acc += xv * wv
    acc += tl.load(b_ptr + co)
    tl.store(y_ptr + pid_nc.to(tl.int64) * s_out + offs, acc, mask=mask)


@triton.jit
def groupnorm_min_clamp_dropout_kernel(y_ptr, gamma_ptr, beta_ptr, out_ptr,
                                       S, group_numel, eps, min_value, max_value,
                                       p_drop, drop_scale, seed,
                                       G: tl.constexpr, CPG: tl.constexpr,
                                       APPLY_DROPOUT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)             # n * G + g
    g = pid % G
    base = pid.to(tl.int64) * group_numel
    arange = tl.arange(0, BLOCK)

    # pass 1: mean
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        offs = start + arange
        m = offs < group_numel
        acc += tl.load(y_ptr + base + offs, mask=m, other=0.0)
    mean = tl.sum(acc, axis=0) / group_numel

    # pass 2: variance (biased, as GroupNorm)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        offs = start + arange
        m = offs < group_numel
        v = tl.load(y_ptr + base + offs, mask=m, other=0.0)
        d = tl.where(m, v - mean, 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / group_numel
    rstd = 1.0 / tl.sqrt(var + eps)

    # pass 3: normalise, affine, min, clamp, dropout
    for start in range(0, group_numel, BLOCK):
        offs = start + arange
        m = offs < group_numel
        v = tl.load(y_ptr + base + offs, mask=m, other=0.0)
        c = g * CPG + offs // S
        gam = tl.load(gamma_ptr + c, mask=m, other=1.0)
        bet = tl.load(beta_ptr + c, mask=m, other=0.0)
        o = (v - mean) * rstd * gam + bet
        o = tl.minimum(o, min_value, propagate_nan=tl.PropagateNan.ALL)          # torch.min(x, min_value)
        o = tl.maximum(o, min_value, propagate_nan=tl.PropagateNan.ALL)          # clamp(min=min_value)
        o = tl.minimum(o, max_value, propagate_nan=tl.PropagateNan.ALL)          # clamp(max=max_value)
        if APPLY_DROPOUT:
            r = tl.rand(seed, base + offs)
            o = tl.where(r >= p_drop, o * drop_scale, 0.0)
        tl.store(out_ptr + base + offs, o, mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups, min_value, max_value, dropout_p):
        super().__init__()
        # Same parameter names/shapes as Model (conv.weight, conv.bias, norm.weight, norm.bias).
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.norm = nn.GroupNorm(groups, out_channels)
        self.dropout_p = float(dropout_p)
        self.min_value = float(min_value)
        self.max_value = float(max_value)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        b = self.conv.bias.contiguous()
        N, C_in, D, H, W = x.shape
        C_out, _, K, K2, K3 = w.shape
        assert K == K2 == K3, "cubic kernels only"
        OD, OH, OW = D - K + 1, H - K + 1, W - K + 1
        S = OD * OH * OW
        y = torch.empty((N, C_out, OD, OH, OW), device=x.device, dtype=torch.float32)
        BLOCK_CONV = 256
        conv3d_direct_kernel[(N * C_out, triton.cdiv(S, BLOCK_CONV))](
            x, w, b, y, D, H, W, OD, OH, OW,
            C_IN=C_in, C_OUT=C_out, K=K, BLOCK=BLOCK_CONV)

        G = self.norm.num_groups
        CPG = C_out // G
        group_numel = CPG * S
        out = torch.empty_like(y)
        apply_dropout = self.training and self.dropout_p > 0.0
        p = self.dropout_p
        drop_scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if apply_dropout else 0
        groupnorm_min_clamp_dropout_kernel[(N * G,)](
            y, self.norm.weight, self.norm.bias, out,
            S, group_numel, float(self.norm.eps), self.min_value, self.max_value,
            p, drop_scale, seed,
            G=G, CPG=CPG, APPLY_DROPOUT=apply_dropout, BLOCK=1024)
        return out


batch_size = 128
in_channels = 3
out_channels = 16
depth, height, width = 16, 64, 64
kernel_size = 3
groups = 8
min_value = 0.0
max_value = 1.0
dropout_p = 0.2


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups, min_value, max_value, dropout_p]
