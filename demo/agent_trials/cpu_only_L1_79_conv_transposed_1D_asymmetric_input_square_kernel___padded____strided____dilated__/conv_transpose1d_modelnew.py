"""ModelNew for KernelBench L1/79: ConvTranspose1d (stride, padding, dilation) as a CUDA kernel via load_inline.

v0: the simplest correct kernel. One thread per output element (b, co, t), consecutive threads on
consecutive t (coalesced stores); each thread gathers over k and ci the input positions that land on t.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void conv_transpose1d_naive_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, int B, int Cin, int Cout, int L, int Lout, int K,
    int stride, int pad, int dil)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)B * Cout * Lout;
    if (idx >= total) return;
    int t = (int)(idx % Lout);
    long long r = idx / Lout;
    int co = (int)(r % Cout);
    int b = (int)(r / Cout);
    float acc = bias ? bias[co] : 0.0f;
    for (int k = 0; k < K; ++k) {
        int num = t + pad - k * dil;
        if (num < 0 || num % stride != 0) continue;
        int l = num / stride;
        if (l >= L) continue;
        const float* xp = x + ((long long)b * Cin) * L + l;
        const float* wp = w + (long long)co * K + k;
        for (int ci = 0; ci < Cin; ++ci) {
            acc += xp[(long long)ci * L] * wp[(long long)ci * Cout * K];
        }
    }
    y[idx] = acc;
}

torch::Tensor conv_transpose1d_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias,
                                       int64_t stride, int64_t pad, int64_t dil) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32, "float32 only");
    x = x.contiguous();
    w = w.contiguous();
    const int B = x.size(0), Cin = x.size(1), L = x.size(2);
    TORCH_CHECK(w.size(0) == Cin, "weight/in_channels mismatch");
    const int Cout = w.size(1), K = w.size(2);
    const int Lout = (L - 1) * stride - 2 * pad + dil * (K - 1) + 1;
    auto y = torch::empty({B, Cout, Lout}, x.options());
    const float* bptr = nullptr;
    if (bias.defined() && bias.numel() > 0) { bias = bias.contiguous(); bptr = bias.data_ptr<float>(); }
    long long total = (long long)B * Cout * Lout;
    if (total == 0) return y;
    const int threads = 256;
    long long blocks = (total + threads - 1) / threads;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    conv_transpose1d_naive_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), bptr, y.data_ptr<float>(),
        B, Cin, Cout, L, Lout, K, (int)stride, (int)pad, (int)dil);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_src = r"""
torch::Tensor conv_transpose1d_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias,
                                       int64_t stride, int64_t pad, int64_t dil);
"""

_ext = load_inline(
    name="conv_transpose1d_l79_v0",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["conv_transpose1d_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, bias: bool = False):
        super().__init__()
        # Holds the weights under the Model's names (conv1d_transpose.weight / .bias); forward never calls it.
        self.conv1d_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride,
                                                   padding=padding, dilation=dilation, bias=bias)
        self.stride = stride
        self.padding = padding
        self.dilation = dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conv = self.conv1d_transpose
        bias = conv.bias if conv.bias is not None else torch.empty(0, device=x.device, dtype=x.dtype)
        return _ext.conv_transpose1d_forward(x, conv.weight, bias, self.stride, self.padding, self.dilation)
