// C = A @ B in bfloat16 (A: M x K, B: K x N, C: M x N, row-major), float32 accumulation.
// v1 (from v0, one change: tensor cores): the same 32x32 output tiles, 32x32 thread blocks,
// 32-wide K steps and the same coalesced global loads as v0, but the tiles now stay bfloat16
// in shared memory and the multiply-adds run on the tensor cores: warps 0-3 each compute one
// 16x16 quarter of the block's tile with mma.sync m16n8k16 (bf16 inputs, fp32 accumulation),
// their operands read from shared memory with ldmatrix; warps 4-31 only load tiles.
// Any M, N, K >= 1: out-of-range tile elements load as zero and are not stored.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int TILE = 32;  // output tile edge and K step; 32x32 = 1024 threads, the block limit
constexpr int MMA_K = 16;  // K of one mma.sync.m16n8k16

// --- PTX wrappers: warp-collective, every lane of the warp must execute each call ---
// Fragment layouts of mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type"), lane = 4 * g + t (g = lane >> 2,
// t = lane & 3); a 32-bit register holds two bf16, the lower-indexed element in the low half:
//   A (16x16, row-major): a[0] = A[g][2t..2t+1]      a[1] = A[g+8][2t..2t+1]
//                         a[2] = A[g][2t+8..2t+9]    a[3] = A[g+8][2t+8..2t+9]
//   B (16x8, k x n):      b[0] = B[2t..2t+1][g]      b[1] = B[2t+8..2t+9][g]
//   C, D (16x8, fp32):    d[0], d[1] = D[g][2t], D[g][2t+1]    d[2], d[3] = D[g+8][2t], D[g+8][2t+1]
// ldmatrix.m8n8.x4.b16 loads four 8x8 matrices; lanes 8i..8i+7 give the addresses of the 8
// rows (16 bytes each, 16-byte aligned) of matrix i, and register i of lane l receives
//   without .trans: row l/4, columns 2(l%4), 2(l%4)+1 of matrix i   (an A-style fragment)
//   with .trans:    rows 2(l%4), 2(l%4)+1 of column l/4 of matrix i (a B-style fragment of a
//                   matrix stored k-major, i.e. row k of shared memory holds B[k][n..n+7])
__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __nv_bfloat16* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row))
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __nv_bfloat16* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row))
                 : "memory");
}

// d += a * b on one 16x8 fp32 tile (a: 16x16, b: 16x8, bf16).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// --- end PTX wrappers ---

__global__ void gemm_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    // bf16 tiles (the tensor cores take 16-bit operands): rows of 64 bytes, so every 8-column
    // group that ldmatrix reads starts 16-byte aligned. No padding (v0 had none either): an 8x8
    // ldmatrix matrix spans 8 rows 64 bytes apart, which fall on two sets of 4 banks, 4-way
    // conflicts that the next profile will show.
    __shared__ __align__(16) __nv_bfloat16 a_tile[TILE][TILE];  // [m][k]
    __shared__ __align__(16) __nv_bfloat16 b_tile[TILE][TILE];  // [k][n]

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;  // the A row and the B column this thread loads, as in v0
    const int col = blockIdx.x * TILE + tx;

    // blockDim.x = 32, so each row of threads (fixed ty) is one warp and tx is its lane.
    const int warp = ty, lane = tx;
    const bool computes = warp < 4;  // uniform per warp: mma.sync and ldmatrix need whole warps
    const int warp_m = (warp >> 1) * 16;  // this warp's 16x16 quarter: rows warp_m.., columns warp_n..
    const int warp_n = (warp & 1) * 16;
    float acc[2][4] = {};  // two 16x8 accumulator tiles: columns warp_n..+7 and warp_n+8..+15

    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Consecutive tx read consecutive addresses of A's row and of B's row: coalesced (as v0).
        const int a_col = k0 + tx, b_row = k0 + ty;
        a_tile[ty][tx] = (row < M && a_col < K) ? A[(size_t)row * K + a_col] : zero;
        b_tile[ty][tx] = (b_row < K && col < N) ? B[(size_t)b_row * N + col] : zero;
        __syncthreads();
        if (computes) {
#pragma unroll
            for (int kk = 0; kk < TILE; kk += MMA_K) {
                // A: matrices 0..3 = (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
                // (rows 8-15, k 8-15) of the warp's 16x16 A block: lane l addresses row l % 16,
                // k offset 8 * (l / 16). Registers 0..3 are then exactly a[0..3] above.
                uint32_t a[4];
                ldmatrix_x4(a, &a_tile[warp_m + (lane & 15)][kk + (lane >> 4) * 8]);
                // B: matrices 0..3 = (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15,
                // n 8-15), rows of b_tile being k: same lane addressing, transposed, so registers
                // {0, 1} are b[0], b[1] of columns warp_n..+7 and {2, 3} those of warp_n+8..+15.
                uint32_t b[4];
                ldmatrix_x4_trans(b, &b_tile[kk + (lane & 15)][warp_n + (lane >> 4) * 8]);
                mma_bf16_16816(acc[0], a, b[0], b[1]);
                mma_bf16_16816(acc[1], a, b[2], b[3]);
            }
        }
        __syncthreads();  // the next iteration overwrites the tiles
    }

    if (computes) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int out_row = blockIdx.y * TILE + warp_m + g + (i >> 1) * 8;
                const int out_col = blockIdx.x * TILE + warp_n + half * 8 + 2 * t + (i & 1);
                if (out_row < M && out_col < N)
                    C[(size_t)out_row * N + out_col] = __float2bfloat16(acc[half][i]);  // round to nearest even
            }
    }
}

extern "C" void solve(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                      cudaStream_t stream) {
    const dim3 block(TILE, TILE);
    const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);  // grid.y <= 65535: M up to ~2M rows
    gemm_kernel<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
