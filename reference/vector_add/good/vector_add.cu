// Vector add in CUDA, float32: one thread per element, launched on the caller's stream.
// Known good: matches reference/vector_add/ref.py at every shape (run with the default
// --dtype=float32). No cudaDeviceSynchronize: the checker synchronises, and a benchmark
// must not time a host round trip per call.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    vector_add_kernel<<<blocks, threads, 0, stream>>>(x, y, out, n);
}
