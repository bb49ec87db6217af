"""Vector add, out = x + y: the smallest problem, used to prove the checker cannot be fooled.

Dims: n (elements), dtype ("float32" | "float16" | "bfloat16"). Tolerances are left to the
checker's dtype-aware defaults; a correct kernel matches torch.add bit for bit anyway.
"""

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

# Lengths straddling powers of two, each small enough for the Triton interpreter on a CPU.
SHAPES = [dict(n=1), dict(n=127), dict(n=128), dict(n=129), dict(n=4097)]


def torch_dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def setup(seed=0, device="cuda", n=1 << 20, dtype="float32"):
    """Fresh N(0, 1) inputs; the same seed gives the same values in every dtype."""
    generator = torch.Generator(device=device).manual_seed(seed)
    element_type = torch_dtype(dtype)
    x = torch.randn(n, generator=generator, device=device).to(element_type)
    y = torch.randn(n, generator=generator, device=device).to(element_type)
    out = torch.empty(n, device=device, dtype=element_type)
    return {"inputs": {"x": x, "y": y, "out": out, "n": n}, "outputs": ["out"]}


def reference(x, y, out, **_):
    torch.add(x, y, out=out)


def flops(n, **_):
    return n


def bytes(n, dtype="float32", **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: x and y read once, out written once."""
    return 3 * n * torch.empty((), dtype=torch_dtype(dtype)).element_size()
