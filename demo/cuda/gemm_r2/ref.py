"""Matrix multiply, C = A @ B: bfloat16 in and out, float32 accumulation (cuBLAS's default).

Dims: M, N, K. A is (M, K), B is (K, N), C is (M, N), all row-major and contiguous.

Tolerances: atol 1e-2, rtol 1.6e-2, the checker's bfloat16 defaults written out because they
were checked for this problem (on the CPU, N(0, 1) inputs rounded to bf16, 512x512 outputs):
- float32 accumulation in another order (32-wide K tiles, as the v0 kernels do) against the
  exact product rounded to bfloat16: at most 1 bf16 ulp apart (max rel 0.0077 at K=4096,
  where |C| is about 64), no element outside these tolerances at K = 64, 1000 or 4096;
- bfloat16 accumulation fails (256x256 outputs, K=4096): a running bf16 sum per 32-wide K
  tile puts 22726 of 65536 elements outside, a split-K into two bf16 partial sums 2061.
That second case is why this module turns off cuBLAS's reduced-precision split-K reduction
(see below): with it on, the reference itself could be the inaccurate party.
"""

import torch

# torch's default (True) lets cuBLAS reduce split-K partial sums in bfloat16, which is less
# accurate than the float32 accumulation every solution must match (see the docstring) and
# would fail correct kernels on the small-M/N, large-K shapes where split-K gets chosen.
# At M=N=K=4096 there are enough output tiles to fill the GPU without splitting K, so the
# flag should not slow the baseline there; the benchmark on the GPU is the check of that.
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False

DTYPE = torch.bfloat16  # the solutions' element type: v0.cu takes __nv_bfloat16 pointers

atol = 1e-2
rtol = 1.6e-2

# Sizes that straddle the v0 tiles (32x32 in CUDA; 64x64 output, 32-wide K in Triton), a
# 1x1x1 product, a single output row, K smaller than one K tile, exact multiples, and one
# K = 4096 shape so the tolerances are exercised at the full accumulation length. Each is
# small enough for the Triton interpreter on a CPU.
SHAPES = [
    dict(M=1, N=1, K=1),
    dict(M=1, N=129, K=64),
    dict(M=127, N=129, K=31),
    dict(M=128, N=128, K=128),
    dict(M=129, N=65, K=1000),
    dict(M=65, N=67, K=4096),
]


def setup(seed=0, device="cuda", M=4096, N=4096, K=4096):
    """Fresh N(0, 1) inputs; C's entries are then about N(0, K), so none is near bf16's range limit."""
    generator = torch.Generator(device=device).manual_seed(seed)
    A = torch.randn(M, K, generator=generator, device=device).to(DTYPE)
    B = torch.randn(K, N, generator=generator, device=device).to(DTYPE)
    C = torch.empty(M, N, device=device, dtype=DTYPE)
    return {"inputs": {"A": A, "B": B, "C": C, "M": M, "N": N, "K": K}, "outputs": ["C"]}


def reference(A, B, **_):
    """torch.matmul in bfloat16 (cuBLAS, float32 accumulation), returned: the benchmark times
    exactly this call as the baseline, so it must not upcast."""
    return torch.matmul(A, B)


def flops(M, N, K, **_):
    """One multiply and one add per (m, n, k)."""
    return 2 * M * N * K


def bytes(M, N, K, **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: A and B read once, C written once, 2 bytes an element."""
    return (M * K + K * N + M * N) * torch.empty((), dtype=DTYPE).element_size()
