"""An honest ModelNew: ReLU in one CUDA kernel built by load_inline, 16-byte loads and stores where aligned.

Launched on PyTorch's current stream; NaN stays NaN as in torch.relu (`v < 0 ? 0 : v`).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float relu(float v) { return v < 0.f ? 0.f : v; }

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t count) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = relu(v.x); v.y = relu(v.y); v.z = relu(v.z); v.w = relu(v.w);
        y[i] = v;
    }
}

__global__ void relu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t start, int64_t n) {
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        y[i] = relu(x[i]);
    }
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "relu_forward takes a float32 CUDA tensor");
    auto input = x.contiguous();
    auto output = torch::empty_like(input);
    const int64_t n = input.numel();
    const float* in = input.data_ptr<float>();
    float* out = output.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
    const int64_t vectors = aligned ? n / 4 : 0;
    if (vectors > 0) {
        const int64_t blocks = std::min<int64_t>((vectors + threads - 1) / threads, 1 << 20);
        relu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                                  reinterpret_cast<float4*>(out), vectors);
    }
    if (n > vectors * 4) {
        const int64_t rest = n - vectors * 4;
        const int64_t blocks = std::min<int64_t>((rest + threads - 1) / threads, 1 << 20);
        relu_scalar<<<blocks, threads, 0, stream>>>(in, out, vectors * 4, n);
    }
    return output;
}
"""

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu_extension = load_inline(name="kernelbench_reference_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                             functions=["relu_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_extension.relu_forward(x)
