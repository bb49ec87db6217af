// WRONG (dtype mismatch): declares double* for what setup makes float32 tensors. Calling it
// would read each pair of floats as one double and run past the end of every buffer. The
// checker must refuse to call it and report a solution fault (exit 3, signature mismatch)
// naming parameter x as double* (float64) against a float32 tensor, never silently
// reinterpret the memory.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const double* __restrict__ x, const double* __restrict__ y,
                                  double* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" void solve(const double* __restrict__ x, const double* __restrict__ y, double* out, int n,
                      cudaStream_t stream) {  // the bug: the tensors hold float32
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
