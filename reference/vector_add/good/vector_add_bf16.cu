// Vector add in CUDA, bfloat16 (__nv_bfloat16): run with --dtype=bfloat16, which makes
// setup hand out bfloat16 tensors for the __nv_bfloat16 pointers. Known good at every
// shape; needs sm_80 or newer for the native bfloat16 add.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void vector_add_bf16_kernel(const __nv_bfloat16* __restrict__ x,
                                       const __nv_bfloat16* __restrict__ y,
                                       __nv_bfloat16* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(x[i], y[i]);
}

extern "C" void solve(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ y,
                      __nv_bfloat16* out, int n, cudaStream_t stream) {
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    vector_add_bf16_kernel<<<blocks, threads, 0, stream>>>(x, y, out, n);
}
