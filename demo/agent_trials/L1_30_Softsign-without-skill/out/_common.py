"""Shared helper for all versions.

Each version is built with torch.utils.cpp_extension.load_inline:
  * the CUDA part (.cu) is plain CUDA (no torch headers -> nvcc compiles it in seconds) and
    exports host launcher functions;
  * the C++ part (g++) holds the torch wrapper: checks, allocation, current stream, and calls
    the launcher.
Only sm_90 (H200) code is generated.
"""
import os
import torch
from torch.utils.cpp_extension import load_inline

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")

CU_HEADER = r"""
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float softsign1(float v) {
    // same two IEEE fp32 ops as PyTorch eager: t = 1 + |v| ; v / t (exact, correctly rounded division)
    return v / (1.0f + fabsf(v));
}
__device__ __forceinline__ float4 softsign4(float4 v) {
    v.x = softsign1(v.x); v.y = softsign1(v.y); v.z = softsign1(v.z); v.w = softsign1(v.w);
    return v;
}
// scalar kernel: fallback for misaligned pointers and for the last n % 4 elements
__global__ void softsign_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = softsign1(x[i]);
}
static inline void launch_scalar(const float* x, float* y, int64_t n, cudaStream_t s) {
    if (n <= 0) return;
    const int T = 256;
    int64_t blocks = (n + T - 1) / T;
    softsign_scalar_kernel<<<(unsigned)blocks, T, 0, s>>>(x, y, n);
}
"""

CPP_HEADER = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

static inline torch::Tensor prep_out(const torch::Tensor& xc) {
    TORCH_CHECK(xc.is_cuda() && xc.scalar_type() == at::kFloat, "float32 CUDA tensor expected");
    return torch::empty_like(xc);
}
static inline void check_launch(cudaError_t e) {
    TORCH_CHECK(e == cudaSuccess, "softsign kernel launch failed: ", cudaGetErrorString(e));
}
"""


CUDA_CHECK_BYPASSED = False


def build(name, cu_body, cpp_body, functions=("softsign_forward",)):
    global CUDA_CHECK_BYPASSED
    kw = dict(
        name=name,
        cpp_sources=CPP_HEADER + cpp_body,
        cuda_sources=CU_HEADER + cu_body,
        functions=list(functions),
        extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90", "-lineinfo"],
        extra_cflags=["-O3"],
        verbose=False,
    )
    try:
        return load_inline(**kw)
    except RuntimeError as e:
        # torch refuses to build when nvcc's CUDA major version differs from the one torch was
        # built with; the kernels here only need the driver, so skip that check once and retry.
        if "mismatches the version that was used to compile" not in str(e):
            raise
        import torch.utils.cpp_extension as ce
        ce._check_cuda_version = lambda *a, **k: None
        CUDA_CHECK_BYPASSED = True
        return load_inline(**kw)


class ModelBase(torch.nn.Module):
    """forward() = the version's CUDA kernel for float32 CUDA input; eager formula otherwise."""
    EXT = None  # callable returning the built extension

    def __init__(self):
        super().__init__()
        type(self).EXT()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda or x.dtype != torch.float32:
            return x / (1 + torch.abs(x))
        return type(self).EXT().softsign_forward(x)
