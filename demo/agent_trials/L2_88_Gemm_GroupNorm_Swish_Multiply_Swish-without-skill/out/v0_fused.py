"""v0: one fused Triton kernel: TF32 GEMM (x @ W^T + b) + GroupNorm + Swish + Multiply + Swish.

Key idea: GroupNorm has 256 groups over 8192 channels -> 32 channels per group. A GEMM output tile
of BLOCK_N (multiple of 32) columns holds whole groups for every row, so the group statistics are
computed in the GEMM epilogue from registers; the (1024 x 8192) intermediate never touches HBM.
Fixed tile config (no autotune).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_gemm_gn_swish_kernel(
    x_ptr, w_ptr, b_ptr, gamma_ptr, beta_ptr, mw_ptr, out_ptr,
    M, N, eps,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    K: tl.constexpr,  # constexpr: fixed per model; also works around the CPU interpreter (numpy 2.4) failing on range(0, K)
    GROUP_SIZE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    # B tile [BLOCK_K, BLOCK_N] read from W[N, K] (K-major, as wgmma tf32 needs)
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_rem = K - k0
        a = tl.load(x_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_rem), other=0.0)
        b = tl.load(w_ptrs, mask=mask_n[None, :] & (offs_k[:, None] < k_rem), other=0.0)
        acc = tl.dot(a, b, acc)  # fp32 inputs -> TF32 tensor cores, fp32 accumulate
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    # ---- epilogue: bias + GroupNorm (groups fully inside the tile) + swish * w + swish ----
    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    acc = acc + bias[None, :]
    NG: tl.constexpr = BLOCK_N // GROUP_SIZE
    a3 = tl.reshape(acc, (BLOCK_M, NG, GROUP_SIZE))
    mean = tl.sum(a3, axis=2) / GROUP_SIZE
    d = a3 - mean[:, :, None]
    var = tl.sum(d * d, axis=2) / GROUP_SIZE
    rstd = 1.0 / tl.sqrt(var + eps)
    y = tl.reshape(d * rstd[:, :, None], (BLOCK_M, BLOCK_N))
    gamma = tl.load(gamma_ptr + offs_n, mask=mask_n, other=1.0)
    beta = tl.load(beta_ptr + offs_n, mask=mask_n, other=0.0)
    mw = tl.load(mw_ptr + offs_n, mask=mask_n, other=0.0)
    y = y * gamma[None, :] + beta[None, :]
    y = y * tl.sigmoid(y)
    y = y * mw[None, :]
    y = y * tl.sigmoid(y)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])


def fused_forward(x, weight, bias, gamma, beta, mw, num_groups, eps,
                  BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3):
    M, K = x.shape
    N = weight.shape[0]
    gs = N // num_groups
    assert N % num_groups == 0 and BLOCK_N % gs == 0 and N % BLOCK_N == 0
    out = torch.empty((M, N), device=x.device, dtype=torch.float32)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    fused_gemm_gn_swish_kernel[grid](
        x, weight, bias, gamma, beta, mw, out, M, N, eps,
        x.stride(0), x.stride(1), weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
        K=K, GROUP_SIZE=gs, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        num_warps=num_warps, num_stages=num_stages)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, num_groups, multiply_weight_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.multiply_weight = nn.Parameter(torch.randn(multiply_weight_shape))

    def forward(self, x):
        return fused_forward(x.contiguous(), self.gemm.weight, self.gemm.bias,
                             self.group_norm.weight, self.group_norm.bias, self.multiply_weight,
                             self.group_norm.num_groups, self.group_norm.eps)
