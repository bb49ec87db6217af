"""WRONG (one element): the IEEE GEMM of good/matmul_ieee.py with c[0, 0] off by 0.02.

At 64 x 64 and K = 4096 (outputs of magnitude ~64) the normwise error is about 5e-6, under the
1e-5 floor: only the max-norm part of the rule sees it (no element may be further from the
truth than max(8 x the reference's largest error, 1e-5 x the largest |output|), about 2.2e-3
here). The checker must FAIL it (exit 1) and list index [0, 0] first among the mismatches.
"""

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32
ONE_ELEMENT_ERROR = 0.02


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, K_STEPS: tl.constexpr, ERROR: tl.constexpr):
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
    first = (rows[:, None] == 0) & (columns[None, :] == 0)
    accumulator = tl.where(first, accumulator + ERROR, accumulator)  # the bug: one element off by ERROR
    tl.store(c_ptr + rows[:, None] * N + columns[None, :], accumulator,
             mask=(rows[:, None] < M) & (columns[None, :] < N))


def run_kernel(a, b, c, M, N, K, **_):
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        K_STEPS=triton.cdiv(K, BLOCK_K), ERROR=ONE_ELEMENT_ERROR)
