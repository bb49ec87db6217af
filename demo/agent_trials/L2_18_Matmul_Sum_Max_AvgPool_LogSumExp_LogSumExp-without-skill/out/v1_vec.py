"""v1 — vectorized, deterministic, bandwidth-oriented (3 kernels, nothing cached).

Same math as v0: out[b] = x[b,:] . colsum(W) + sum(bias).
  1. colsum_partial : block = 256 threads x float4 = 1024 columns, grid = (I/1024, S) row chunks;
                      8-way unrolled float4 streaming loads (__ldcs, evict-first) of W; writes partials P[S][I]
                      (no atomics -> deterministic, no memset).
  2. finalize       : wsum[k] = sum_s P[s][k] (32 columns x 8 row-groups per block, smem reduce);
                      the extra last block reduces the bias into bsum.
  3. gemv4          : each block handles 4 rows of x, float4 loads; one wsum load is reused for 4 rows.
Falls back to v0-style torch math if I % 4 != 0.
"""

import ctypes, hashlib, os, shutil, subprocess
import torch
import torch.nn as nn

CUDA_SRC = r'''
#include <cuda_runtime.h>

#define NT 256

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// grid.x: column tiles of 1024 (NT*4); grid.y: S row chunks. P is [S][I].
__global__ void __launch_bounds__(NT) colsum_partial(const float4* __restrict__ W4, float4* __restrict__ P4,
                                                     int O, int I4, int rows_per) {
    int c4 = blockIdx.x * NT + threadIdx.x;
    int r0 = blockIdx.y * rows_per;
    int r1 = min(r0 + rows_per, O);
    if (c4 >= I4) return;
    const float4* p = W4 + (size_t)r0 * I4 + c4;
    float4 a0 = make_float4(0.f, 0.f, 0.f, 0.f), a1 = a0;
    int r = r0;
    for (; r + 8 <= r1; r += 8) {
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = __ldcs(p + (size_t)u * I4);
#pragma unroll
        for (int u = 0; u < 8; u += 2) {
            a0.x += v[u].x; a0.y += v[u].y; a0.z += v[u].z; a0.w += v[u].w;
            a1.x += v[u+1].x; a1.y += v[u+1].y; a1.z += v[u+1].z; a1.w += v[u+1].w;
        }
        p += (size_t)8 * I4;
    }
    for (; r < r1; ++r) {
        float4 v = __ldcs(p);
        a0.x += v.x; a0.y += v.y; a0.z += v.z; a0.w += v.w;
        p += I4;
    }
    a0.x += a1.x; a0.y += a1.y; a0.z += a1.z; a0.w += a1.w;
    P4[(size_t)blockIdx.y * I4 + c4] = a0;
}

// blocks 0..ceil(I/32)-1: columns; last block: bias.
__global__ void __launch_bounds__(NT) finalize(const float* __restrict__ P, int S, int I,
                                               const float* __restrict__ b, int O,
                                               float* __restrict__ wsum, float* __restrict__ bsum) {
    __shared__ float sh[8][33];
    int ncb = (I + 31) / 32;
    if (blockIdx.x == ncb) {
        float acc = 0.f;
        if (b) for (int i = threadIdx.x; i < O; i += NT) acc += b[i];
        acc = warp_sum(acc);
        __shared__ float sw[NT / 32];
        if ((threadIdx.x & 31) == 0) sw[threadIdx.x >> 5] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            float t = 0.f;
            for (int w = 0; w < NT / 32; ++w) t += sw[w];
            *bsum = t;
        }
        return;
    }
    int cl = threadIdx.x & 31, g = threadIdx.x >> 5;
    int col = blockIdx.x * 32 + cl;
    float acc = 0.f;
    if (col < I) {
#pragma unroll 4
        for (int s = g; s < S; s += 8) acc += P[(size_t)s * I + col];
    }
    sh[g][cl] = acc;
    __syncthreads();
    if (g == 0 && col < I) {
        float t = 0.f;
#pragma unroll
        for (int k = 0; k < 8; ++k) t += sh[k][cl];
        wsum[col] = t;
    }
}

#define ROWS 4
__global__ void __launch_bounds__(NT) gemv4(const float4* __restrict__ x4, const float4* __restrict__ w4,
                                            const float* __restrict__ bsum, float* __restrict__ out,
                                            int B, int I4) {
    int row0 = blockIdx.x * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
#pragma unroll 4
    for (int k = threadIdx.x; k < I4; k += NT) {
        float4 w = w4[k];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            if (row0 + r < B) {
                float4 v = __ldcs(x4 + (size_t)(row0 + r) * I4 + k);
                acc[r] += v.x * w.x + v.y * w.y + v.z * w.z + v.w * w.w;
            }
        }
    }
    __shared__ float sh[ROWS][NT / 32];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float v = warp_sum(acc[r]);
        if ((threadIdx.x & 31) == 0) sh[r][threadIdx.x >> 5] = v;
    }
    __syncthreads();
    if (threadIdx.x < ROWS && row0 + threadIdx.x < B) {
        float t = 0.f;
#pragma unroll
        for (int w = 0; w < NT / 32; ++w) t += sh[threadIdx.x][w];
        out[row0 + threadIdx.x] = t + *bsum;
    }
}

extern "C" int kb18_forward(const float* x, const float* W, const float* b, float* P, int S,
                            float* wsum, float* bsum, float* out, int B, int O, int I, void* stream_) {
    cudaStream_t s = (cudaStream_t)stream_;
    int I4 = I / 4;
    int rows_per = (O + S - 1) / S;
    dim3 g1((I4 + NT - 1) / NT, S);
    colsum_partial<<<g1, NT, 0, s>>>((const float4*)W, (float4*)P, O, I4, rows_per);
    finalize<<<(I + 31) / 32 + 1, NT, 0, s>>>(P, S, I, b, O, wsum, bsum);
    gemv4<<<(B + ROWS - 1) / ROWS, NT, 0, s>>>((const float4*)x, (const float4*)wsum, bsum, out, B, I4);
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
        _LIB = _build(CUDA_SRC, "kb18_v1")
        f = _LIB.kb18_forward
        f.restype = ctypes.c_int
        f.argtypes = ([ctypes.c_void_p] * 4 + [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3
                      + [ctypes.c_void_p])
    return _LIB


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._scratch = None
        self.S = 128  # row chunks for the column-sum pass

    def forward(self, x):
        W, b = self.linear.weight, self.linear.bias
        x = x.contiguous().float()
        Wc = W.contiguous()
        B, I = x.shape
        O = Wc.shape[0]
        if I % 4 != 0:  # vector path needs float4 rows; exact-math fallback
            return (x @ Wc.sum(0) + (b.sum() if b is not None else 0)).unsqueeze(1)
        S = max(1, min(self.S, O))
        need = S * I + I + 1
        if self._scratch is None or self._scratch.numel() < need or self._scratch.device != x.device:
            self._scratch = torch.empty(need, device=x.device, dtype=torch.float32)
        P = self._scratch[:S * I]
        wsum = self._scratch[S * I:S * I + I]
        bsum = self._scratch[S * I + I:S * I + I + 1]
        out = torch.empty(B, 1, device=x.device, dtype=torch.float32)
        err = _lib().kb18_forward(x.data_ptr(), Wc.data_ptr(), b.data_ptr() if b is not None else None,
                                  P.data_ptr(), S, wsum.data_ptr(), bsum.data_ptr(), out.data_ptr(), B, O, I,
                                  torch.cuda.current_stream(x.device).cuda_stream)
        if err != 0:
            raise RuntimeError(f"kb18 v1 CUDA error {err}")
        return out


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
