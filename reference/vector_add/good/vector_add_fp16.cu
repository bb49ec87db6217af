// Vector add in CUDA, float16 (__half): run with --dtype=float16, which makes setup hand
// out float16 tensors for the __half pointers. Known good at every shape: __hadd rounds
// the sum to nearest even, as torch.add does.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void vector_add_fp16_kernel(const __half* __restrict__ x, const __half* __restrict__ y,
                                       __half* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(x[i], y[i]);
}

extern "C" void solve(const __half* __restrict__ x, const __half* __restrict__ y, __half* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    vector_add_fp16_kernel<<<blocks, threads, 0, stream>>>(x, y, out, n);
}
