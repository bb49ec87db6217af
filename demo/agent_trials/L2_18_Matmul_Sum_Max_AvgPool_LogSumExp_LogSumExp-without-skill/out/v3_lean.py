"""v3 — v1's kernels, retuned, with a lean host path (and an opt-in weight-sum cache).

Same math: out[b] = x[b,:] . colsum(W) + sum(bias).   Changes vs v1 (from call-1 measurements):
  * colsum_partial grid sized to exactly one resident wave (S = floor(#SM * blocks/SM / #column tiles),
    from the occupancy API), rows split evenly; the row remainder is handled by a predicated, unrolled
    8-load step instead of a serial loop (v1: 1024 blocks for 792 slots -> 1.3 waves).
  * host path trimmed: no redundant .contiguous()/.float(), raw stream via torch._C._cuda_getCurrentRawStream,
    scratch/config cached, one ctypes call. (Call 1 showed ~26 us of host time before the first launch.)
  * default: recompute colsum(W) on every call (no state kept between calls except scratch memory).
  * opt-in (ModelNew(..., cache_weight_sum=True) or env KB18_CACHE_WSUM=1): keep colsum(W)/sum(bias) and
    recompute them only when weight/bias storage or version counter changes (in-place updates, load_state_dict,
    optimizer steps bump _version). Not default: writes through `.data` are not tracked by _version.
Inference only (no autograd), like v0-v2. Falls back to torch math if I % 4 != 0.
"""
import ctypes, hashlib, os, shutil, subprocess
import torch
import torch.nn as nn

CUDA_SRC = r'''
#include <cuda_runtime.h>

#define NT 256
#define ROWS 4

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// grid.x: column tiles of 1024 (NT*4); grid.y: S row chunks (even split). P is [S][I].
__global__ void __launch_bounds__(NT) colsum_partial(const float4* __restrict__ W4, float4* __restrict__ P4,
                                                     int O, int I4, int S) {
    int c4 = blockIdx.x * NT + threadIdx.x;
    int j = blockIdx.y;
    int r0 = (int)(((long long)j * O) / S), r1 = (int)(((long long)(j + 1) * O) / S);
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
    if (r < r1) {  // remainder (< 8 rows): independent predicated loads, all in flight together
        int n = r1 - r;
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = (u < n) ? __ldcs(p + (size_t)u * I4) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int u = 0; u < 8; u += 2) {
            a0.x += v[u].x; a0.y += v[u].y; a0.z += v[u].z; a0.w += v[u].w;
            a1.x += v[u+1].x; a1.y += v[u+1].y; a1.z += v[u+1].z; a1.w += v[u+1].w;
        }
    }
    a0.x += a1.x; a0.y += a1.y; a0.z += a1.z; a0.w += a1.w;
    P4[(size_t)j * I4 + c4] = a0;
}

// blocks 0..ceil(I/32)-1: columns; last block: bias.
__global__ void __launch_bounds__(NT) finalize(const float* __restrict__ P, int S, int I,
                                               const float* __restrict__ b, int O,
                                               float* __restrict__ wsum, float* __restrict__ bsum) {
    __shared__ float sh[8][33];
    int ncb = (I + 31) / 32;
    int cl = threadIdx.x & 31, g = threadIdx.x >> 5;
    if (blockIdx.x == ncb) {
        float acc = 0.f;
        if (b) for (int i = threadIdx.x; i < O; i += NT) acc += b[i];
        acc = warp_sum(acc);
        if (cl == 0) sh[0][g] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            float t = 0.f;
            for (int w = 0; w < NT / 32; ++w) t += sh[0][w];
            *bsum = t;
        }
        return;
    }
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

__global__ void __launch_bounds__(NT) gemv4(const float4* __restrict__ x4, const float4* __restrict__ w4,
                                            const float* __restrict__ bsum, float* __restrict__ out,
                                            int B, int I4) {
    int row0 = blockIdx.x * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
#pragma unroll 4
    for (int k = threadIdx.x; k < I4; k += NT) {
        float4 w = __ldg(w4 + k);
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

// S = number of row chunks so that the colsum grid (T x S) is exactly one resident wave
extern "C" int kb18_num_partials(int I, int O) {
    int dev = 0, nsm = 0, bps = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, colsum_partial, NT, 0);
    if (bps < 1) bps = 1;
    int T = (I / 4 + NT - 1) / NT;
    int S = (nsm * bps) / T;
    if (S < 1) S = 1;
    if (S > O) S = O;
    return S;
}

extern "C" int kb18_prep(const float* W, const float* b, float* P, int S, float* wsum, float* bsum,
                         int O, int I, void* stream_) {
    cudaStream_t s = (cudaStream_t)stream_;
    int I4 = I / 4;
    dim3 g1((I4 + NT - 1) / NT, S);
    colsum_partial<<<g1, NT, 0, s>>>((const float4*)W, (float4*)P, O, I4, S);
    finalize<<<(I + 31) / 32 + 1, NT, 0, s>>>(P, S, I, b, O, wsum, bsum);
    return (int)cudaGetLastError();
}

extern "C" int kb18_gemv(const float* x, const float* wsum, const float* bsum, float* out, int B, int I,
                         void* stream_) {
    cudaStream_t s = (cudaStream_t)stream_;
    gemv4<<<(B + ROWS - 1) / ROWS, NT, 0, s>>>((const float4*)x, (const float4*)wsum, bsum, out, B, I / 4);
    return (int)cudaGetLastError();
}

extern "C" int kb18_forward(const float* x, const float* W, const float* b, float* P, int S,
                            float* wsum, float* bsum, float* out, int B, int O, int I, void* stream_) {
    int e = kb18_prep(W, b, P, S, wsum, bsum, O, I, stream_);
    if (e) return e;
    return kb18_gemv(x, wsum, bsum, out, B, I, stream_);
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
_VP, _I = ctypes.c_void_p, ctypes.c_int


def _lib():
    global _LIB
    if _LIB is None:
        lib = _build(CUDA_SRC, "kb18_v3")
        lib.kb18_num_partials.restype = _I
        lib.kb18_num_partials.argtypes = [_I, _I]
        lib.kb18_prep.restype = _I
        lib.kb18_prep.argtypes = [_VP, _VP, _VP, _I, _VP, _VP, _I, _I, _VP]
        lib.kb18_gemv.restype = _I
        lib.kb18_gemv.argtypes = [_VP, _VP, _VP, _VP, _I, _I, _VP]
        lib.kb18_forward.restype = _I
        lib.kb18_forward.argtypes = [_VP, _VP, _VP, _VP, _I, _VP, _VP, _VP, _I, _I, _I, _VP]
        _LIB = lib
    return _LIB


try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # (device_index) -> int, what inductor uses
except AttributeError:  # pragma: no cover
    def _raw_stream(idx):
        return torch.cuda.current_stream(idx).cuda_stream


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, cache_weight_sum=None):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        if cache_weight_sum is None:
            cache_weight_sum = os.environ.get("KB18_CACHE_WSUM", "0") == "1"
        self.cache_weight_sum = bool(cache_weight_sum)
        self._cfg = None     # (I, O, device) -> (S, scratch, P_ptr, wsum_ptr, bsum_ptr)
        self._wkey = None    # weight-sum cache key (opt-in mode)

    def _config(self, I, O, dev):
        key = (I, O, dev)
        if self._cfg is None or self._cfg[0] != key:
            lib = _lib()
            S = lib.kb18_num_partials(I, O)
            scratch = torch.empty(S * I + I + 4, device=dev, dtype=torch.float32)
            base = scratch.data_ptr()
            self._cfg = (key, S, scratch, base, base + 4 * S * I, base + 4 * (S * I + I), lib)
            self._wkey = None
        return self._cfg

    def forward(self, x):
        lin = self.linear
        W, b = lin.weight, lin.bias
        if x.dtype != torch.float32 or not x.is_contiguous():
            x = x.contiguous().float()
        if not W.is_contiguous():
            W = W.contiguous()
        B, I = x.shape
        O = W.shape[0]
        if I & 3:  # vector path needs float4 rows; exact-math fallback
            return (x @ W.sum(0) + (b.sum() if b is not None else 0)).unsqueeze(1)
        dev = x.device
        _, S, _, P, wsum, bsum, lib = self._config(I, O, dev)
        out = torch.empty((B, 1), device=dev, dtype=torch.float32)
        stream = _raw_stream(dev.index)
        bp = b.data_ptr() if b is not None else None
        if self.cache_weight_sum:
            wk = (W.data_ptr(), W._version, bp, b._version if b is not None else 0)
            if wk != self._wkey:
                err = lib.kb18_prep(W.data_ptr(), bp, P, S, wsum, bsum, O, I, stream)
                if err:
                    raise RuntimeError(f"kb18 v3 CUDA error {err}")
                self._wkey = wk
            err = lib.kb18_gemv(x.data_ptr(), wsum, bsum, out.data_ptr(), B, I, stream)
        else:
            err = lib.kb18_forward(x.data_ptr(), W.data_ptr(), bp, P, S, wsum, bsum, out.data_ptr(), B, O, I,
                                   stream)
        if err:
            raise RuntimeError(f"kb18 v3 CUDA error {err}")
        return out


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
