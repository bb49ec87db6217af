"""WRONG (precision downgrade): the IEEE GEMM of good/matmul_ieee.py on inputs rounded to TF32.

Each input keeps 10 of its 23 mantissa bits, rounded to nearest (what a TF32 tensor core
sees), emulated with integer arithmetic so the Triton interpreter and a GPU compute the same
thing. The normwise error against the float64 truth is about 3e-4 at every K, 800 times the
reference's own at K = 4096. The checker must FAIL it (exit 1) under the reference-error
rule, and PASS it when ref.py says `allow_tf32 = True` (floor 1e-3) or gives atol/rtol.
"""

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32
DROPPED_MANTISSA_BITS = 13  # float32 keeps 23, TF32 10


@triton.jit
def round_mantissa(x, DROP: tl.constexpr):
    """Round to nearest (ties away from zero), keeping 23 - DROP mantissa bits."""
    bits = x.to(tl.int32, bitcast=True)
    bits = (bits + (1 << (DROP - 1))) & ~((1 << DROP) - 1)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, K_STEPS: tl.constexpr, DROP: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    columns = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    inner = tl.arange(0, BLOCK_K)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(K_STEPS):
        k = step * BLOCK_K + inner
        a = tl.load(a_ptr + rows[:, None] * K + k[None, :], mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + columns[None, :], mask=(k[:, None] < K) & (columns[None, :] < N),
                    other=0.0)
        accumulator += tl.dot(round_mantissa(a, DROP), round_mantissa(b, DROP), input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * N + columns[None, :], accumulator,
             mask=(rows[:, None] < M) & (columns[None, :] < N))


def run_kernel(a, b, c, M, N, K, **_):
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        K_STEPS=triton.cdiv(K, BLOCK_K), DROP=DROPPED_MANTISSA_BITS)
