// WRONG (uninitialized read): sums go through a scratch buffer of its own, sized to whole
// 256-thread blocks and never cleared; the copy-out kernel reads every slot, the tail slots
// (n and up) that nothing wrote included, and keeps only the first n. The values read are
// thrown away, so the plain check passes (exit 0); compute-sanitizer initcheck must report
// "Uninitialized __global__ memory read" at uninit_scratch.cu:21 (exit 3 with --sanitize
// initcheck). memcheck finds nothing: every read is inside the buffer.
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__global__ void add_into_scratch(const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ scratch, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) scratch[i] = x[i] + y[i];
}

__global__ void copy_out(const float* scratch, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // i < the rounded size: inside the scratch buffer
    // volatile: the read happens for every slot, as a kernel that used the value would do
    // the bug: slots n and up were never written
    float value = *(const volatile float*)&scratch[i];
    if (i < n) out[i] = value;
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    static float* scratch = nullptr;
    static int capacity = 0;
    const int blocks = (n + kThreads - 1) / kThreads;
    if (blocks * kThreads > capacity) {
        cudaFree(scratch);
        capacity = blocks * kThreads;
        cudaMalloc(&scratch, capacity * sizeof(float));  // not cleared: the tail slots stay unwritten
    }
    add_into_scratch<<<blocks, kThreads, 0, stream>>>(x, y, scratch, n);
    copy_out<<<blocks, kThreads, 0, stream>>>(scratch, out, n);
}
