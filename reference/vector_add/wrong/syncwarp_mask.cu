// WRONG (warp barrier mask): lanes 0..16 of each warp call __syncwarp(0x0000ffff), whose mask
// names lanes 0..15 only, so lane 16 waits on a barrier it is not part of (the pattern of
// NVIDIA's compute-sanitizer-samples Synccheck/illegal_syncwarp.cu). On an H100 (2026-11-25) the
// plain check already fails it: the barrier traps, "an illegal instruction was encountered"
// (exit 3, illegal_instruction); compute-sanitizer synccheck reports "Barrier error detected.
// Invalid arguments in __syncwarp" at the inlined intrinsic, sm_30_intrinsics.hpp:110 (exit 3).
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = i < n ? x[i] + y[i] : 0.0f;
    if (threadIdx.x % 32 <= 16) {
        // the bug: lane 16 executes it, but the mask has lanes 0..15 only
        __syncwarp(0x0000ffffu);
    }
    if (i < n) out[i] = sum;
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
