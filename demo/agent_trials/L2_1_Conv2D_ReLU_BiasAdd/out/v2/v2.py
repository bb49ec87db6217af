import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_relu_bias_kernel(
    x_ptr, w_ptr, cb_ptr, b_ptr, y_ptr,
    C, H, W, OC, OH, OW, NUM_OWB,
    KH: tl.constexpr, KW: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr,
):
    # Implicit GEMM: rows = output pixels, cols = output channels, reduction over (c, kh, kw),
    # 3xTF32 dot (tensor cores, FP32-accurate).
    # Coalesced operands: a program's BLOCK_M pixels are consecutive ow of one output row
    # (n, oh), so each A column is a contiguous run of x; the weights arrive as
    # w_t[oc, kh, kw, c] (c contiguous), so each B column is a contiguous run too.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    row = pid_m // NUM_OWB              # n * OH + oh
    owb = pid_m % NUM_OWB
    n_idx = row // OH
    oh = row % OH
    ow0 = owb * BLOCK_M
    offs_i = tl.arange(0, BLOCK_M)
    mask_m = (ow0 + offs_i) < OW
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < OC

    # offset of x[n, 0, oh, ow0] (scalar) and w_t[oc, 0, 0, 0]
    x_base = n_idx * (C * H * W) + oh * W + ow0
    w_base = offs_n * (KH * KW * C)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        offs_c = c0 + tl.arange(0, BLOCK_C)
        mask_c = offs_c < C
        for kh in tl.static_range(KH):
            for kw in tl.static_range(KW):
                a_ptrs = x_ptr + (x_base + kh * W + kw) + offs_i[:, None] + offs_c[None, :] * (H * W)
                a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_c[None, :], other=0.0)
                b_ptrs = w_ptr + w_base[None, :] + (kh * KW + kw) * C + offs_c[:, None]
                b = tl.load(b_ptrs, mask=mask_c[:, None] & mask_n[None, :], other=0.0)
                acc = tl.dot(a, b, acc, input_precision="tf32x3")

    cb = tl.load(cb_ptr + offs_n, mask=mask_n, other=0.0)
    bb = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    acc = acc + cb[None, :]
    acc = tl.maximum(acc, 0.0)
    acc = acc + bb[None, :]

    # y[n, oc, oh, ow0 + i]
    y_base = n_idx * (OC * OH * OW) + oh * OW + ow0
    y_ptrs = y_ptr + y_base + offs_i[:, None] + offs_n[None, :] * (OH * OW)
    tl.store(y_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])


def conv2d_relu_bias(x, weight, conv_bias, bias):
    x = x.contiguous()
    N, C, H, W = x.shape
    OC, _, KH, KW = weight.shape
    OH, OW = H - KH + 1, W - KW + 1
    # [OC, KH, KW, C]: the reduction's channel index is contiguous for each (oc, tap)
    w_t = weight.permute(0, 2, 3, 1).contiguous()
    y = torch.empty((N, OC, OH, OW), device=x.device, dtype=x.dtype)
    BLOCK_M, BLOCK_N, BLOCK_C = 64, 64, 16
    num_owb = triton.cdiv(OW, BLOCK_M)
    grid = (N * OH * num_owb, triton.cdiv(OC, BLOCK_N))
    conv2d_relu_bias_kernel[grid](
        x, w_t, conv_bias.contiguous(), bias.reshape(-1).contiguous(), y,
        C, H, W, OC, OH, OW, num_owb,
        KH=KH, KW=KW, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_C=BLOCK_C,
    )
    return y


class ModelNew(nn.Module):
    """Conv2d (valid, stride 1) + ReLU + per-channel bias add, fused in one Triton kernel."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return conv2d_relu_bias(x, self.conv.weight, self.conv.bias, self.bias)
