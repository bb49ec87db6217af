"""ModelNew for KernelBench level 2 problem 70 (Gemm_Sigmoid_Scaling_ResidualAdd), first version (v0).

One fused CUDA kernel computes out = y + scaling_factor * sigmoid(y), y = x @ W^T + b:
a plain shared-memory tiled FP32 GEMM (one 32x32 output tile per block, one output per thread,
K walked in steps of 32) with the bias, sigmoid, scaling and residual add done in the epilogue,
so y never goes to global memory. FP32 FMAs throughout (no TF32), untuned: tuning is the loop's job.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>
torch::Tensor gemm_sigmoid_scale_residual(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scaling);
"""

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#define TILE 32

// x: [M, K] row-major, w: [N, K] row-major (nn.Linear layout), b: [N], out: [M, N].
// Block (TILE, TILE) threads computes the TILE x TILE output tile at (blockIdx.y*TILE, blockIdx.x*TILE);
// thread (tx, ty) owns out[row0 + ty][col0 + tx].
__global__ void gemm_sigmoid_scale_residual_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                   const float* __restrict__ b, float* __restrict__ out,
                                                   int M, int N, int K, float scaling) {
    __shared__ float xs[TILE][TILE];       // xs[m][k]
    __shared__ float ws[TILE][TILE + 1];   // ws[n][k], padded: read as ws[tx][k] across a warp

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    const int row = row0 + ty, col = col0 + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int k = k0 + tx;
        // Coalesced loads: consecutive tx read consecutive k of one row of x / one row of w.
        xs[ty][tx] = (row < M && k < K) ? x[(size_t)row * K + k] : 0.0f;
        const int wrow = col0 + ty;
        ws[ty][tx] = (wrow < N && k < K) ? w[(size_t)wrow * K + k] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            acc = fmaf(xs[ty][kk], ws[tx][kk], acc);
        }
        __syncthreads();
    }

    if (row < M && col < N) {
        const float y = acc + b[col];
        const float s = 1.0f / (1.0f + expf(-y));
        out[(size_t)row * N + col] = s * scaling + y;
    }
}

torch::Tensor gemm_sigmoid_scale_residual(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scaling) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                bias.scalar_type() == torch::kFloat32, "inputs must be float32");
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "x [M,K], weight [N,K], bias [N]");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int M = (int)xc.size(0), K = (int)xc.size(1), N = (int)wc.size(0);
    TORCH_CHECK(wc.size(1) == K && bc.size(0) == N, "shape mismatch");
    auto out = torch::empty({M, N}, xc.options());
    if (M == 0 || N == 0) return out;
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    gemm_sigmoid_scale_residual_kernel<<<grid, block, 0, stream>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(),
        M, N, K, (float)scaling);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="gemm_sigmoid_scale_residual_v0",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["gemm_sigmoid_scale_residual"],
    extra_cuda_cflags=["-O3", "-lineinfo"],
    verbose=False,
)


class ModelNew(nn.Module):
    """Same parameters as Model (gemm.weight, gemm.bias), forward through the fused CUDA kernel."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        return _ext.gemm_sigmoid_scale_residual(x, self.gemm.weight, self.gemm.bias, float(self.scaling_factor))

