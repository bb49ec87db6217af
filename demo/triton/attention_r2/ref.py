"""Attention forward, O = softmax(Q K^T * scale) V, non-causal, bfloat16, scale = 1/sqrt(D).

Dims: B (batch), H (heads), S (sequence length, queries = keys), D (head dimension),
logit_shift (see below). q, k, v and o are (B, H, S, D), contiguous, N(0, 1) inputs. Every
SHAPES entry keeps D = 64: v0.cu handles only D = 64.

With N(0, 1) inputs the logits q.k * scale are about N(0, 1), so a kernel that forgets to
subtract the running max still passes. logit_shift adds logit_shift * sqrt(D) to the first
coordinate of every key, which moves all logits of query row i by logit_shift * q[i, 0]:
the same for every key of the row, so the softmax and O keep their usual spread, but at
logit_shift = 100 the raw logits of about a third of the rows pass 88.7 (float32 exp
overflows) or stay below -103 (every exp underflows to 0). Skipping the max subtraction
then fails 9388-9852 of 25600 elements (CPU, B=1, H=2, S=200, 4 seeds); honest kernels are
unaffected (exact vs torch's CPU SDPA: at most 0.32 of the tolerances below).

Tolerances: atol 3e-3 (tighter than bfloat16's default 1e-2), rtol 1.6e-2 (the default,
2 bf16 ulp). |O| is small: at S=2048 its elements are about N(0, 0.036^2), a fifth of them
below 0.01, so the default atol would let most elements of a slightly wrong kernel through.
Checked on the CPU against the exact result rounded to bf16:
- honest kernels: a flash-style computation with float32 logits and P rounded to bf16 (as
  SDPA's flash backend does) and one with P in float32 (as v0.cu does) differ by at most
  0.54 of these tolerances over 80k rows at each S from 63 to 2048 (0.27 at S=2048; 5
  seeds). The bf16 rounding of P is that noise; it is largest at small S, where a few
  large p * v terms cancel: 0.75 at S=16, and 1.05 at S=7, which is why no SHAPES entry
  lies between 1 and 63;
- wrong kernels at B*H=4, S=2048: dropping the last key puts 3341 elements outside (75 at
  the default atol), logits 2% too large 1774 (31 at the default).
"""

import torch

DTYPE = torch.bfloat16  # the solutions' element type: v0.cu takes __nv_bfloat16 pointers

atol = 3e-3
rtol = 1.6e-2

# Sequence lengths straddling the query and key blocks of the v0 kernels (64 and 16 in
# CUDA, 64 and 64 in Triton) and of later ones (128): a single token; 65 and 129, which
# leave almost a whole key block of padding (a missing key mask fails there, while at 63
# or 127 one padded key shifts O by about 1%, inside rtol); several key blocks with a
# partial last one; small B*H so (batch, head) indexing is exercised; and the large-logit
# entry. Each is small enough for the Triton interpreter on a CPU.
SHAPES = [
    dict(B=1, H=1, S=1, D=64),
    dict(B=1, H=2, S=63, D=64),
    dict(B=2, H=1, S=64, D=64),
    dict(B=1, H=3, S=65, D=64),
    dict(B=2, H=2, S=127, D=64),
    dict(B=1, H=2, S=129, D=64),
    dict(B=1, H=1, S=1000, D=64),
    dict(B=1, H=2, S=200, D=64, logit_shift=100.0),
]


def setup(seed=0, device="cuda", B=8, H=16, S=2048, D=64, logit_shift=0.0):
    generator = torch.Generator(device=device).manual_seed(seed)
    shape = (B, H, S, D)
    q = torch.randn(shape, generator=generator, device=device).to(DTYPE)
    k = torch.randn(shape, generator=generator, device=device)
    k[..., 0] += logit_shift * D**0.5  # times scale = 1/sqrt(D): row i moves by logit_shift * q[i, 0]
    k = k.to(DTYPE)
    v = torch.randn(shape, generator=generator, device=device).to(DTYPE)
    o = torch.empty(shape, device=device, dtype=DTYPE)
    return {"inputs": {"q": q, "k": k, "v": v, "o": o, "B": B, "H": H, "S": S, "D": D}, "outputs": ["o"]}


def reference(q, k, v, **_):
    """torch's fused attention in bfloat16 (flash or cuDNN on an H100), returned: the
    benchmark times exactly this call as the baseline. Its default scale is 1/sqrt(D)."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def flops(B, H, S, D, **_):
    """Two matmuls of 2*S*S*D each (Q K^T and P V) per (batch, head); the softmax is not counted."""
    return 4 * B * H * S * S * D


def bytes(B, H, S, D, **_):  # noqa: A001 - the contract names it bytes
    """Minimum DRAM traffic: q, k, v read once, o written once, 2 bytes an element."""
    return 4 * B * H * S * D * torch.empty((), dtype=DTYPE).element_size()
