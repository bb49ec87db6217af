"""WRONG (precision downgrade: fp16 accumulation): good/matmul_ieee.py with its running sum kept in float16.

Each 32-wide block product is exact fp32, but the accumulator is rounded to float16 (10
mantissa bits) after every block along K, as an fp16-accumulating tensor-core GEMM does.
At K = 4096 the sums reach about 64, where float16's spacing is 0.03. The normwise error against
the float64 truth is of order 1e-4 to 1e-3, far above the float32 floor (1e-5): the checker must
FAIL it (exit 1), on a GPU and under the Triton interpreter alike.
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
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    for step in range(K_STEPS):
        k = step * BLOCK_K + inner
        a = tl.load(a_ptr + rows[:, None] * K + k[None, :], mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + columns[None, :], mask=(k[:, None] < K) & (columns[None, :] < N),
                    other=0.0)
        block = tl.dot(a, b, input_precision="ieee")
        accumulator = (accumulator.to(tl.float32) + block).to(tl.float16)  # the downgrade
    tl.store(c_ptr + rows[:, None] * N + columns[None, :], accumulator.to(tl.float32),
             mask=(rows[:, None] < M) & (columns[None, :] < N))


def run_kernel(a, b, c, M, N, K, **_):
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        K_STEPS=triton.cdiv(K, BLOCK_K))
