// C = A @ B in bfloat16 (A: M x K, B: K x N, C: M x N, row-major), float32 accumulation.
// v0, the simplest correct kernel: 32x32 output tiles, one 32x32 thread block per tile, one
// output per thread; A and B are staged through shared memory 32 columns of K at a time and
// converted to float32 there; every multiply-add is an FFMA on the CUDA cores (no tensor
// cores yet). Any M, N, K >= 1: out-of-range tile elements load as zero and are not stored.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

constexpr int TILE = 32;  // output tile edge and K step; 32x32 = 1024 threads, the block limit

__global__ void gemm_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    // A warp is one row of threads (fixed threadIdx.y, threadIdx.x = 0..31): it reads
    // a_tile[ty][k] as one broadcast and b_tile[k][tx] as 32 consecutive words, so neither
    // tile has bank conflicts and neither needs padding.
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Consecutive tx read consecutive addresses of A's row and of B's row: coalesced.
        const int a_col = k0 + tx, b_row = k0 + ty;
        a_tile[ty][tx] = (row < M && a_col < K) ? __bfloat162float(A[(size_t)row * K + a_col]) : 0.0f;
        b_tile[ty][tx] = (b_row < K && col < N) ? __bfloat162float(B[(size_t)b_row * N + col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) sum = fmaf(a_tile[ty][k], b_tile[k][tx], sum);
        __syncthreads();  // the next iteration overwrites the tiles
    }
    if (row < M && col < N) C[(size_t)row * N + col] = __float2bfloat16(sum);  // round to nearest even
}

extern "C" void solve(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                      cudaStream_t stream) {
    const dim3 block(TILE, TILE);
    const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);  // grid.y <= 65535: M up to ~2M rows
    gemm_kernel<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
