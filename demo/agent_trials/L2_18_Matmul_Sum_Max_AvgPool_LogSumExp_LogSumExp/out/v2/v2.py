"""ModelNew for KernelBench L2 #18: Linear -> sum(dim=1) -> max/mean/logsumexp/logsumexp over a size-1 dim.

After the sum over out_features every later op acts on a dim of size 1 and is the identity, so
    out[b] = sum_j (x[b] . W[j] + bias[j]) = x[b] . (sum_j W[j]) + sum_j bias[j].
v2: v1 with the bias sum folded into the column-sum kernel; two CUDA kernels, recomputed from the loaded weights every call:
  1. colsum:  wsum[k] = sum_j W[j, k]    (one thread per column k and 128-row chunk, atomicAdd)
     + bsum = sum_j bias[j] in the blocks of the first column group (warp shuffle, atomicAdd)
  3. rowdot:  out[b]  = x[b] . wsum + bsum (one block per row)
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

// v1: split_work. Each block sums ROWS_PER_SPLIT rows of its 256 columns; partial sums meet in wsum
// through atomicAdd (wsum zeroed first), so the grid has ceil(K/256) x ceil(N/ROWS_PER_SPLIT) blocks.
#define ROWS_PER_SPLIT 128
// v2: fuse_kernels. The blocks of the first column group (blockIdx.x == 0) also sum the bias entries of
// their 128-row chunk (warp shuffle, one atomicAdd per warp into bsum), so the 1-block bias kernel is gone.
// wsum and bsum are one zeroed buffer of K + 1 floats (bsum = wsum + K).
__global__ void colsum_kernel(const float* __restrict__ W, const float* __restrict__ bias,
                              float* __restrict__ wsum, float* __restrict__ bsum, int N, int K) {
    int j0 = blockIdx.y * ROWS_PER_SPLIT;
    int j1 = min(N, j0 + ROWS_PER_SPLIT);
    if (blockIdx.x == 0) {  // every thread of the block takes part, before any early return
        float bv = (j0 + (int)threadIdx.x < j1) ? bias[j0 + threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) bv += __shfl_xor_sync(0xffffffffu, bv, o);
        if ((threadIdx.x & 31) == 0) atomicAdd(bsum, bv);
    }
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    float s = 0.f;
#pragma unroll 8
    for (int j = j0; j < j1; ++j) s += W[(size_t)j * K + k];
    atomicAdd(&wsum[k], s);
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
    // wsum and bsum are one buffer (bsum = wsum + K): one memset zeroes both
    cudaMemsetAsync((void*)wsum, 0, (size_t)(K + 1) * sizeof(float), s);
    dim3 cgrid((unsigned)((K + 255) / 256), (unsigned)((N + ROWS_PER_SPLIT - 1) / ROWS_PER_SPLIT));
    colsum_kernel<<<cgrid, 256, 0, s>>>((const float*)W, (const float*)bias, (float*)wsum, (float*)bsum, (int)N, (int)K);
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
    name="l2_18_sum_linear_v2",
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
        ws = torch.empty(K + 1, device=x.device, dtype=torch.float32)  # wsum[0:K], bsum = ws[K]
        wsum, bsum = ws[:K], ws[K:]
        out = torch.empty(B, 1, device=x.device, dtype=torch.float32)
        _ext.launch(x.data_ptr(), W.data_ptr(), bias.data_ptr(), wsum.data_ptr(), bsum.data_ptr(),
                    out.data_ptr(), B, N, K, torch.cuda.current_stream(x.device).cuda_stream)
        return out
