// WRONG (a blocking side stream, ignoring the stream it is given): launches on a stream made with
// cudaStreamCreate. Such a stream is implicitly ordered with the legacy default stream, so the
// bug hides when the caller uses that stream, but not when the caller hands solve another stream
// (as torch, CUDA graphs and the benchmark's timer may). What must report it:
// - correctness_check on a GPU: FAIL (exit 1): its profiled call runs on a fresh non-blocking
//   stream, and this kernel starts during the fence queued on it ("launched on stream S without
//   waiting for the caller's stream"), or, on a GPU busy with other work, after the fence and still
//   running when the call returns ("and not joined to the caller's stream"); on the legacy default
//   stream the probe saw it ordered;
// - without a GPU: compiled only, exit 4.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    static cudaStream_t side = nullptr;
    if (side == nullptr) cudaStreamCreate(&side);  // blocking: ordered with the legacy default stream only
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, side>>>(x, y, out, n);
}
