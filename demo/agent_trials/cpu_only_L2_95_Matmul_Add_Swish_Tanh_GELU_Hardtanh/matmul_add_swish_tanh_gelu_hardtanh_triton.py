"""KernelBench level 2, problem 95: Matmul + Add + Swish + Tanh + GELU + Hardtanh.

ModelNew: one fused Triton kernel. Each program computes one BLOCK_M x BLOCK_N tile of
y = x @ W^T in fp32 (input_precision="ieee": the problem is float32 and is judged by the
reference's own rounding), then applies the whole epilogue to the accumulator before the store:
  + bias + add_value, swish (x * sigmoid(x)), tanh, exact (erf) GELU, hardtanh(-1, 1).
No tuning: this is v0, the simplest correct kernel.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_linear_act_kernel(
    x_ptr, w_ptr, b_ptr, a_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    # W is (N, K); load a (BLOCK_K, BLOCK_N) tile of W^T
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + offs_k) < K
        a = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    n_mask = offs_n < N
    bias = tl.load(b_ptr + offs_n, mask=n_mask, other=0.0)
    addv = tl.load(a_ptr + offs_n, mask=n_mask, other=0.0)
    y = acc + bias[None, :]
    y = y + addv[None, :]
    # Swish
    y = tl.sigmoid(y) * y
    # Tanh, written from tl.sigmoid (the interpreter has no libdevice.tanh)
    y = 2.0 * tl.sigmoid(2.0 * y) - 1.0
    # exact GELU (erf form, torch's default approximate="none")
    y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))
    # Hardtanh(-1, 1)
    y = tl.minimum(tl.maximum(y, -1.0), 1.0)

    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, y, mask=(offs_m[:, None] < M) & n_mask[None, :])


def fused_linear_act(x, weight, bias, add_value):
    assert x.dim() == 2
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty((M, N), device=x.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    fused_linear_act_kernel[grid](
        x, weight, bias, add_value, out,
        M, N, K,
        x.stride(0), x.stride(1),
        weight.stride(0), weight.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
    )
    return out


class ModelNew(nn.Module):
    """Same parameters (names and shapes) as the problem's Model, so its state_dict loads."""

    def __init__(self, in_features, out_features, add_value_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.add_value = nn.Parameter(torch.randn(add_value_shape))

    def forward(self, x):
        return fused_linear_act(x, self.matmul.weight, self.matmul.bias, self.add_value)
