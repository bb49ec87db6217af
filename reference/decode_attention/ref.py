"""Decode attention: one new query token per sequence against its KV cache, grouped-query heads.

o[b, h] = softmax(q[b, h] . k[b, g]^T * scale) v[b, g], with g = h // (HQ // HKV): each of the HKV
key/value heads serves HQ / HKV query heads, scale = 1/sqrt(D), non-causal (the cache holds only
past tokens). q and o are (B, HQ, D); k and v are (B, HKV, L, D), contiguous, N(0, 1).

Dims: B (batch), HQ (query heads), HKV (KV heads, dividing HQ), L (KV length), D (head dimension),
dtype ("bfloat16" | "float16" | "float32"), logit_shift (see below). The default is a
Llama-style layer at decode time: batch 8, 32 query heads over 8 KV heads, head dimension 128, a
16384-token cache in bfloat16.

Why it is hard: the work is B * HKV independent streams of L * D * 2 cache elements, 64 at the
default size, fewer than a GPU has SMs, each a reduction over L. A kernel with one program per
(batch, KV head) leaves most SMs idle however good its inner loop; the cache must be split along L
(flash-decoding: each split keeps its own running max, sum and output, and a second pass merges
them, each rescaled by exp(its max - the global max)).

With N(0, 1) inputs the logits q.k * scale are about N(0, 1), so a kernel that skips the max
subtraction, or merges splits without rescaling, could pass. logit_shift adds
logit_shift * sqrt(D) to the first coordinate of every key (as in the attention case study): every
logit of query (b, h) moves by logit_shift * q[b, h, 0], the same for every key, so the softmax is
unchanged while the raw logits leave float32's exp range at logit_shift = 100.

Tolerances follow the reference-error rule (float64 truth, check/tolerance.py); bytes count the
cache read once, which is the roof: at the default size 512 MiB of K and V against 32 KiB of q and o.
"""

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

# KV lengths of one token, just past a power of two (a partial last block and a partial last
# split), and longer than one split; head groups of 1, 2 and 4 so a wrong KV head for a query head
# shows; the large-logit entry. Each is small enough for the Triton interpreter on a CPU.
SHAPES = [
    dict(B=1, HQ=4, HKV=1, L=1, D=64),
    dict(B=2, HQ=8, HKV=2, L=129, D=64),
    dict(B=1, HQ=4, HKV=4, L=257, D=32),
    dict(B=1, HQ=8, HKV=4, L=1000, D=128),
    dict(B=2, HQ=4, HKV=2, L=300, D=64, logit_shift=100.0),
]


def torch_dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def setup(seed=0, device="cuda", B=8, HQ=32, HKV=8, L=16384, D=128, dtype="bfloat16", logit_shift=0.0):
    if HQ % HKV:
        raise ValueError(f"HQ ({HQ}) must be a multiple of HKV ({HKV})")
    generator = torch.Generator(device=device).manual_seed(seed)
    element_type = torch_dtype(dtype)
    q = torch.randn(B, HQ, D, generator=generator, device=device).to(element_type)
    k = torch.randn(B, HKV, L, D, generator=generator, device=device)
    k[..., 0] += logit_shift * D**0.5  # times 1/sqrt(D): every logit of (b, h) moves by logit_shift * q[b, h, 0]
    k = k.to(element_type)
    v = torch.randn(B, HKV, L, D, generator=generator, device=device).to(element_type)
    o = torch.empty(B, HQ, D, device=device, dtype=element_type)
    return {"inputs": {"q": q, "k": k, "v": v, "o": o, "B": B, "HQ": HQ, "HKV": HKV, "L": L, "D": D},
            "outputs": ["o"]}


def reference(q, k, v, **_):
    """PyTorch's fused attention with grouped-query heads, returned: the benchmark times this call as the baseline."""
    out = torch.nn.functional.scaled_dot_product_attention(q.unsqueeze(2), k, v, enable_gqa=True)
    return out.squeeze(2)


def flops(B, HQ, L, D, **_):
    """q . k and p . v: 2 * L * D each per query head; the softmax is not counted."""
    return 4 * B * HQ * L * D


def bytes(B, HQ, HKV, L, D, dtype="bfloat16", **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: the K and V caches read once, q read and o written once."""
    return (2 * B * HKV * L * D + 2 * B * HQ * D) * torch.empty((), dtype=torch_dtype(dtype)).element_size()
