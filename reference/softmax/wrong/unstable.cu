// WRONG (unstable): softmax without subtracting the row max, exp(x) / sum(exp(x)).
// Right on the plain N(0, 1) inputs of the default shape; but expf overflows float32 to
// inf above x = 88.7, and inf / inf is NaN. The checker must FAIL it (exit 1) on the
// SHAPES entry with scale=100 (NaN where the reference has none), and on every shape when
// run with --scale=100. Otherwise identical to good/softmax.cu.
#include <cuda_runtime.h>
#include <math.h>

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;

__device__ float warp_sum(float value) {
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

__device__ float block_sum(float value, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    value = warp_sum(value);
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    if (warp == 0) {
        value = warp_sum(lane < WARPS ? scratch[lane] : 0.0f);
        if (lane == 0) scratch[0] = value;
    }
    __syncthreads();
    return scratch[0];
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ out, int D) {
    __shared__ float scratch[WARPS];
    const float* row_in = x + (size_t)blockIdx.x * D;
    float* row_out = out + (size_t)blockIdx.x * D;

    float row_sum = 0.0f;
    for (int column = threadIdx.x; column < D; column += THREADS) row_sum += expf(row_in[column]);  // the bug
    row_sum = block_sum(row_sum, scratch);

    for (int column = threadIdx.x; column < D; column += THREADS) row_out[column] = expf(row_in[column]) / row_sum;
}

extern "C" void solve(const float* __restrict__ x, float* out, int N, int D, cudaStream_t stream) {
    softmax_kernel<<<N, THREADS, 0, stream>>>(x, out, D);
}
