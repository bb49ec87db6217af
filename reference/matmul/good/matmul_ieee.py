"""Known good: a float32 GEMM with tl.dot(..., input_precision="ieee"), true fp32 products, fp32 sums.

Its summation order differs from torch's (blocks of 32 along K, summed in order), so at
K = 4096 it differs from torch.matmul by up to ~1e-5 relative on single elements: the old
fixed float32 tolerance (1e-5) failed it (issue 14). The reference-error rule must PASS it:
its normwise error against the float64 truth is about 2e-7, under the 1e-5 floor.
The loop bound is a constexpr (K_STEPS) so the Triton interpreter runs it under NumPy 2.4.
"""

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, K_STEPS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    columns = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    inner = tl.arange(0, BLOCK_K)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(K_STEPS):
        k = step * BLOCK_K + inner
        a = tl.load(a_ptr + rows[:, None] * K + k[None, :], mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + columns[None, :], mask=(k[:, None] < K) & (columns[None, :] < N),
                    other=0.0)
        accumulator += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * N + columns[None, :], accumulator,
             mask=(rows[:, None] < M) & (columns[None, :] < N))


def run_kernel(a, b, c, M, N, K, **_):
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        K_STEPS=triton.cdiv(K, BLOCK_K))
