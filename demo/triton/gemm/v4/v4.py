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
v4: a persistent, warp-specialized schedule on the TMA path: one program per SM walks the output
tiles (stride = the number of SMs) in groups of 8 tile rows, so consecutive tiles share their A rows
and B columns in L2; the tile loop is flattened with the K loop and warp-specialized
(tl.range(..., flatten=True, warp_specialize=True)), so Triton gives the TMA loads their own warps
and the next tile's loads start while the current tile's wgmma and epilogue run; C leaves through a
TMA store (rows and columns past M and N are clipped). No tail wave: v3 ran 3.88 waves of 132
programs. Tiles, warps and stages stay as in v3; shapes TMA cannot address keep v2's path.
"""

import functools

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64  # v1: 128, 128, 64; v0: 64, 64, 32
NUM_WARPS = 8  # a 128x256 fp32 accumulator is 128 registers per thread over 256 threads (v1: 4 warps)
GROUP_M = 8  # tile rows per group of the persistent walk: consecutive tiles reuse A rows and B columns in L2


@triton.jit
def _tile_coordinates(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Grouped order: GROUP_M tile rows are walked column by column before the next group of rows."""
    tiles_per_group = GROUP_M * num_pid_n
    first_m = (tile_id // tiles_per_group) * GROUP_M
    rows_in_group = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % tiles_per_group) % rows_in_group
    pid_n = (tile_id % tiles_per_group) // rows_in_group
    return pid_m, pid_n


@triton.jit
def persistent_matmul_kernel(a, b, c, M, N, K,
                             NUM_PROGRAMS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    # a, b, c: tensor descriptors of A (M, K), B (K, N) and C (M, N)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=True,
                            warp_specialize=True):
        pid_m, pid_n = _tile_coordinates(tile_id, num_pid_m, num_pid_n, GROUP_M)
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            a_tile = a.load([pid_m * BLOCK_M, k0])  # out-of-range rows / columns read as 0
            b_tile = b.load([k0, pid_n * BLOCK_N])
            accumulator = tl.dot(a_tile, b_tile, accumulator)  # bf16 x bf16 -> fp32 on the tensor cores
        c.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(c.dtype))  # clipped at M and N


@triton.jit
def matmul_kernel(a, b, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """v2's kernel, for shapes TMA cannot address: masked pointer loads and store."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_mask = rows[:, None] < M
    col_mask = cols[None, :] < N
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_index = k0 + ks
        a_tile = tl.load(a + rows[:, None] * K + k_index[None, :], mask=row_mask & (k_index[None, :] < K), other=0.0)
        b_tile = tl.load(b + k_index[:, None] * N + cols[None, :], mask=(k_index[:, None] < K) & col_mask, other=0.0)
        accumulator = tl.dot(a_tile, b_tile, accumulator)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], accumulator.to(c_ptr.dtype.element_ty), mask=row_mask & col_mask)


@functools.lru_cache(maxsize=None)
def _sm_count(device_index):
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _tma_ok(t):
    """TMA's rules for a row-major 2-D tensor: base address and row stride multiples of 16 bytes."""
    return t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0 and t.stride(1) == 1


def run_kernel(A, B, C, M, N, K, **_):
    if not (_tma_ok(A) and _tma_ok(B) and _tma_ok(C)):
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        matmul_kernel[grid](A, B, C, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS)
        return
    a = TensorDescriptor(A, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b = TensorDescriptor(B, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c = TensorDescriptor(C, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    programs = min(_sm_count(A.device.index), triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N))
    persistent_matmul_kernel[(programs,)](a, b, c, M, N, K, NUM_PROGRAMS=programs, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                          BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=NUM_WARPS)
