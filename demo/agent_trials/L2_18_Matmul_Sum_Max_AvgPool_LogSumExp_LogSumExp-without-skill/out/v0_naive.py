"""v0 — first working version (simple kernels).

Math: after linear, sum(dim=1,keepdim) -> (B,1); max/mean/logsumexp over a size-1 dim are identities,
so out[b] = x[b,:] . colsum(W) + sum(bias).
Kernels (per forward, nothing cached):
  1. colsum_atomic : scalar, one column per thread, row chunks, atomicAdd into wsum (zeroed by memset)
  2. bias_sum      : single block reduction of bias
  3. gemv_rows     : one block per row of x, scalar loads, block reduction
Built with nvcc into a shared library and called through ctypes on torch's current stream.
"""
import ctypes, hashlib, os, shutil, subprocess
import torch
import torch.nn as nn

CUDA_SRC = r'''
#include <cuda_runtime.h>

__device__ __forceinline__ float block_reduce_sum(float v) {
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.f;
    if (wid == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;  // valid in thread 0
}

__global__ void colsum_atomic(const float* __restrict__ W, float* __restrict__ wsum, int O, int I, int rows_per) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= I) return;
    int r0 = blockIdx.y * rows_per;
    int r1 = min(r0 + rows_per, O);
    float acc = 0.f;
    for (int r = r0; r < r1; ++r) acc += W[(size_t)r * I + col];
    atomicAdd(&wsum[col], acc);
}

__global__ void bias_sum(const float* __restrict__ b, float* __restrict__ bsum, int O) {
    float acc = 0.f;
    if (b) for (int i = threadIdx.x; i < O; i += blockDim.x) acc += b[i];
    acc = block_reduce_sum(acc);
    if (threadIdx.x == 0) *bsum = acc;
}

__global__ void gemv_rows(const float* __restrict__ x, const float* __restrict__ wsum,
                          const float* __restrict__ bsum, float* __restrict__ out, int I) {
    const float* xr = x + (size_t)blockIdx.x * I;
    float acc = 0.f;
    for (int k = threadIdx.x; k < I; k += blockDim.x) acc += xr[k] * wsum[k];
    acc = block_reduce_sum(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = acc + *bsum;
}

extern "C" int kb18_forward(const float* x, const float* W, const float* b, float* wsum, float* bsum,
                            float* out, int B, int O, int I, void* stream_) {
    cudaStream_t s = (cudaStream_t)stream_;
    cudaMemsetAsync(wsum, 0, sizeof(float) * (size_t)I, s);
    const int rows_per = 128;
    dim3 g1((I + 255) / 256, (O + rows_per - 1) / rows_per);
    colsum_atomic<<<g1, 256, 0, s>>>(W, wsum, O, I, rows_per);
    bias_sum<<<1, 1024, 0, s>>>(b, bsum, O);
    gemv_rows<<<B, 256, 0, s>>>(x, wsum, bsum, out, I);
    return (int)cudaGetLastError();
}
'''


def _build(src, name):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    arch = "sm_90"
    if torch.cuda.is_available():
        maj, mnr = torch.cuda.get_device_capability()
        arch = f"sm_{maj}{mnr}"
    h = hashlib.sha1((src + arch).encode()).hexdigest()[:12]
    d = os.path.join(os.environ.get("KB18_BUILD", "/tmp/kb18_build"))
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, f"{name}_{h}.so")
    if not os.path.exists(so):
        cu = os.path.join(d, f"{name}_{h}.cu")
        with open(cu, "w") as f:
            f.write(src)
        tmp = so + f".{os.getpid()}.tmp"
        subprocess.run([nvcc, "-O3", f"-arch={arch}", "-shared", "-Xcompiler", "-fPIC", "-lineinfo",
                        "-o", tmp, cu], check=True)
        os.replace(tmp, so)
    return ctypes.CDLL(so)


_LIB = None


def _lib():
    global _LIB
    if _LIB is None:
        _LIB = _build(CUDA_SRC, "kb18_v0")
        f = _LIB.kb18_forward
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    return _LIB


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._scratch = None

    def forward(self, x):
        W, b = self.linear.weight, self.linear.bias
        x = x.contiguous().float()
        Wc = W.contiguous()
        B, I = x.shape
        O = Wc.shape[0]
        if self._scratch is None or self._scratch.numel() < I + 1 or self._scratch.device != x.device:
            self._scratch = torch.empty(I + 1, device=x.device, dtype=torch.float32)
        wsum, bsum = self._scratch[:I], self._scratch[I:I + 1]
        out = torch.empty(B, 1, device=x.device, dtype=torch.float32)
        err = _lib().kb18_forward(x.data_ptr(), Wc.data_ptr(), b.data_ptr() if b is not None else None,
                                  wsum.data_ptr(), bsum.data_ptr(), out.data_ptr(), B, O, I,
                                  torch.cuda.current_stream(x.device).cuda_stream)
        if err != 0:
            raise RuntimeError(f"kb18 v0 CUDA error {err}")
        return out


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
