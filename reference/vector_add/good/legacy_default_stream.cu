// Known good: solve takes no cudaStream_t, so its kernel launches on the legacy default stream
// (stream 0). That is the only stream such a solve can keep to, so correctness_check gives it
// the legacy default stream as the caller's stream in its profiled call, and must PASS it
// (exit 0). (The benchmark times it on that stream too; a CUDA graph cannot capture it.)
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads>>>(x, y, out, n);
}
