// A CUDA solve in this project's own contract for the KernelBench problem 12_Gemm_Multiply_LeakyReLU:
// the Model's weights bind by name (gemm_weight, gemm_bias: state_dict keys with dots made underscores),
// the module constants as sizes and coefficients. One thread per output, float32 throughout: correct
// and slow (a fixture for the binding, not a kernel to time); check it at small sizes, e.g.
//   correctness_check.py 12_Gemm_Multiply_LeakyReLU.cu --ref ../problems/12_Gemm_Multiply_LeakyReLU.py \
//       --output-dir out --batch_size=64 --in_features=256 --out_features=128
#include <cuda_runtime.h>

__global__ void gemm_scale_leaky_relu(const float* __restrict__ x, const float* __restrict__ weight,
                                      const float* __restrict__ bias, float* __restrict__ out, int rows,
                                      int inner, int cols, float multiplier, float slope) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y;
    if (col >= cols || row >= rows) return;
    float sum = 0.f;
    for (int k = 0; k < inner; ++k) sum += x[(long)row * inner + k] * weight[(long)col * inner + k];
    const float v = (sum + bias[col]) * multiplier;
    out[(long)row * cols + col] = v >= 0.f ? v : v * slope;
}

extern "C" void solve(const float* x, const float* gemm_weight, const float* gemm_bias, float* output,
                      int batch_size, int in_features, int out_features, float multiplier, float negative_slope,
                      cudaStream_t stream) {
    const dim3 threads(128);
    const dim3 blocks((out_features + 127) / 128, batch_size);
    gemm_scale_leaky_relu<<<blocks, threads, 0, stream>>>(x, gemm_weight, gemm_bias, output, batch_size,
                                                           in_features, out_features, multiplier, negative_slope);
}
