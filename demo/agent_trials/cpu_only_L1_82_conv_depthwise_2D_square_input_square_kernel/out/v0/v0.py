"""ModelNew for KernelBench level 1 problem 82: depthwise 2D convolution (square input, square kernel).

v0: the simplest correct CUDA kernel - one thread per output element, direct K x K loop over the
input window, consecutive threads on consecutive output columns (coalesced loads and stores).
No tiling, no shared memory, no tuning: that is the optimization loop's job.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

__global__ void dwconv2d_fwd_kernel(const float* __restrict__ x,
                                    const float* __restrict__ w,
                                    const float* __restrict__ b,
                                    float* __restrict__ y,
                                    int C, int H, int W, int K, int stride, int pad,
                                    int Ho, int Wo, long long total, int has_bias) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int wo = (int)(idx % Wo);
    long long t = idx / Wo;
    int ho = (int)(t % Ho);
    long long nc = t / Ho;            // n * C + c
    int c = (int)(nc % C);

    const float* xp = x + nc * (long long)H * W;
    const float* wp = w + (long long)c * K * K;
    int hi0 = ho * stride - pad;
    int wi0 = wo * stride - pad;

    float acc = 0.0f;
    for (int kh = 0; kh < K; ++kh) {
        int hi = hi0 + kh;
        if (hi < 0 || hi >= H) continue;
        for (int kw = 0; kw < K; ++kw) {
            int wi = wi0 + kw;
            if (wi < 0 || wi >= W) continue;
            acc += xp[(long long)hi * W + wi] * wp[kh * K + kw];
        }
    }
    if (has_bias) acc += b[c];
    y[idx] = acc;
}

torch::Tensor dwconv2d_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                               int64_t stride, int64_t padding) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda(), "dwconv2d: tensors must be on a CUDA device");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
                "dwconv2d: float32 only");
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4, "dwconv2d: expected 4-D input and weight");
    c10::cuda::CUDAGuard guard(x.device());

    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    const int N = (int)xc.size(0), C = (int)xc.size(1), H = (int)xc.size(2), W = (int)xc.size(3);
    const int K = (int)wc.size(2);
    TORCH_CHECK(wc.size(0) == C && wc.size(1) == 1 && wc.size(3) == K, "dwconv2d: weight must be (C, 1, K, K)");
    const int s = (int)stride, p = (int)padding;
    const int Ho = (H + 2 * p - K) / s + 1;
    const int Wo = (W + 2 * p - K) / s + 1;
    TORCH_CHECK(Ho > 0 && Wo > 0, "dwconv2d: output would be empty");

    auto y = torch::empty({N, C, Ho, Wo}, xc.options());
    const bool has_bias = bias.defined() && bias.numel() > 0;
    torch::Tensor bc = has_bias ? bias.contiguous() : wc;  // any valid pointer when there is no bias
    if (has_bias) TORCH_CHECK(bc.numel() == C && bc.scalar_type() == torch::kFloat32, "dwconv2d: bad bias");

    const long long total = (long long)N * C * Ho * Wo;
    if (total == 0) return y;
    const int threads = 256;
    const long long blocks = (total + threads - 1) / threads;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    dwconv2d_fwd_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        C, H, W, K, s, p, Ho, Wo, total, has_bias ? 1 : 0);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = r"""
torch::Tensor dwconv2d_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                               int64_t stride, int64_t padding);
"""

dwconv2d = load_inline(
    name="dwconv2d_v0",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["dwconv2d_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    """Depthwise 2D convolution through a CUDA kernel of our own; the weights live in an nn.Conv2d
    with the same name as in Model, so the reference's state_dict loads into it unchanged."""

    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                groups=in_channels, bias=bias)
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.conv2d.bias
        if bias is None:
            bias = torch.empty(0, device=x.device, dtype=x.dtype)
        return dwconv2d.dwconv2d_forward(x, self.conv2d.weight, bias, self.stride, self.padding)
