// WRONG (divergent barrier): a __syncthreads() that only the odd lanes of each warp reach. The
// sums are right, and on Hopper the odd lanes are released when the even ones exit, so the
// plain check passes; but a block-wide barrier must be reached by every thread of the block or
// by none. compute-sanitizer synccheck must report "Barrier error detected. Divergent thread(s)
// in warp" at divergent_barrier.cu:15 (exit 3 with --sanitize synccheck). Not yet seen on an
// H100 (probe_data/synccheck.txt: a barrier whole warps skipped was not reported there).
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = i < n ? x[i] + y[i] : 0.0f;
    if (threadIdx.x % 2 == 1) {
        // the bug: the even lanes of the same warp never get here
        __syncthreads();
    }
    if (i < n) out[i] = sum;
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
