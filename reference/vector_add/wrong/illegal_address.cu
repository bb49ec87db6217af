// WRONG (illegal address): every thread writes 2^30 floats (4 GiB) past its element, far
// outside any allocation, and never writes out itself. On the GPU the kernel faults with
// cudaErrorIllegalAddress ("an illegal memory access was encountered"), which poisons the
// CUDA context. The checker must report a solution fault (exit 3) naming the illegal memory
// access, with the parent process unharmed. Were the far address ever mapped, out would
// still be all NaN, so the verdict could never be a pass.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + (1 << 30)] = x[i] + y[i];  // the bug: a wild index
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
