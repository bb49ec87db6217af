// WRONG (tail write): the last block writes zeros past the end of out, up to the grid rounded
// up to whole 256-thread blocks (out[n .. 256 * ceil(n / 256) - 1]). Whether the plain check
// sees it depends on what lies past the end: with PyTorch's caching allocator the tail can land
// in padding (n=1000 alone passed on an H100) or in another tensor ("input 'x' was modified" at
// n=1, 127, 128 and 4097). compute-sanitizer memcheck must always report it (exit 3 with
// --sanitize memcheck): "Invalid __global__ write of size 4 bytes ... tail_write.cu:15".
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + y[i];
    } else {
        out[i] = 0.0f;  // the bug: clears the "padding" of the last block, which out does not have
    }
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    const int threads = 256;
    vector_add_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, out, n);
}
