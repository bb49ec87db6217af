"""ModelNew for KernelBench level 2 / 41_Gemm_BatchNorm_GELU_ReLU, written in Triton.

v0: the simplest correct version, three kernels:
  1. _gemm_bias_kernel      y = x @ W^T + b               (fp32, tl.dot in "ieee" precision)
  2. _bn_stats_kernel       per-feature batch mean / biased variance of y (two passes over the
                            rows: mean first, then the centred sum of squares), and the
                            running_mean / running_var update BatchNorm1d makes in training mode
  3. _bn_gelu_relu_kernel   out = relu(gelu((y - mean) * rstd * gamma + beta)), exact (erf) GELU
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_bias_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                      stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        # W is (N, K); load a (BLOCK_K, BLOCK_N) tile of W^T
        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + ks[:, None] * stride_wk,
                    mask=(offs_n[None, :] < N) & (ks[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = acc + bias[None, :]
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _bn_stats_kernel(y_ptr, mean_ptr, var_ptr, run_mean_ptr, run_var_ptr, M, N,
                     stride_ym, stride_yn, momentum, unbias,
                     UPDATE_RUNNING: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_r = tl.arange(0, BLOCK_M)
    nmask = offs_n < N
    # pass 1: mean
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + offs_r
        v = tl.load(y_ptr + rows[:, None] * stride_ym + offs_n[None, :] * stride_yn,
                    mask=(rows[:, None] < M) & nmask[None, :], other=0.0)
        acc += v
    mean = tl.sum(acc, axis=0) / M
    # pass 2: biased variance, centred
    acc2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + offs_r
        msk = (rows[:, None] < M) & nmask[None, :]
        v = tl.load(y_ptr + rows[:, None] * stride_ym + offs_n[None, :] * stride_yn,
                    mask=msk, other=0.0)
        d = tl.where(msk, v - mean[None, :], 0.0)
        acc2 += d * d
    var = tl.sum(acc2, axis=0) / M
    tl.store(mean_ptr + offs_n, mean, mask=nmask)
    tl.store(var_ptr + offs_n, var, mask=nmask)
    if UPDATE_RUNNING:
        rm = tl.load(run_mean_ptr + offs_n, mask=nmask, other=0.0)
        rv = tl.load(run_var_ptr + offs_n, mask=nmask, other=0.0)
        tl.store(run_mean_ptr + offs_n, (1.0 - momentum) * rm + momentum * mean, mask=nmask)
        tl.store(run_var_ptr + offs_n, (1.0 - momentum) * rv + momentum * (var * unbias), mask=nmask)


@triton.jit
def _bn_gelu_relu_kernel(y_ptr, out_ptr, mean_ptr, var_ptr, gamma_ptr, beta_ptr, M, N, eps,
                         stride_ym, stride_yn, stride_om, stride_on,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = offs_n < N
    msk = (offs_m[:, None] < M) & nmask[None, :]
    mean = tl.load(mean_ptr + offs_n, mask=nmask, other=0.0)
    var = tl.load(var_ptr + offs_n, mask=nmask, other=1.0)
    gamma = tl.load(gamma_ptr + offs_n, mask=nmask, other=1.0)
    beta = tl.load(beta_ptr + offs_n, mask=nmask, other=0.0)
    scale = gamma / tl.sqrt(var + eps)
    shift = beta - mean * scale
    y = tl.load(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, mask=msk, other=0.0)
    z = y * scale[None, :] + shift[None, :]
    g = 0.5 * z * (1.0 + tl.erf(z * 0.7071067811865476))
    out = tl.maximum(g, 0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, out, mask=msk)


class ModelNew(nn.Module):
    """GEMM -> BatchNorm1d -> GELU -> ReLU; same parameters and buffers as Model."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.batch_norm = nn.BatchNorm1d(out_features)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        w = self.gemm.weight
        N = w.shape[0]
        bn = self.batch_norm
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        BM, BN, BK = 128, 128, 64
        _gemm_bias_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
            x, w, self.gemm.bias, y, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
            BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, num_warps=4, num_stages=3)

        use_batch_stats = bn.training or bn.running_mean is None
        if use_batch_stats:
            mean = torch.empty(N, device=x.device, dtype=torch.float32)
            var = torch.empty(N, device=x.device, dtype=torch.float32)
            update = bn.training and bn.track_running_stats and bn.running_mean is not None
            momentum = bn.momentum
            if update:
                bn.num_batches_tracked.add_(1)
                if momentum is None:  # cumulative moving average
                    momentum = 1.0 / float(bn.num_batches_tracked.item())
            else:
                momentum = 0.0
            SBM, SBN = 64, 64
            _bn_stats_kernel[(triton.cdiv(N, SBN),)](
                y, mean, var,
                bn.running_mean if update else mean, bn.running_var if update else var,
                M, N, y.stride(0), y.stride(1), float(momentum), float(M) / float(max(M - 1, 1)),
                UPDATE_RUNNING=update, BLOCK_M=SBM, BLOCK_N=SBN, num_warps=4)
        else:
            mean, var = bn.running_mean, bn.running_var

        out = torch.empty_like(y)
        ABM, ABN = 64, 64
        _bn_gelu_relu_kernel[(triton.cdiv(M, ABM), triton.cdiv(N, ABN))](
            y, out, mean, var, bn.weight, bn.bias, M, N, float(bn.eps),
            y.stride(0), y.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=ABM, BLOCK_N=ABN, num_warps=4)
        return out
