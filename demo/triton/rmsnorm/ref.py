"""RMSNorm, y = x * rsqrt(mean(x^2, -1) + eps) * weight: bfloat16 in and out, float32 math.

Dims: M (rows), N (row length, the normalised dimension), eps, input_std (x is
N(0, input_std^2); weight is N(0, 1), so a wrong weight index shows).

This case starts from the PyTorch code alone: reference() is written the way a user would
write it, and torch.compile of it is the baseline to beat. The SHAPES entry with
input_std = 1e-3 gives mean(x^2) about 1e-6 = eps, so a kernel that drops eps or adds it
outside the square root is off by a factor of about sqrt(2) there and fails.

Tolerances are the checker's bfloat16 defaults (atol 1e-2, rtol 1.6e-2): the reference
rounds once, at the end, so a kernel that also computes in float32 lands within 1 bf16 ulp.
"""

import torch

DTYPE = torch.bfloat16  # the solutions' element type

# Row lengths straddling powers of two (masking bugs), a one-element row, a row longer than
# 4096 (reductions split over more than one pass or warp), and rows so small in magnitude
# that eps matters. Each is small enough for the Triton interpreter on a CPU.
SHAPES = [
    dict(M=1, N=1),
    dict(M=3, N=127),
    dict(M=5, N=128),
    dict(M=7, N=129),
    dict(M=2, N=1000),
    dict(M=3, N=4097),
    dict(M=4, N=256, input_std=1e-3),
]


def setup(seed=0, device="cuda", M=8192, N=8192, eps=1e-6, input_std=1.0):
    generator = torch.Generator(device=device).manual_seed(seed)
    x = (torch.randn(M, N, generator=generator, device=device) * input_std).to(DTYPE)
    weight = torch.randn(N, generator=generator, device=device).to(DTYPE)
    y = torch.empty(M, N, device=device, dtype=DTYPE)
    return {"inputs": {"x": x, "weight": weight, "y": y, "M": M, "N": N, "eps": eps}, "outputs": ["y"]}


def reference(x, weight, eps, **_):
    """The plain PyTorch a user would write: float32 throughout, one cast back at the end.
    Returned; the benchmark times this call eager and under torch.compile."""
    x_float = x.float()
    rstd = torch.rsqrt(x_float.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x_float * rstd * weight.float()).to(x.dtype)


def flops(M, N, **_):
    """4 per element: square, add to the sum, scale by rstd, multiply by weight."""
    return 4 * M * N


def bytes(M, N, **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: x read once, y written once, weight read once, 2 bytes an element."""
    return (2 * M * N + N) * torch.empty((), dtype=DTYPE).element_size()
