// WRONG (tolerance edge): (x + y) * (1 + 4e-5), a relative error of 4 * rtol at float32.
// The checker must FAIL it (exit 1) with a max relative error of about 4e-5 > rtol = 1e-5.
// Its twin that must pass is good/rounding_noise.cu (rtol / 4).
#include <cuda_runtime.h>

__global__ void noisy_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (x[i] + y[i]) * (1.0f + 4e-5f);  // the bug: 4 * rtol too large
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    noisy_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
