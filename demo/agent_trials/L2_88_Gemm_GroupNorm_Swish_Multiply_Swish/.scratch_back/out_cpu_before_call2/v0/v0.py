"""ModelNew for KernelBench level 2 problem 88: Gemm -> GroupNorm -> Swish -> Multiply -> Swish.

v0: the simplest correct Triton version.
  kernel 1: y = x @ W^T + b   (fp32 tl.dot, input_precision="ieee": exact fp32 like the reference)
  kernel 2: one program per row: GroupNorm (affine) -> swish -> * multiply_weight -> swish
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N,
                  K: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + offs_k) < K
        a = tl.load(x_ptr + offs_m[:, None] * K + (k0 + offs_k)[None, :],
                    mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        # W is (N, K) row-major; load the (BLOCK_K, BLOCK_N) tile of W^T
        b = tl.load(w_ptr + offs_n[None, :] * K + (k0 + offs_k)[:, None],
                    mask=n_mask[None, :] & k_mask[:, None], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    bias = tl.load(b_ptr + offs_n, mask=n_mask, other=0.0)
    acc = acc + bias[None, :]
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def gn_swish_mul_swish_kernel(y_ptr, gw_ptr, gb_ptr, mw_ptr, out_ptr, N, eps,
                              G: tl.constexpr, GS: tl.constexpr,
                              BLOCK_G: tl.constexpr, BLOCK_GS: tl.constexpr):
    row = tl.program_id(0)
    g = tl.arange(0, BLOCK_G)
    c = tl.arange(0, BLOCK_GS)
    col = g[:, None] * GS + c[None, :]
    mask = (g[:, None] < G) & (c[None, :] < GS)
    v = tl.load(y_ptr + row * N + col, mask=mask, other=0.0)
    mean = tl.sum(v, axis=1) / GS
    d = tl.where(mask, v - mean[:, None], 0.0)
    var = tl.sum(d * d, axis=1) / GS
    rstd = 1.0 / tl.sqrt(var + eps)
    gw = tl.load(gw_ptr + col, mask=mask, other=0.0)
    gb = tl.load(gb_ptr + col, mask=mask, other=0.0)
    mw = tl.load(mw_ptr + col, mask=mask, other=0.0)
    h = d * rstd[:, None] * gw + gb
    h = h * tl.sigmoid(h)
    h = h * mw
    h = h * tl.sigmoid(h)
    tl.store(out_ptr + row * N + col, h, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, num_groups, multiply_weight_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.multiply_weight = nn.Parameter(torch.randn(multiply_weight_shape))

    def forward(self, x):
        x = x.contiguous()
        w = self.gemm.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        BM, BN, BK = 64, 64, 32
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        linear_kernel[grid](x, w, self.gemm.bias, y, M, N, K=K,
                            BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, num_warps=4)
        G = self.group_norm.num_groups
        GS = N // G
        out = torch.empty_like(y)
        gn_swish_mul_swish_kernel[(M,)](y, self.group_norm.weight, self.group_norm.bias,
                                        self.multiply_weight, out, N, self.group_norm.eps,
                                        G=G, GS=GS,
                                        BLOCK_G=triton.next_power_of_2(G),
                                        BLOCK_GS=triton.next_power_of_2(GS), num_warps=8)
        return out
