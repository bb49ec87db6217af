"""C = A @ B in Triton, bfloat16 in and out, float32 accumulator: v0, the plain tiled tl.dot.

One program per 64x64 tile of C, walking K 32 columns at a time; loads are masked at every
edge (other=0 adds nothing to the dot), so any M, N, K >= 1 works. Fixed tile sizes, no
autotuning, no grouped tile order: the starting point that later versions change one thing
at a time. v1: 128x128 output tiles, 64-wide K steps (v0: 64x64, 32).
v2: 128x256 output tiles with 8 warps, so the accumulator fits (v1: 128x128, 4 warps). Offsets are int32, so M*K, K*N and M*N must stay below 2**31.
v3: the A and B tiles come in through host-side tensor descriptors (Hopper's TMA: one
instruction copies a whole tile into shared memory, no per-thread addresses or masks; tiles
that reach past M, N or K arrive zero-filled, which adds nothing to the dot). TMA needs
16-byte-aligned row strides and base addresses, so shapes with K or N not a multiple of 8
(bf16) keep v2's masked pointer loads (USE_TMA=False). Tiles, warps, stages and the masked
pointer store of C stay as in v2.
"""

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64  # v1: 128, 128, 64; v0: 64, 64, 32
NUM_WARPS = 8  # a 128x256 fp32 accumulator is 128 registers per thread over 256 threads (v1: 4 warps)


@triton.jit
def matmul_kernel(a, b, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  USE_TMA: tl.constexpr):
    # a, b: tensor descriptors of A (M, K) and B (K, N) when USE_TMA, else their pointers (v2's path)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_mask = rows[:, None] < M
    col_mask = cols[None, :] < N

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if USE_TMA:
            a_tile = a.load([tl.program_id(0) * BLOCK_M, k0])  # out-of-range rows / columns read as 0
            b_tile = b.load([k0, tl.program_id(1) * BLOCK_N])
        else:
            k_index = k0 + ks
            a_tile = tl.load(a + rows[:, None] * K + k_index[None, :], mask=row_mask & (k_index[None, :] < K), other=0.0)
            b_tile = tl.load(b + k_index[:, None] * N + cols[None, :], mask=(k_index[:, None] < K) & col_mask, other=0.0)
        accumulator = tl.dot(a_tile, b_tile, accumulator)  # bf16 x bf16 -> fp32 on the tensor cores

    tl.store(c_ptr + rows[:, None] * N + cols[None, :], accumulator.to(c_ptr.dtype.element_ty), mask=row_mask & col_mask)


def _tma_ok(t):
    """TMA's rules for a row-major 2-D tensor: base address and row stride multiples of 16 bytes."""
    return t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0 and t.stride(1) == 1


def run_kernel(A, B, C, M, N, K, **_):
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    use_tma = _tma_ok(A) and _tma_ok(B)
    if use_tma:
        a = TensorDescriptor(A, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
        b = TensorDescriptor(B, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    else:
        a, b = A, B
    matmul_kernel[grid](a, b, C, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, USE_TMA=use_tma,
                        num_warps=NUM_WARPS)
