"""Unofficial sanity check (NOT a skill verdict): re-implements v0's per-thread index math in PyTorch on the CPU
and compares it with F.conv_transpose1d at small sizes, since the CUDA kernel itself cannot run on this machine."""
import itertools, torch, torch.nn.functional as F

def v0_emulated(x, w, bias, stride, pad, dil):
    B, Cin, L = x.shape; _, Cout, K = w.shape
    Lout = (L - 1) * stride - 2 * pad + dil * (K - 1) + 1
    t = torch.arange(Lout)
    y = torch.zeros(B, Cout, Lout, dtype=x.dtype) + (bias.view(1, -1, 1) if bias is not None else 0)
    for k in range(K):                       # same loop as the kernel: k outer, ci inner
        num = t + pad - k * dil
        ok = (num >= 0) & (num % stride == 0) & (num // stride < L)
        l = torch.where(ok, num // stride, torch.zeros_like(num))
        contrib = torch.einsum('bcl,co->bol', x[:, :, l], w[:, :, k])
        y += contrib * ok
    return y

torch.manual_seed(0)
worst = 0.0
for stride, pad, dil, K, L in itertools.product([1, 2, 3], [0, 1, 2], [1, 2, 3], [1, 3], [1, 7, 16]):
    Lout = (L - 1) * stride - 2 * pad + dil * (K - 1) + 1
    if Lout <= 0: continue
    x = torch.randn(2, 5, L, dtype=torch.float64); w = torch.randn(5, 3, K, dtype=torch.float64); b = torch.randn(3, dtype=torch.float64)
    for bias in (None, b):
        ref = F.conv_transpose1d(x, w, bias, stride=stride, padding=pad, dilation=dil)
        got = v0_emulated(x, w, bias, stride, pad, dil)
        assert got.shape == ref.shape, (stride, pad, dil, K, L)
        worst = max(worst, (got - ref).abs().max().item())
print(f"max abs diff over all combos: {worst:.3e}")
assert worst < 1e-10
print("index math OK")
