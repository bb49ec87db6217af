"""ModelNew for KernelBench L2 #18: Linear -> sum(dim=1) -> max/mean/logsumexp/logsumexp over a size-1 dim.

After the sum over out_features every later op acts on a dim of size 1 and is the identity, so
    out[b] = sum_j (x[b] . W[j] + bias[j]) = x[b] . (sum_j W[j]) + sum_j bias[j].
v0 (simplest correct): three plain CUDA kernels, recomputed from the loaded weights every call:
  1. colsum:  wsum[k] = sum_j W[j, k]    (one thread per column k)
  2. biassum: bsum    = sum_j bias[j]    (one block)
  3. rowdot:  out[b]  = x[b] . wsum + bsum (one block per row)
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

__global__ void colsum_kernel(const float* __restrict__ W, float* __restrict__ wsum, int N, int K) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    float s = 0.f;
    for (int j = 0; j < N; ++j) s += W[(size_t)j * K + k];
    wsum[k] = s;
}

__global__ void biassum_kernel(const float* __restrict__ bias, float* __restrict__ bsum, int N) {
    __shared__ float sh[256];
    float s = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) s += bias[j];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) *bsum = sh[0];
}

__global__ void rowdot_kernel(const float* __restrict__ x, const float* __restrict__ wsum,
                              const float* __restrict__ bsum, float* __restrict__ out, int K) {
    __shared__ float sh[256];
    int b = blockIdx.x;
    const float* xr = x + (size_t)b * K;
    float s = 0.f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) s += xr[k] * wsum[k];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[b] = sh[0] + *bsum;
}

void launch(int64_t x, int64_t W, int64_t bias, int64_t wsum, int64_t bsum, int64_t out,
            int64_t B, int64_t N, int64_t K, int64_t stream) {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
    colsum_kernel<<<(int)((K + 255) / 256), 256, 0, s>>>((const float*)W, (float*)wsum, (int)N, (int)K);
    biassum_kernel<<<1, 256, 0, s>>>((const float*)bias, (float*)bsum, (int)N);
    rowdot_kernel<<<(int)B, 256, 0, s>>>((const float*)x, (const float*)wsum, (const float*)bsum, (float*)out, (int)K);
}
"""

_CPP_SRC = r"""
#include <pybind11/pybind11.h>
#include <cstdint>
void launch(int64_t x, int64_t W, int64_t bias, int64_t wsum, int64_t bsum, int64_t out,
            int64_t B, int64_t N, int64_t K, int64_t stream);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("launch", &launch); }
"""

_ext = load_inline(
    name="l2_18_sum_linear_v0",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    extra_cuda_cflags=["-O3"],
    no_implicit_headers=True,
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        W = self.linear.weight.contiguous()
        bias = self.linear.bias.contiguous()
        B, K = x.shape
        N = W.shape[0]
        wsum = torch.empty(K, device=x.device, dtype=torch.float32)
        bsum = torch.empty(1, device=x.device, dtype=torch.float32)
        out = torch.empty(B, 1, device=x.device, dtype=torch.float32)
        _ext.launch(x.data_ptr(), W.data_ptr(), bias.data_ptr(), wsum.data_ptr(), bsum.data_ptr(),
                    out.data_ptr(), B, N, K, torch.cuda.current_stream(x.device).cuda_stream)
        return out
