// WRONG (hang): writes out, then every thread spins on a flag that nobody ever sets.
// solve returns at once (the launch is asynchronous); the process hangs at the checker's
// next synchronisation. The checker must kill it after its timeout and report a solution
// fault (exit 3) of kind timeout, while the parent survives.
// The flag is volatile, so every trip re-reads memory and the loop is not undefined
// behaviour that the compiler could delete.
#include <cuda_runtime.h>

__device__ volatile int release_flag = 0;  // never written by anyone

__global__ void vector_add_then_wait_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                            float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
    while (release_flag == 0) {  // the bug: waits for a release that never comes
    }
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_then_wait_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
