// Attention forward, O = softmax(Q K^T / sqrt(D)) V, non-causal, bfloat16 (B, H, S, D) tensors.
// v5 of demo/cuda/attention_r2 (v0 there is demo/cuda/attention v8; v1 issued both products as wgmma,
// v2 cut the softmax's idle instructions, v3 pipelined softmax and MMAs inside each warpgroup, v4 loads
// K and V by TMA).
//
// The one change from v4: Q is read, and O written, two bf16 at a time. Each fragment register holds two
// neighbouring head dims of one row, so one 4-byte load fills it (v4: two 2-byte loads and a pack) and one
// 4-byte store writes a normalised pair of O (v4: two 2-byte stores). solve now checks q and o for the
// same 16-byte alignment as k and v (it prints why on stderr and writes nothing otherwise).
//
// v4: K and V tiles arrive by TMA. Thread 0 issues two bulk tensor copies per tile (3-D tensor maps
// over (batch*head, key, head dim), 64 x 64 boxes, 128-byte swizzled as the wgmma descriptors read them;
// keys past S are outside the map and arrive as zeros) completing on the stage's "full" mbarrier. The
// warps wait on that barrier instead of cp.async.wait_group + fence.proxy.async + __syncthreads; each
// thread arrives on the stage's "empty" mbarrier when the P V that read it is done, and thread 0 waits for
// all 256 arrivals before refilling the stage. The maps are encoded on the host per call
// (cuTensorMapEncodeTiled, found through cudaGetDriverEntryPointByVersion: no -lcuda needed). The running
// sum's correction is computed without a branch (a branch there made ptxas wait for the running P V
// before the second row half's exponentials).
// v3: the key loop is software-pipelined by one tile inside each warpgroup (S_j and P_{j-1} V_{j-1}
// issued back to back, tile j's softmax while P_{j-1} V_{j-1} runs); three stages.
// v2: the key mask runs on the last tile only; O's rescale is skipped when no row maximum moved.
// v1's notes follow; where they describe cp.async copies, barriers or proxy fences, v4 replaced them.
// What stays from v8: one block per (128-query block, batch*head); K and V stream through two
// shared buffers 64 keys at a time with cp.async (16-byte copies, keys past S as zero, the next
// tile's copies in flight while the current one is computed, one barrier per tile); Q is loaded once
// into registers as bf16 A fragments; the fp32 online softmax works in base 2 with the scale folded
// into one FMA per logit and every exponent is one ex2.approx.ftz.f32; P is rounded to bf16 and is
// the A operand of O += P V; the row statistics of a row live in the 4 lanes that hold it.
//
// The one change (from v8): both products of a key tile run as warpgroup MMAs (wgmma.mma_async,
// sm_90a, bf16 in, fp32 accumulate) issued by 128-thread warpgroups, instead of per-warp
// mma.sync m16n8k16 fed by ldmatrix:
//   S  = Q K^T : wgmma m64n64k16, A = Q from registers, B = the K tile from shared memory (K-major)
//   O += P V   : wgmma m64n64k16, A = P from registers, B = the V tile from shared memory (MN-major)
// four k16 steps each per 64-key tile. The block becomes two warpgroups (256 threads), each owning 64
// of the block's 128 query rows (M = 64 is wgmma's only M); each warp of a warpgroup holds 16 rows.
// What the change needs with it:
// - K and V tiles are stored as rows of 128 bytes (64 bf16, no padding) under the 128-byte swizzle
//   (16-byte chunk c of row r at chunk c ^ (r % 8)), from a 1024-byte aligned base, the layout the
//   descriptors of demo/cuda/gemm v10 read (v8's 144-byte padded rows are no layout wgmma accepts);
//   the tiles are therefore in dynamic shared memory aligned at run time, as in the GEMM.
// - cp.async and the zero stores are generic-proxy writes: each thread fences them towards the async
//   proxy (fence.proxy.async) before the barrier that hands the tile to the warpgroups.
// - A buffer is refilled only after every warpgroup's O += P V that reads it has completed: each
//   warpgroup waits for its wgmma groups (wgmma.wait_group 0) before the barrier at the top of the
//   next tile, so the P V products of tile i run while the copies of tile i + 1 are awaited.
// Tile sizes: 64 query rows per warpgroup (wgmma's M), 2 warpgroups = 128 rows per block as in v8, 64
// keys per tile as in v8 (a 64 x 64 bf16 tile is exactly one 128-byte swizzle atom of 8 KB, the same
// atom the GEMM's descriptors use), D = 64. Per thread: S 32 fp32, O 32 fp32, Q 16 and P 16 32-bit
// registers, about 100 live values, so __launch_bounds__(256, 2) (at most 128 registers) lets 2 blocks
// = 16 warps share an SM (v8: 8 warps at 255 registers). Shared memory: 2 buffers x (8 KB K + 8 KB V)
// + 1 KB for the alignment = 33 KB per block, 66 KB for two (no opt-in needed).
// ptxas (CUDA 13.0, sm_90a): 128 registers, 0 bytes of spills or stack; 8 HGMMA.64x64x16 in the SASS
// (4 of them .tnspB), no wgmma serialization warning.
// Any S >= 1; D must be 64 and the tensors 16-byte aligned (solve checks both, prints why on stderr and
// writes nothing).
#include <cuda.h>  // CUtensorMap (header only: the driver function is found at run time)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

constexpr int HEAD_DIM = 64;
constexpr int BLOCK_M = 128;  // query rows per block: two warpgroups of 64
constexpr int WG_M = 64;  // query rows per warpgroup: the M of wgmma
constexpr int THREADS = 256;  // two warpgroups
constexpr int BLOCK_N = 64;  // keys per shared-memory tile
constexpr int MMA_K = 16;  // k of wgmma for bf16
constexpr int CHUNK = 8;  // bf16 per 16-byte copy
constexpr int ROW_BYTES = HEAD_DIM * 2;  // a K or V row: 64 bf16 = 128 bytes = one swizzle row
constexpr int ROW_CHUNKS = ROW_BYTES / 16;  // 16-byte chunks per row: 8
constexpr int TILE_BYTES = BLOCK_N * ROW_BYTES;  // one K (or V) tile: 8 KB, one 64 x 64 swizzle atom
constexpr int TILE_CHUNKS = BLOCK_N * ROW_CHUNKS;  // 512 chunks per tile
constexpr int SWIZZLE_ALIGN = 1024;  // the 128-byte swizzle repeats every 8 rows of 128 bytes
constexpr int NUM_BUFFERS = 3;  // tiles j+1 (copying), j (S) and j-1 (P V)
constexpr int SHARED_BYTES = 2 * NUM_BUFFERS * TILE_BYTES + SWIZZLE_ALIGN;  // K[3], V[3] and room to align: 49 KB
constexpr int S_ACC = BLOCK_N / 2;  // fp32 accumulators per thread of a 64 x 64 S tile: 32
constexpr int O_ACC = HEAD_DIM / 2;  // fp32 accumulators per thread of a 64 x 64 O tile: 32
constexpr int D_STEPS = HEAD_DIM / MMA_K;  // k16 steps of Q K^T: 4
constexpr int KEY_STEPS = BLOCK_N / MMA_K;  // k16 steps of P V: 4
static_assert(BLOCK_M == 2 * WG_M && THREADS == 2 * 128, "two warpgroups of 64 rows");
static_assert(TILE_CHUNKS % THREADS == 0, "whole chunks per thread");
static_assert(HEAD_DIM == 64 && BLOCK_N == 64, "one 128-byte swizzle atom per tile");

// Descriptor strides (PTX ISA, "Matrix Descriptor Format"; the values demo/cuda/gemm v10 runs with):
// K-major operand (the K tile as B of Q K^T, like the GEMM's A): LBO 16 bytes (unused under the
// 128-byte swizzle), SBO 1024 = 8 rows of 128 bytes, start address + 32 bytes per k16 step.
// MN-major operand (the V tile as B of P V, like the GEMM's B, transpose flag 1): LBO = the distance
// between 64-column slices along N (one slice here, N = 64, so never used; set to the slice size as in
// the GEMM), SBO 1024 = 8 K rows of 128 bytes, start address + 16 rows (2048 bytes) per k16 step.
constexpr uint32_t K_DESC_LBO = 16, K_DESC_SBO = 8 * ROW_BYTES;
constexpr uint32_t V_DESC_LBO = TILE_BYTES, V_DESC_SBO = 8 * ROW_BYTES;

// --- PTX wrappers: warp-collective (wgmma: warpgroup-collective); every thread must execute each call ---
__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// 2^x from the special-function unit, flushing denormal results to zero (v8).
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// cp.async.cg: 16 bytes from global to shared memory, bypassing registers (and L1). A copy is
// complete only after a cp.async.wait_group that covers the commit_group it belongs to.
__device__ __forceinline__ void cp_async_16(uint32_t shared_destination, const void* global_source) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_destination), "l"(global_source)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// wgmma reads shared memory through the async proxy: this thread's cp.async and generic stores are
// fenced towards it before the barrier that hands the tile to the warpgroups (GEMM v10).
__device__ __forceinline__ void fence_shared_to_async_proxy() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Shared-memory matrix descriptor (sm_90): start address, LBO and SBO in 16-byte units, base offset 0
// (every tile starts 1024-byte aligned), layout type 1 = 128-byte swizzle in bits 62-63 (GEMM v10).
__device__ __forceinline__ uint64_t matrix_descriptor(uint32_t address, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo_bytes >> 4) << 16) |
           (static_cast<uint64_t>(sbo_bytes >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int pending>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}

// Keeps the compiler from moving reads or writes of accumulator registers across this point: placed
// after a wgmma.wait_group (no read of a result before the wait) and before a wgmma.fence (every
// rescale is written before the wgmma that reads it). Emits no instruction.
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

template <int N, int M>
__device__ __forceinline__ void fence_registers_u(uint32_t (&r)[N][M]) {
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < M; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// d (64 x 64 fp32, 32 registers per thread) (+)= A (64 x 16 bf16, from registers) * B (16 x 64 bf16,
// shared memory through desc_b). TRANSPOSE_B = 0: B is K-major (its 64 columns are rows of 16+ k
// values in memory); 1: B is MN-major (its 16 k rows are rows of 64 n values). With A in registers
// only B has a transpose flag (PTX ISA, wgmma.mma_async). accumulate = 0: d = A * B, d's old contents
// ignored (the first k16 step of S needs no zeroed registers).
// Fragment layouts (PTX ISA, "Matrix Fragments for wgmma.mma_async.m64nNk16"), warp w of the
// warpgroup (w = (thread % 128) / 32) owns rows 16w..16w+15; lane = 4g + t:
//   A: a[0] = A[16w+g][2t..2t+1]    a[1] = A[16w+g+8][2t..2t+1]
//      a[2] = A[16w+g][2t+8..2t+9]  a[3] = A[16w+g+8][2t+8..2t+9]   (low half = lower column)
//      i.e. per warp exactly the A fragment of mma.m16n8k16 (v8's q_frag / p_frag convention);
//   D: d[4j], d[4j+1] = D[16w+g][8j+2t], D[16w+g][8j+2t+1];  d[4j+2], d[4j+3] = the same columns of
//      row 16w+g+8 (j = 0..N/8-1), i.e. per warp v8's n8 accumulator tiles laid side by side.
template <int TRANSPOSE_B>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b,
                                                   int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
        "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, accumulate, 1, 1, %38;\n"  // scale-a 1, scale-b 1, transpose-b
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate), "n"(TRANSPOSE_B)
        : "memory");
}
// mbarriers (GEMM v10's helpers): "full" completes when a stage's two tensor copies have landed,
// "empty" when every thread has finished the products that read the stage.
__device__ __forceinline__ void mbarrier_init(uint32_t barrier, uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(uint32_t barrier, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t barrier) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}
__device__ __forceinline__ bool mbarrier_try_wait(uint32_t barrier, uint32_t parity) {
    uint32_t done;
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(barrier), "r"(parity)
        : "memory");
    return done != 0;
}
__device__ __forceinline__ void mbarrier_wait(uint32_t barrier, uint32_t parity) {
    while (!mbarrier_try_wait(barrier, parity)) {
    }
}
// A 3-D box of `map` (coordinates: head dim, key, batch * head) into shared memory, completing on `barrier`.
__device__ __forceinline__ void tma_load_3d(uint32_t destination, const CUtensorMap* map, int x, int y, int z,
                                            uint32_t barrier) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
        ::"r"(destination), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(barrier)
        : "memory");
}
// --- end PTX wrappers ---

// Two bf16 in one 32-bit register, lo in the low half (the fragment convention above).
__device__ __forceinline__ uint32_t pack_bf16x2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
    const __nv_bfloat162 pair = __halves2bfloat162(lo, hi);
    uint32_t bits;
    memcpy(&bits, &pair, sizeof(bits));
    return bits;
}

__device__ __forceinline__ uint32_t pack_float2_to_bf16x2(float lo, float hi) {
    return pack_bf16x2(__float2bfloat16(lo), __float2bfloat16(hi));  // round to nearest even
}

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a tile of 128-byte rows under the
// 128-byte swizzle: the chunk index is XORed with the row's position in its group of 8 rows (GEMM v10).
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
    return row * ROW_BYTES + ((chunk ^ (row & 7)) << 4);
}

__global__ void __launch_bounds__(THREADS, 2)
    attention_kernel(const __grid_constant__ CUtensorMap k_map, const __grid_constant__ CUtensorMap v_map,
                     const __nv_bfloat16* __restrict__ q, __nv_bfloat16* __restrict__ o, int S, float scale_log2) {
    // K[0], K[1], V[0], V[1] tiles of 8 KB each from a 1024-byte aligned base (the swizzle's period).
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const uint32_t raw_address = shared_address(shared_raw);
    const uint32_t padding = (SWIZZLE_ALIGN - raw_address % SWIZZLE_ALIGN) % SWIZZLE_ALIGN;
    uint32_t base = raw_address + padding;
    // An opaque copy: the compiler keeps the aligned base (and the descriptors built from it) in
    // registers instead of re-deriving them from the symbol's address on every key tile (25 uniform
    // instructions per tile in the SASS without it).
    asm volatile("" : "+r"(base));
    unsigned char* shared_bytes = shared_raw + (base - raw_address);
    const uint32_t k_base = base, v_base = base + NUM_BUFFERS * TILE_BYTES;  // + buffer * TILE_BYTES

    const size_t head_offset = (size_t)blockIdx.y * S * HEAD_DIM;  // blockIdx.y = batch * H + head
    const int tid = threadIdx.x, warpgroup = tid / 128, warp_in_group = (tid % 128) / 32, lane = tid % 32;
    const int g = lane >> 2, t = lane & 3;  // fragment row group and column pair (see above)
    // First query row of this warp: warpgroup w of the block takes rows 64w.., its warp j rows 16j..
    const int warp_row = blockIdx.x * BLOCK_M + warpgroup * WG_M + warp_in_group * 16;
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);

    // Q as register A fragments of wgmma, loaded once: q_frag[c] covers this warp's 16 rows and head
    // dims 16c..16c+15 (the k16 step c of Q K^T). Rows past S load as zero (their results are never
    // stored); all threads still run every wgmma below.
    uint32_t q_frag[D_STEPS][4];
#pragma unroll
    for (int c = 0; c < D_STEPS; ++c)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = warp_row + g + 8 * (r & 1);  // registers 1, 3: row g + 8
            const int d = 16 * c + 2 * t + 8 * (r >> 1);  // registers 2, 3: columns + 8
            const size_t index = head_offset + (size_t)row * HEAD_DIM + d;
            q_frag[c][r] = row < S ? reinterpret_cast<const uint32_t*>(q)[index / 2] : 0u;  // two bf16, one load
        }

    // Output accumulators (wgmma D layout): o_acc[4n + 2h + e] is row warp_row + g + 8h, head dim
    // 8n + 2t + e. Row statistics per h (h = 0: row g, h = 1: row g + 8): running_max is the row's
    // (reduced over its 4 lanes), running_sum this lane's share (16 of the row's 64 keys per tile),
    // added across the 4 lanes at the end.
    float o_acc[O_ACC];
#pragma unroll
    for (int i = 0; i < O_ACC; ++i) o_acc[i] = 0.0f;
    float running_max[2] = {-INFINITY, -INFINITY}, running_sum[2] = {0.0f, 0.0f};

    // Tile i (keys 64i..) goes to stage i % 3 by two TMA copies (K and V, 8 KB each, 128-byte swizzled
    // as the descriptors read them; keys past S arrive as zeros: the 3-D map ends at S in every head),
    // issued by thread 0 alone. Before a stage is refilled, thread 0 waits until every thread has
    // arrived on its "empty" barrier, i.e. finished the products of the tile it held (tile i - 3).
    __shared__ __align__(8) uint64_t stage_full[NUM_BUFFERS], stage_empty[NUM_BUFFERS];
    if (tid == 0) {
        for (int stage = 0; stage < NUM_BUFFERS; ++stage) {
            mbarrier_init(shared_address(&stage_full[stage]), 1);
            mbarrier_init(shared_address(&stage_empty[stage]), THREADS);
        }
        fence_barrier_init();
    }
    __syncthreads();
    const int head = blockIdx.y;
    auto load_tile = [&](int stage, int tile) {
        if (tid != 0) return;  // the other lanes of warp 0 go on: the next .aligned wgmma reconverges them
        if (tile >= NUM_BUFFERS) mbarrier_wait(shared_address(&stage_empty[stage]), (tile / NUM_BUFFERS - 1) & 1);
        const uint32_t full = shared_address(&stage_full[stage]);
        mbarrier_arrive_expect_bytes(full, 2 * TILE_BYTES);
        tma_load_3d(k_base + stage * TILE_BYTES, &k_map, 0, tile * BLOCK_N, head, full);
        tma_load_3d(v_base + stage * TILE_BYTES, &v_map, 0, tile * BLOCK_N, head, full);
    };

    // Descriptors of buffer 0's K and V tiles, built once: a k16 step or the other buffer only moves the
    // start address, which is added to the low field (address / 16, 14 bits: shared addresses stay
    // below 2^18 bytes, so the addition never carries into LBO).
    const uint64_t k_desc = matrix_descriptor(k_base, K_DESC_LBO, K_DESC_SBO);
    const uint64_t v_desc = matrix_descriptor(v_base, V_DESC_LBO, V_DESC_SBO);

    // Softmax of one S tile (this warpgroup's 64 rows x 64 keys) in place: s becomes P (fp32), the row
    // statistics move to the new maxima, and correction[h] is what O must be multiplied by before P V
    // of this tile is added. O itself is not touched here: its previous P V may still be running.
    auto softmax_tile = [&](float (&s)[S_ACC], int keys_here, float (&correction)[2], bool (&rescale)[2]) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float tile_max = -INFINITY;
#pragma unroll
            for (int j = 0; j < S_ACC / 4; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int key = 8 * j + 2 * t + e;
                    float& logit = s[4 * j + 2 * h + e];
                    if (keys_here < BLOCK_N) logit = key < keys_here ? logit : -INFINITY;  // raw logit, unscaled
                    tile_max = fmaxf(tile_max, logit);
                }
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
            const float new_max = fmaxf(running_max[h], tile_max * scale_log2);
            rescale[h] = !__all_sync(0xffffffffu, new_max == running_max[h]);  // did a row max of the warp move?
            // Branch-free here (a branch around it makes ptxas wait for the running P V first): 1 when
            // no maximum moved; O's rescale, after that wait, is skipped then.
            correction[h] = exp2_approx(running_max[h] - new_max);
            running_sum[h] *= correction[h];
#pragma unroll
            for (int j = 0; j < S_ACC / 4; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float& p = s[4 * j + 2 * h + e];
                    p = exp2_approx(fmaf(p, scale_log2, -new_max));  // -inf (masked) gives 0
                    running_sum[h] += p;
                }
            running_max[h] = new_max;
        }
    };
    // P (bf16) as register A fragments of O += P V (the S accumulator layout is the A layout, as in v1).
    auto pack_p = [&](const float (&s)[S_ACC], uint32_t (&p)[KEY_STEPS][4]) {
#pragma unroll
        for (int kk = 0; kk < KEY_STEPS; ++kk) {
            p[kk][0] = pack_float2_to_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
            p[kk][1] = pack_float2_to_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
            p[kk][2] = pack_float2_to_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
            p[kk][3] = pack_float2_to_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
        }
    };
    auto issue_s = [&](float (&s)[S_ACC], int buffer) {  // S = Q K^T on the K tile in `buffer`
        const uint32_t tile_step = buffer * (TILE_BYTES >> 4);
#pragma unroll
        for (int c = 0; c < D_STEPS; ++c)
            wgmma_m64n64k16_rs<0>(s, q_frag[c], k_desc + (tile_step + ((c * MMA_K * 2) >> 4)), c > 0);
        wgmma_commit();
    };
    auto issue_pv = [&](const uint32_t (&p)[KEY_STEPS][4], int buffer) {  // O += P V on the V tile in `buffer`
        const uint32_t tile_step = buffer * (TILE_BYTES >> 4);
#pragma unroll
        for (int kk = 0; kk < KEY_STEPS; ++kk)
            wgmma_m64n64k16_rs<1>(o_acc, p[kk], v_desc + (tile_step + ((kk * MMA_K * ROW_BYTES) >> 4)), 1);
        wgmma_commit();
    };
    auto rescale_o = [&](const float (&correction)[2], const bool (&rescale)[2]) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
            if (rescale[h])
#pragma unroll
            for (int n = 0; n < O_ACC / 4; ++n) {
                o_acc[4 * n + 2 * h] *= correction[h];
                o_acc[4 * n + 2 * h + 1] *= correction[h];
            }
    };
    // Tile i has landed in its stage: its "full" barrier completed phase i / 3.
    auto tile_ready = [&](int stage, int tile) {
        mbarrier_wait(shared_address(&stage_full[stage]), (tile / NUM_BUFFERS) & 1);
    };

    // Software pipeline over key tiles (FlashAttention-3's intra-warpgroup overlap): iteration j issues
    // S_j = Q K_j^T and O += P_{j-1} V_{j-1} back to back, waits for S_j only, and computes tile j's
    // softmax while P_{j-1} V_{j-1} runs on the tensor cores; O is rescaled once that product is done.
    // Three buffers: tile j+1 is copied while tile j (S_j) and tile j-1 (P_{j-1} V_{j-1}) are read.
    const int tiles = (S + BLOCK_N - 1) / BLOCK_N;
    uint32_t p_frag[KEY_STEPS][4];
    float correction[2];
    bool rescale[2];
    load_tile(0, 0);
    if (tiles > 1) load_tile(1, 1);
    tile_ready(0, 0);
    {
        float s[S_ACC];
        wgmma_fence();
        issue_s(s, 0);
        wgmma_wait<0>();
        fence_registers(s);
        softmax_tile(s, min(BLOCK_N, S), correction, rescale);  // O is still 0: no rescale needed
        pack_p(s, p_frag);
    }
    int buffer = 0;  // the buffer of tile j - 1
    for (int j = 1; j < tiles; ++j) {
        const int current = buffer == NUM_BUFFERS - 1 ? 0 : buffer + 1;
        const int following = current == NUM_BUFFERS - 1 ? 0 : current + 1;
        // Tile j+1 goes to the stage of tile j-2 once every thread is done with it (load_tile waits),
        // then tile j must have landed.
        if (j + 1 < tiles) load_tile(following, j + 1);
        tile_ready(current, j);
        float s[S_ACC];
        fence_registers(o_acc);
        wgmma_fence();
        issue_s(s, current);
        issue_pv(p_frag, buffer);
        wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
        fence_registers(s);
        softmax_tile(s, min(BLOCK_N, S - j * BLOCK_N), correction, rescale);
        // The exponentials stay in S's own registers until P_{j-1} V_{j-1} is done: P_j is packed into
        // p_frag only after the wait, so nothing overwrites registers the running wgmma still reads.
        fence_registers(s);
        fence_registers(running_sum);
        wgmma_wait<0>();  // P_{j-1} V_{j-1} is in O, and p_frag is no longer read
        fence_registers(o_acc);
        fence_registers_u(p_frag);
        mbarrier_arrive(shared_address(&stage_empty[buffer]));  // this thread is done with tile j-1's stage
        rescale_o(correction, rescale);
        pack_p(s, p_frag);
        buffer = current;
    }
    fence_registers(o_acc);
    wgmma_fence();
    issue_pv(p_frag, buffer);  // the last tile's P V
    wgmma_wait<0>();  // the last O += P V is in the accumulators before they are read
    fence_registers(o_acc);

#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float row_sum = running_sum[h];
        row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 1);
        row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 2);
        const float inverse_sum = 1.0f / row_sum;
        const int row = warp_row + g + 8 * h;
        if (row < S) {
#pragma unroll
            for (int n = 0; n < O_ACC / 4; ++n)  // two neighbouring bf16 of the row, one 4-byte store
                reinterpret_cast<uint32_t*>(o)[(head_offset + (size_t)row * HEAD_DIM + 8 * n + 2 * t) / 2] =
                    pack_float2_to_bf16x2(o_acc[4 * n + 2 * h] * inverse_sum, o_acc[4 * n + 2 * h + 1] * inverse_sum);
        }
    }
}

// K or V, (B * H, S, 64) bf16, as a 3-D tensor map read in boxes of 64 keys x 64 dims x 1 head, 128-byte
// swizzled in shared memory; keys past S (out of the map's range) arrive as zeros.
static bool encode_map(CUtensorMap* map, const __nv_bfloat16* tensor, int heads, int S) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void* function = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            function = nullptr;
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
    }();
    if (encode == nullptr) return false;
    const cuuint64_t dims[3] = {(cuuint64_t)HEAD_DIM, (cuuint64_t)S, (cuuint64_t)heads};
    const cuuint64_t strides[2] = {(cuuint64_t)ROW_BYTES, (cuuint64_t)S * ROW_BYTES};  // bytes per key, per head
    const cuuint32_t box[3] = {(cuuint32_t)HEAD_DIM, (cuuint32_t)BLOCK_N, 1};
    const cuuint32_t element_strides[3] = {1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<__nv_bfloat16*>(tensor), dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

extern "C" void solve(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                      int B, int H, int S, int D, cudaStream_t stream) {
    if (D != HEAD_DIM) {
        fprintf(stderr, "attention: only D = %d is supported, got D = %d; nothing was written\n", HEAD_DIM, D);
        return;
    }
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(k) | reinterpret_cast<uintptr_t>(v) |
                                reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(o);
    if (addresses % 16 != 0) {
        fprintf(stderr, "attention: q, k, v and o must be 16-byte aligned (tensor copies, paired loads and stores); nothing was written\n");
        return;
    }
    CUtensorMap k_map{}, v_map{};
    if (!encode_map(&k_map, k, B * H, S) || !encode_map(&v_map, v, B * H, S)) {
        fprintf(stderr, "attention: cuTensorMapEncodeTiled is unavailable or refused the K/V maps; nothing was written\n");
        return;
    }
    const dim3 grid((S + BLOCK_M - 1) / BLOCK_M, B * H);  // grid.y <= 65535 (batch * heads)
    const float log2_e = 1.4426950408889634f;
    static const cudaError_t raised =  // over the 48 KB default; a failure shows as a launch error
        cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES);
    (void)raised;
    attention_kernel<<<grid, THREADS, SHARED_BYTES, stream>>>(k_map, v_map, q, o, S, log2_e / sqrtf((float)D));
}
