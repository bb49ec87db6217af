import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# v0: the simplest correct CUDA kernel for cumsum(x * mask, dim).
# One block of 1024 threads per row (the scanned dim moved last, made contiguous).
# The row is walked in chunks of 1024 elements: each thread loads one element,
# multiplies it by the mask (x * (float)mask, as torch does: NaN/inf semantics kept),
# the block does an inclusive scan (warp shuffles, then a scan of the 32 warp totals),
# adds the running carry of the earlier chunks, writes, and updates the carry.

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>

#define BLOCK 1024
#define WARPS (BLOCK / 32)

__global__ void masked_cumsum_rows(const float* __restrict__ x,
                                   const bool* __restrict__ mask,
                                   float* __restrict__ out,
                                   long long rows, long long len) {
    __shared__ float warp_sums[WARPS];
    __shared__ float carry_s;
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * len;
    const bool* mr = mask + row * len;
    float* orow = out + row * len;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    if (tid == 0) carry_s = 0.0f;
    __syncthreads();
    for (long long base = 0; base < len; base += BLOCK) {
        const long long i = base + tid;
        float v = 0.0f;
        if (i < len) v = xr[i] * (mr[i] ? 1.0f : 0.0f);
        // inclusive warp scan
        #pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            float n = __shfl_up_sync(0xffffffffu, v, off);
            if (lane >= off) v += n;
        }
        if (lane == 31) warp_sums[warp] = v;
        __syncthreads();
        if (warp == 0) {
            float w = warp_sums[lane];
            #pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                float n = __shfl_up_sync(0xffffffffu, w, off);
                if (lane >= off) w += n;
            }
            warp_sums[lane] = w;  // inclusive scan of warp totals
        }
        __syncthreads();
        const float carry = carry_s;
        const float prefix = (warp > 0 ? warp_sums[warp - 1] : 0.0f);
        if (i < len) orow[i] = carry + (prefix + v);
        __syncthreads();  // everyone has read carry_s and warp_sums
        if (tid == 0) carry_s = carry + warp_sums[WARPS - 1];
        __syncthreads();
    }
}

torch::Tensor masked_cumsum_last(torch::Tensor x, torch::Tensor mask) {
    TORCH_CHECK(x.is_cuda() && mask.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(mask.scalar_type() == torch::kBool, "mask must be bool");
    TORCH_CHECK(x.sizes() == mask.sizes(), "x and mask must have the same shape");
    TORCH_CHECK(x.is_contiguous() && mask.is_contiguous(), "inputs must be contiguous");
    auto out = torch::empty_like(x);
    const long long len = x.dim() == 0 ? 1 : x.size(-1);
    const long long rows = len == 0 ? 0 : x.numel() / len;
    if (rows == 0 || len == 0) return out;
    auto stream = c10::cuda::getCurrentCUDAStream();
    masked_cumsum_rows<<<(unsigned)rows, BLOCK, 0, stream>>>(
        x.data_ptr<float>(), mask.data_ptr<bool>(), out.data_ptr<float>(), rows, len);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

cpp_source = "torch::Tensor masked_cumsum_last(torch::Tensor x, torch::Tensor mask);"

masked_cumsum_ext = load_inline(
    name="masked_cumsum_v0",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["masked_cumsum_last"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x, mask):
        d = self.dim % x.dim() if x.dim() > 0 else 0
        last = x.dim() - 1
        if x.dim() > 0 and d != last:
            xt = x.movedim(d, last).contiguous()
            mt = mask.movedim(d, last).contiguous()
            return masked_cumsum_ext.masked_cumsum_last(xt, mt).movedim(last, d).contiguous()
        return masked_cumsum_ext.masked_cumsum_last(x.contiguous(), mask.contiguous())
