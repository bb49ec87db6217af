// WRONG (warp barrier mask): lanes 0..16 of each warp call __syncwarp(0x0000ffff), whose mask
// names lanes 0..15 only, so lane 16 waits on a barrier it is not part of (the pattern of
// NVIDIA's compute-sanitizer-samples Synccheck/illegal_syncwarp.cu). The sums are right and the
// plain check passes; compute-sanitizer synccheck must report "Barrier error detected. Invalid
// arguments" at syncwarp_mask.cu:15 (exit 3 with --sanitize synccheck). Not yet seen on an
// H100 (probe_data/synccheck.txt: a __shfl_sync with a bad mask was not reported there).
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
