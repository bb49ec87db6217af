// WRONG (no extern "C"): solve is a C++ function, so the library exports the mangled name
// _Z5solvePKfS0_PfiP11CUstream_st and no symbol called solve. It compiles cleanly. The
// checker must report a solution fault (exit 3, missing symbol) whose hint says to write
// extern "C" void solve(...); it can tell from the source before compiling, or from dlsym.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,  // the bug
           cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
