// WRONG (launch error): launches 4096 threads per block, above the 1024 every NVIDIA GPU
// allows, so the launch fails with cudaErrorInvalidConfiguration ("invalid configuration
// argument") and no kernel runs. solve does not check, as careless code does not. The
// checker must report a solution fault (exit 3) naming the launch error, read with
// cudaGetLastError after the call; a checker that misses it still sees an all-NaN out
// and must FAIL (exit 1) at the least.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 4096;  // the bug: the limit is 1024 threads per block
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
