// WRONG (mutates input): out is exactly right, but the sum is also stored into x, through
// a const_cast, so the signature still promises `const float* x`. The checker must FAIL it
// (exit 1) and name input `x` as modified: it has to compare the inputs after the call,
// not trust the const in the signature.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sum = x[i] + y[i];
        out[i] = sum;
        const_cast<float*>(x)[i] = sum;  // the bug: scribbles over an input
    }
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
