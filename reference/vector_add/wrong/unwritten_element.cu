// WRONG (unwritten element): never writes out[n - 1]; every other element is right.
// An off-by-one bound (`i < n - 1`). The checker must FAIL it (exit 1): out[n - 1] keeps
// the NaN the checker filled in, a NaN where the reference has none, at every shape.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) out[i] = x[i] + y[i];  // the bug: should be i < n
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
