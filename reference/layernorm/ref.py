"""LayerNorm over the last dimension: float16 in and out, float32 statistics.

Dims: M (rows), N (row length), eps. The timing case of `tools/time_evaluate.sh` (issue 18: how
long one `workspace.py evaluate` takes, fp16 8192x4096 on an H100): an unseen problem of the
size a user brings, a single-kernel Triton solution, PyTorch's fused layer_norm as the baseline.
Tolerances follow the reference's own rounding (float64 truth, check/tolerance.py).
"""

import torch

# Row lengths straddling powers of two, and a row longer than 4096; each small enough for the
# Triton interpreter on a CPU.
SHAPES = [dict(M=3, N=127), dict(M=4, N=1000), dict(M=2, N=4097)]


def setup(seed=0, device="cuda", M=8192, N=4096, eps=1e-5):
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(M, N, generator=generator, device=device).to(torch.float16)
    weight = torch.randn(N, generator=generator, device=device).to(torch.float16)
    bias = torch.randn(N, generator=generator, device=device).to(torch.float16)
    y = torch.empty(M, N, device=device, dtype=torch.float16)
    return {"inputs": {"x": x, "weight": weight, "bias": bias, "y": y, "M": M, "N": N, "eps": eps},
            "outputs": ["y"]}


def reference(x, weight, bias, eps, **_):
    """What a user would write: statistics in float32, one cast back at the end. Returned."""
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), eps).to(x.dtype)


def bytes(M, N, **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: x read and y written once (2 bytes each), weight and bias read once."""
    return 2 * (2 * M * N + 2 * N)
