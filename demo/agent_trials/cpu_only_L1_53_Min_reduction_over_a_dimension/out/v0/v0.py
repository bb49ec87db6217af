import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# v0: the simplest correct kernel for torch.min(x, dim)[0] on float32.
# x is viewed as (outer, R, inner) with R the reduced dimension. One thread
# computes one output element out[o, i] by walking the R values
# x[o, 0..R-1, i]; neighbouring threads take neighbouring i, so every load of
# a warp is coalesced when inner > 1. NaN propagates as in torch.min.

cuda_src = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

__global__ void min_reduce_kernel(const float* __restrict__ x,
                                  float* __restrict__ out,
                                  long long outer, long long R, long long inner)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = outer * inner;
    if (idx >= total) return;
    long long o = idx / inner;
    long long i = idx - o * inner;
    const float* p = x + o * R * inner + i;
    float m = p[0];
    for (long long r = 1; r < R; ++r) {
        float v = p[r * inner];
        // keep a NaN once seen, take any NaN or smaller value
        if (v < m || v != v) m = (m != m) ? m : v;
    }
    out[idx] = m;
}

torch::Tensor min_reduce_cuda(torch::Tensor x, int64_t dim)
{
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    int64_t nd = x.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    TORCH_CHECK(x.size(dim) > 0, "cannot reduce over an empty dimension");
    x = x.contiguous();

    long long outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= x.size(d);
    long long R = x.size(dim);

    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < nd; ++d) if (d != dim) out_shape.push_back(x.size(d));
    auto out = torch::empty(out_shape, x.options());

    long long total = outer * inner;
    if (total == 0) return out;
    const int threads = 256;
    long long blocks = (total + threads - 1) / threads;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    min_reduce_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), outer, R, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

cpp_src = "torch::Tensor min_reduce_cuda(torch::Tensor x, int64_t dim);"

min_reduce = load_inline(
    name="min_reduce_v0",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["min_reduce_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """min reduction over one dimension with a custom CUDA kernel."""

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return min_reduce.min_reduce_cuda(x, self.dim)
