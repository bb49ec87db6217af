// WRONG (output memoized by contents): reuses the last output when the inputs' pointers, n and
// first elements match the last call's. A cheap "fingerprint" of the contents: two floats read
// back to the host (a synchronisation inside solve, which the benchmark warns about).
// What must report it:
// - correctness_check: PASS (exit 0): every case draws new random values, so it never hits;
// - benchmark.py: its true cost (exit 0, verdict measured, slower than good/vector_add.cu: it
//   also copies every output into its cache and synchronises): the timed calls rotate input
//   buffers and copy new values in before every call (measure/input_pool.py), so the
//   fingerprint never matches. Were a hit ever timed, its time (a device copy of the output)
//   would fall under the physical floor and the verdict would be invalid.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

static const float* last_x = nullptr;
static const float* last_y = nullptr;
static int last_n = -1;
static float last_first[2] = {0.0f, 0.0f};
static float* cached = nullptr;
static int cached_capacity = 0;

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    float first[2] = {0.0f, 0.0f};
    if (n > 0) {
        cudaMemcpyAsync(&first[0], x, sizeof(float), cudaMemcpyDeviceToHost, stream);
        cudaMemcpyAsync(&first[1], y, sizeof(float), cudaMemcpyDeviceToHost, stream);
        cudaStreamSynchronize(stream);
    }
    if (cached != nullptr && x == last_x && y == last_y && n == last_n && first[0] == last_first[0] &&
        first[1] == last_first[1]) {  // the bug: two elements stand for all of them
        cudaMemcpyAsync(out, cached, sizeof(float) * n, cudaMemcpyDeviceToDevice, stream);
        return;
    }
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
    if (cached_capacity < n) {
        cudaFree(cached);
        cudaMalloc(&cached, sizeof(float) * n);
        cached_capacity = n;
    }
    cudaMemcpyAsync(cached, out, sizeof(float) * n, cudaMemcpyDeviceToDevice, stream);
    last_x = x;
    last_y = y;
    last_n = n;
    last_first[0] = first[0];
    last_first[1] = first[1];
}
