"""An honest ModelNew: the GEMM in cuBLAS (strict float32, as the Model), the scale and the LeakyReLU fused
into one CUDA kernel (load_inline) that rewrites the GEMM's output in place: one elementwise pass instead
of two. The same float operations in the same order as the Model, so the epilogue is bit-exact.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void scale_leaky_relu_kernel(float* __restrict__ y, int64_t n, float multiplier, float slope) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = y[i] * multiplier;
        y[i] = v >= 0.f ? v : v * slope;
    }
}

torch::Tensor scale_leaky_relu_(torch::Tensor y, double multiplier, double slope) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.scalar_type() == torch::kFloat32,
                "scale_leaky_relu_ takes a contiguous float32 CUDA tensor");
    const int64_t n = y.numel();
    const int threads = 256;
    const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 1 << 20);
    if (n > 0) {
        scale_leaky_relu_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
            y.data_ptr<float>(), n, static_cast<float>(multiplier), static_cast<float>(slope));
    }
    return y;
}
"""

cpp_source = "torch::Tensor scale_leaky_relu_(torch::Tensor y, double multiplier, double slope);"

epilogue = load_inline(name="kernelbench_reference_gemm_epilogue", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["scale_leaky_relu_"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)  # the Model's name: its weights are copied in
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.gemm.weight, self.gemm.bias)
        return epilogue.scale_leaky_relu_(y, self.multiplier, self.negative_slope)
