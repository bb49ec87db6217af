"""C = A @ B in Triton, bfloat16 in and out, float32 accumulator: v0, the plain tiled tl.dot.

One program per 64x64 tile of C, walking K 32 columns at a time; loads are masked at every
edge (other=0 adds nothing to the dot), so any M, N, K >= 1 works. Fixed tile sizes, no
autotuning, no grouped tile order: the starting point that later versions change one thing
at a time. v1: 128x128 output tiles, 64-wide K steps (v0: 64x64, 32).
v2: 128x256 output tiles with 8 warps, so the accumulator fits (v1: 128x128, 4 warps). Offsets are int32, so M*K, K*N and M*N must stay below 2**31.
"""

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64  # v1: 128, 128, 64; v0: 64, 64, 32
NUM_WARPS = 8  # a 128x256 fp32 accumulator is 128 registers per thread over 256 threads (v1: 4 warps)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_mask = rows[:, None] < M
    col_mask = cols[None, :] < N

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_index = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * K + k_index[None, :], mask=row_mask & (k_index[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k_index[:, None] * N + cols[None, :], mask=(k_index[:, None] < K) & col_mask, other=0.0)
        accumulator = tl.dot(a, b, accumulator)  # bf16 x bf16 -> fp32 on the tensor cores

    tl.store(c_ptr + rows[:, None] * N + cols[None, :], accumulator.to(c_ptr.dtype.element_ty), mask=row_mask & col_mask)


def run_kernel(A, B, C, M, N, K, **_):
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](A, B, C, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS)
