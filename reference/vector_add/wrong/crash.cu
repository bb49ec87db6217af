// WRONG (crash): solve stores through a null pointer on the host, so the process dies of
// SIGSEGV before any kernel runs. The checker must survive it and report a solution fault
// (exit 3) saying the child process crashed (killed by signal 11, SIGSEGV).
// Both the pointer and the store are volatile: otherwise an optimising host compiler may
// see that the pointer is null and delete the store (g++ -O3 does) or turn it into a trap
// instruction (SIGILL instead of SIGSEGV).
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    volatile int* volatile null_pointer = nullptr;
    *null_pointer = n;  // the bug: a host-side null dereference
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
