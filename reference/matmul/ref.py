"""Matrix product c = a @ b in float32, strict IEEE (TF32 off): why fixed tolerances fail long sums.

Dims: M, N, K. The default 256 x 256 output at K = 4096 is the case of issue 14, where an
honest IEEE-fp32 Triton GEMM failed the old fixed float32 tolerance (1e-5) on 2,089 of
65,536 elements because its summation order differs from torch's. No atol/rtol here: the
checker's reference-error rule applies (profiling/CORRECTNESS.md, "Tolerances"), which
passes honest fp32 arithmetic in any order and fails TF32- or bf16-rounded inputs. A ref.py
that accepts TF32 says so with `allow_tf32 = True`.
"""

import torch

# A single product, a K that is no multiple of the block, ragged M and N.
SHAPES = [dict(M=1, N=1, K=1), dict(M=33, N=65, K=1000)]


def setup(seed=0, device="cuda", M=256, N=256, K=4096):
    generator = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(M, K, generator=generator, device=device)
    b = torch.randn(K, N, generator=generator, device=device)
    c = torch.empty(M, N, device=device)
    return {"inputs": {"a": a, "b": b, "c": c, "M": M, "N": N, "K": K}, "outputs": ["c"]}


def reference(a, b, **_):
    return torch.matmul(a, b)


def flops(M, N, K, **_):
    return 2 * M * N * K


def bytes(M, N, K, **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: a and b read once, c written once, float32."""
    return 4 * (M * K + K * N + M * N)
