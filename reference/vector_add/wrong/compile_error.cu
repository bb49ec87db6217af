// WRONG (compile error): adds the pointer y instead of the element y[i], a type error nvcc
// rejects. The checker must report a solution fault (exit 3, compile error) that quotes
// nvcc's message with the file and line, with no GPU needed.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y;  // the bug: float + const float* is not a float
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
