"""v2 — one persistent cooperative kernel (3 phases separated by grid.sync), nothing cached.

Same math: out[b] = x[b,:] . colsum(W) + sum(bias).  Same per-phase code as v1 but:
  * a single cooperative launch (grid = #SMs x resident blocks/SM) instead of 3 kernels, so no kernel
    boundaries / tail drains between phases;
  * phase 1 splits W rows evenly over the blocks of each 1024-column tile (perfect balance, one wave,
    each block streams ~62 rows x 4 KB), partials P[S][I] with S = blocks per tile;
  * phase 2 reduces partials (+ bias in one extra work item); phase 3 = 4-row float4 GEMV as in v1.
Falls back to torch math if I % 4 != 0.
"""


import ctypes, hashlib, os, shutil, subprocess
import torch
import torch.nn as nn

CUDA_SRC = r'''
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define NT 256
#define ROWS 4

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(NT) kb18_fused(const float* __restrict__ x, const float* __restrict__ W,
        const float* __restrict__ b, float* __restrict__ P, float* __restrict__ wsum, float* __restrict__ bsum,
        float* __restrict__ out, int B, int O, int I, int T, int S) {
    cg::grid_group grid = cg::this_grid();
    __shared__ float sh[8][33];
    __shared__ float shg[ROWS][NT / 32];
    const int I4 = I >> 2;

    // ---- phase 1: partial column sums of W ----
    {
        int t = blockIdx.x % T, j = blockIdx.x / T;
        int c4 = t * NT + threadIdx.x;
        if (j < S && c4 < I4) {
            int r0 = (int)(((long long)j * O) / S), r1 = (int)(((long long)(j + 1) * O) / S);
            const float4* p = reinterpret_cast<const float4*>(W) + (size_t)r0 * I4 + c4;
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
            reinterpret_cast<float4*>(P)[(size_t)j * I4 + c4] = a0;
        }
    }
    grid.sync();

    // ---- phase 2: wsum = sum of partials; one extra item sums the bias ----
    {
        int ncb = (I + 31) / 32;
        int cl = threadIdx.x & 31, g = threadIdx.x >> 5;
        for (int item = blockIdx.x; item <= ncb; item += gridDim.x) {
            if (item == ncb) {
                float acc = 0.f;
                if (b) for (int i = threadIdx.x; i < O; i += NT) acc += b[i];
                acc = warp_sum(acc);
                if (cl == 0) sh[0][g] = acc;
                __syncthreads();
                if (threadIdx.x == 0) {
                    float tt = 0.f;
                    for (int w = 0; w < NT / 32; ++w) tt += sh[0][w];
                    *bsum = tt;
                }
                __syncthreads();
            } else {
                int col = item * 32 + cl;
                float acc = 0.f;
                if (col < I) {
#pragma unroll 4
                    for (int s = g; s < S; s += 8) acc += __ldcg(P + (size_t)s * I + col);
                }
                sh[g][cl] = acc;
                __syncthreads();
                if (g == 0 && col < I) {
                    float tt = 0.f;
#pragma unroll
                    for (int k = 0; k < 8; ++k) tt += sh[k][cl];
                    wsum[col] = tt;
                }
                __syncthreads();
            }
        }
    }
    grid.sync();

    // ---- phase 3: GEMV, ROWS rows per work item ----
    {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const float4* w4 = reinterpret_cast<const float4*>(wsum);
        float bs = __ldcg(bsum);
        int nitems = (B + ROWS - 1) / ROWS;
        for (int item = blockIdx.x; item < nitems; item += gridDim.x) {
            int row0 = item * ROWS;
            float acc[ROWS];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
#pragma unroll 4
            for (int k = threadIdx.x; k < I4; k += NT) {
                float4 w = __ldcg(w4 + k);
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    if (row0 + r < B) {
                        float4 v = __ldcs(x4 + (size_t)(row0 + r) * I4 + k);
                        acc[r] += v.x * w.x + v.y * w.y + v.z * w.z + v.w * w.w;
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                float v = warp_sum(acc[r]);
                if ((threadIdx.x & 31) == 0) shg[r][threadIdx.x >> 5] = v;
            }
            __syncthreads();
            if (threadIdx.x < ROWS && row0 + threadIdx.x < B) {
                float tt = 0.f;
#pragma unroll
                for (int w = 0; w < NT / 32; ++w) tt += shg[threadIdx.x][w];
                out[row0 + threadIdx.x] = tt + bs;
            }
            __syncthreads();
        }
    }
}

static int g_grid = 0;

// number of partial rows S (blocks per column tile) for this I; also fixes the grid size
extern "C" int kb18_num_partials(int I) {
    if (g_grid == 0) {
        int dev = 0, nsm = 0, bps = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kb18_fused, NT, 0);
        if (bps > 8) bps = 8;
        if (bps < 1) return -1;
        g_grid = nsm * bps;
    }
    int T = (I / 4 + NT - 1) / NT;
    int S = g_grid / T;
    return S < 1 ? 1 : S;
}

extern "C" int kb18_forward(const float* x, const float* W, const float* b, float* P, int S,
                            float* wsum, float* bsum, float* out, int B, int O, int I, void* stream_) {
    cudaStream_t s = (cudaStream_t)stream_;
    int T = (I / 4 + NT - 1) / NT;
    int grid = T * S;
    if (T * S > g_grid) return -2;                     // phase 1 needs all T*S blocks
    void* args[] = {(void*)&x, (void*)&W, (void*)&b, (void*)&P, (void*)&wsum, (void*)&bsum, (void*)&out,
                    (void*)&B, (void*)&O, (void*)&I, (void*)&T, (void*)&S};
    cudaError_t e = cudaLaunchCooperativeKernel((void*)kb18_fused, dim3(grid), dim3(NT), args, 0, s);
    if (e != cudaSuccess) return (int)e;
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
        _LIB = _build(CUDA_SRC, "kb18_v2")
        f = _LIB.kb18_forward
        f.restype = ctypes.c_int
        _LIB.kb18_num_partials.restype = ctypes.c_int
        _LIB.kb18_num_partials.argtypes = [ctypes.c_int]
        f.argtypes = ([ctypes.c_void_p] * 4 + [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3
                      + [ctypes.c_void_p])
    return _LIB


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._scratch = None
        self._S = {}

    def forward(self, x):
        W, b = self.linear.weight, self.linear.bias
        x = x.contiguous().float()
        Wc = W.contiguous()
        B, I = x.shape
        O = Wc.shape[0]
        if I % 4 != 0:  # vector path needs float4 rows; exact-math fallback
            return (x @ Wc.sum(0) + (b.sum() if b is not None else 0)).unsqueeze(1)
        S = self._S.get(I)
        if S is None:
            S = self._S[I] = _lib().kb18_num_partials(I)
        if S < 1:
            raise RuntimeError('kb18 v2: cannot size cooperative grid')
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
            raise RuntimeError(f"kb18 v2 CUDA error {err}")
        return out


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
