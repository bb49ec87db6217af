"""Informal sanity check (NOT the skill's verdict): compile v0's __global__ body as host C++,
run it serially over every (block, thread) at tiny sizes and compare with torch's CPU conv2d."""
import ctypes, re, subprocess, sys, pathlib, importlib.util, types
import torch, torch.nn.functional as F
src_file = pathlib.Path(sys.argv[1])
text = src_file.read_text()
cuda = re.search(r'cuda_source = r"""(.*?)"""', text, re.S).group(1)
start = cuda.index("__global__")
end = cuda.index("\n}\n", start) + 3
kernel = cuda[start:end]
name = re.search(r"__global__\s+void\s+(\w+)", kernel).group(1)
params = re.search(r"\((.*?)\)\s*\{", kernel, re.S).group(1)
harness = r'''
#include <cstdint>
struct D3 { unsigned x, y, z; };
static D3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__ static
''' + kernel + r'''
extern "C" void run(const float* x, const float* w, const float* b, float* y,
                    int C, int H, int W, int K, int stride, int pad, int Ho, int Wo, long long total, int has_bias,
                    int threads) {
  long long blocks = (total + threads - 1) / threads;
  blockDim = {(unsigned)threads, 1, 1}; gridDim = {(unsigned)blocks, 1, 1};
  for (long long bi = 0; bi < blocks; ++bi) for (int ti = 0; ti < threads; ++ti) {
    blockIdx = {(unsigned)bi, 0, 0}; threadIdx = {(unsigned)ti, 0, 0};
    ''' + name + '''(x, w, b, y, C, H, W, K, stride, pad, Ho, Wo, total, has_bias);
  }
}
'''
d = pathlib.Path("scratch/build"); d.mkdir(exist_ok=True, parents=True)
(d / "h.cpp").write_text(harness)
subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(d / "h.so"), str(d / "h.cpp")], check=True)
lib = ctypes.CDLL(str(d / "h.so"))
P = ctypes.c_void_p; I = ctypes.c_int
lib.run.argtypes = [P, P, P, P] + [I] * 8 + [ctypes.c_longlong, I, I]
worst = 0.0
for (N, C, H, W, K, s, p, bias) in [(2, 3, 9, 11, 3, 1, 0, False), (2, 3, 9, 11, 3, 2, 1, True),
                                    (1, 4, 8, 8, 5, 1, 2, True), (1, 2, 7, 6, 1, 3, 0, False)]:
    torch.manual_seed(0)
    x = torch.rand(N, C, H, W); w = torch.randn(C, 1, K, K); b = torch.randn(C) if bias else w
    ref = F.conv2d(x, w, b if bias else None, stride=s, padding=p, groups=C)
    Ho, Wo = ref.shape[2], ref.shape[3]
    y = torch.full_like(ref, float("nan"))
    lib.run(x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(), C, H, W, K, s, p, Ho, Wo, y.numel(), int(bias), 64)
    err = (y - ref).abs().max().item()
    worst = max(worst, err)
    print(f"N={N} C={C} H={H} W={W} K={K} s={s} p={p} bias={bias}: max abs err {err:.2e}")
print("worst", worst); sys.exit(0 if worst < 1e-5 else 1)
