"""v0: simplest correct Triton ModelNew for KernelBench L1 #7 (C = A @ B, A: (M, K), B: (K, N), small K).

One program per BLOCK_M x BLOCK_N output tile, a loop over K in BLOCK_K chunks, fp32 accumulation with
exact fp32 products (input_precision="ieee": the run is judged by the reference's own fp32 rounding, so
TF32 is not allowed). No tuning: that is the loop's job. K is a constexpr so the K loop has a compile-time
bound (it also runs under the CPU interpreter with NumPy >= 2.4).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=mask_m[:, None] & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    c = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c, acc, mask=mask_m[:, None] & mask_n[None, :])


def triton_matmul(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    assert A.dim() == 2 and B.dim() == 2 and A.shape[1] == B.shape[0]
    M, K = A.shape
    N = B.shape[1]
    C = torch.empty((M, N), device=A.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](A, B, C, M, N,
                        A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                        K=K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return C.to(A.dtype) if A.dtype != torch.float32 else C


class ModelNew(nn.Module):
    """C = A @ B with a Triton kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return triton_matmul(A, B)
