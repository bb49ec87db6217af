// WRONG (cached output): computes on its first call only; later calls return at once.
// A cheat that makes a benchmark look fast: after the first call solve launches nothing
// and leaves whatever is in out. The checker fills outputs with NaN before every call, so
// any second call in the same process leaves all-NaN output. What must report it:
// - the benchmark's re-check after timing: FAIL (exit 1), outputs all NaN after the timed calls;
// - correctness_check: FAIL (exit 1) if two calls (seeds or shapes) share one process; a
//   checker that starts a fresh process for every call cannot see it, by design of this file.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    static bool already_computed = false;
    if (already_computed) return;  // the bug: assumes the inputs, and out, never change
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
    already_computed = true;
}
