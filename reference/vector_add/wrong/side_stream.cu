// WRONG (side stream, not joined): launches its kernel on a stream of its own and returns without
// making the caller's stream wait for it, nor waiting for the caller's stream first.
// The values come out right whenever the host happens to synchronise the whole device, so only
// the launch check sees it: correctness_check's profiled call runs on a fresh stream behind a
// 1.5 ms fence, and this kernel starts during the fence. What must report it:
// - correctness_check on a GPU: FAIL (exit 1), "vector_add_kernel(...) launched on stream S without
//   waiting for the caller's stream: it may read inputs before they are ready";
// - without a GPU: compiled only, exit 4.
// (The probe of /work/probe_data, tests/fixtures/launches: this kernel started 107-141 us into a
// 1011 us fence on an H100.)
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    static cudaStream_t side = nullptr;
    if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, side>>>(x, y, out, n);  // the bug: `stream` is ignored
}
