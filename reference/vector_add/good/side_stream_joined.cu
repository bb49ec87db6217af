// Known good: its kernel runs on a side stream, joined to the caller's stream both ways. An
// event recorded on `stream` makes the side stream wait for the work queued before the call
// (the inputs), and an event recorded on the side stream after the kernel makes `stream` wait
// for it, so whatever the caller queues next sees the output. correctness_check must PASS it
// (exit 0) and list vector_add_kernel on the other stream; the probe on an H100 saw the kernel
// start 1.9 us after the fence ended and end 1.3 us before the marker started.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    static cudaStream_t side = nullptr;
    static cudaEvent_t inputs_ready = nullptr, output_ready = nullptr;
    if (side == nullptr) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&output_ready, cudaEventDisableTiming);
    }
    cudaEventRecord(inputs_ready, stream);
    cudaStreamWaitEvent(side, inputs_ready, 0);
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, side>>>(x, y, out, n);
    cudaEventRecord(output_ready, side);
    cudaStreamWaitEvent(stream, output_ready, 0);
}
