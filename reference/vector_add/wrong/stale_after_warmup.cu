// WRONG (stale after warm-up): correct for its first 64 calls in a process, then solve
// returns without launching. correctness_check makes at most 18 calls (6 shapes x 3 seeds),
// so it PASSES there (exit 0); the benchmark poisons the outputs before every timed call and
// checks what the last one left: FAIL (exit 1), outputs of the timed calls all NaN.
#include <cuda_runtime.h>

static int calls = 0;
static const int kHonestCalls = 64;

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    if (++calls > kHonestCalls) return;  // the bug: assumes nothing changes once warm
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
