// Known good, on purpose at the edge: (x + y) * (1 + 2.5e-6), a relative error of rtol/4.
// A kernel that sums in another order or fuses a multiply-add differs from the reference
// by about this much, so this is what "correct" looks like in practice. The checker must
// PASS it at float32 (rtol = 1e-5). Its twin that must fail is wrong/tolerance_edge.cu.
#include <cuda_runtime.h>

__global__ void noisy_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (x[i] + y[i]) * (1.0f + 2.5e-6f);  // rtol / 4
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    noisy_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
