// WRONG (CLI shape only): vectorised with float4 and no scalar tail, so the last n % 4
// elements are never written. Right whenever n % 4 == 0: at the default n = 1 << 20 and at
// the SHAPES entry n=128. The checker must FAIL it (exit 1) at n=1, 127, 129 and 4097,
// whose tails keep the NaN fill. A checker that tests only the CLI shape passes it.
// (Unlike the Triton twin it always launches at least one block: a grid of 0 blocks would
// be a launch error, a different failure.)
#include <cuda_runtime.h>

__global__ void vector_add_float4_kernel(const float4* __restrict__ x, const float4* __restrict__ y,
                                         float4* __restrict__ out, int n_vectors) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_vectors) {
        float4 a = x[i], b = y[i];
        out[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;  // more than enough threads
    // The bug: n / 4 drops the tail; torch's allocations are 16-byte aligned, so float4 is safe.
    vector_add_float4_kernel<<<blocks, threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(y),
        reinterpret_cast<float4*>(out), n / 4);
}
