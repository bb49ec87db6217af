"""v2: v1's fused kernel (the GEMM, the bias, GELU (tanh form) and the scale in one Triton kernel, the output
written once) with the dot's input precision changed from "ieee" (FFMA) to "tf32x3": each float32 operand is
split into a TF32 high part and a TF32 remainder, and three tensor-core products (hi*hi + hi*lo + lo*hi) keep
float32 accuracy (the dropped lo*lo term is about 2^-22 of each product). Inputs stay float32; no operand is
rounded away, so a change in any input bit the reference sees still reaches the result.

0.5 * (1 + tanh(u)) is computed as sigmoid(2u), the same function without a tanh intrinsic.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

CPU_CONFIG = 0  # which config a CPU (interpreter) run uses
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)  # a plain global float does not compile on a GPU


CONFIGS = [
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 16}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 16}, num_warps=8, num_stages=3),
]


@triton.jit
def linear_gelu_scale_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, scale,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr = 8):
    # grouped tile order: programs running together share rows of x and columns of W in L2
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % group_m
    pid_n = (pid % group) // group_m

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    # x is [M, K] row-major; W is nn.Linear's [N, K] row-major, read as its transpose [K, N]
    x_ptrs = x_ptr + rows[:, None].to(tl.int64) * K + ks[None, :]
    w_ptrs = w_ptr + cols[None, :].to(tl.int64) * K + ks[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = (k0 + ks) < K
        a = tl.load(x_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")  # three TF32 products: float32 accuracy
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    bias = tl.load(b_ptr + cols, mask=col_ok, other=0.0)
    z = acc + bias[None, :]
    inner = SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)
    out = z * tl.sigmoid(2.0 * inner) * scale
    y_ptrs = y_ptr + rows[:, None].to(tl.int64) * N + cols[None, :]
    tl.store(y_ptrs, out, mask=row_ok[:, None] & col_ok[None, :])


# On the GPU the tile shape is autotuned per (M, N, K); Triton's autotuner needs a GPU driver, so a CPU run
# (the Triton interpreter) calls the same kernel with the first config.
linear_gelu_scale_autotuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(linear_gelu_scale_kernel)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # the Model's name: its weights are copied in
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        weight = self.linear.weight.contiguous()
        bias = self.linear.bias.contiguous()
        M, K = x.shape
        N = weight.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
        if x.is_cuda:
            linear_gelu_scale_autotuned[grid](x, weight, bias, y, M, N, K, self.scale)
        else:
            config = CONFIGS[CPU_CONFIG]
            linear_gelu_scale_kernel[grid](x, weight, bias, y, M, N, K, self.scale, **config.kwargs,
                                           num_warps=config.num_warps, num_stages=config.num_stages)
        return y
