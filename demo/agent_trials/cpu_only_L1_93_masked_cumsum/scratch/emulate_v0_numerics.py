# Informal: emulate v0's float32 summation order on CPU to see its error vs the float64 truth
# (NOT the skill's verdict; the real check needs the GPU).
import torch
torch.manual_seed(0)
R, L = 16, 32768
x = torch.rand(R, L); m = torch.randint(0, 2, (R, L)).bool()
v = (x * m).view(R, L // 1024, 32, 32)  # rows, chunks, warps, lanes
def hs(t):  # Hillis-Steele inclusive scan over last dim, float32, same order as shfl_up loop
    for off in (1, 2, 4, 8, 16):
        s = torch.zeros_like(t); s[..., off:] = t[..., :-off]; t = t + s
    return t
w = hs(v)                               # warp scan
tot = hs(w[..., 31].clone())            # scan of warp totals (rows, chunks, 32)
pref = torch.cat([torch.zeros_like(tot[..., :1]), tot[..., :-1]], -1)
local = pref.unsqueeze(-1) + w          # prefix + v
out = torch.empty(R, L // 1024, 1024)
carry = torch.zeros(R)
for c in range(L // 1024):
    out[:, c] = carry[:, None] + local[:, c].reshape(R, 1024)
    carry = carry + tot[:, c, 31]
out = out.reshape(R, L)
truth = torch.cumsum((x.double() * m), 1)
ref32 = torch.cumsum(x * m, 1)
e = lambda a: ((a.double() - truth).norm() / truth.norm()).item()
print("solution-emulation normwise err", e(out), " cpu ref err", e(ref32), " floor 1e-5")
print("max abs err", (out.double() - truth).abs().max().item(), " bound 1e-5*max|truth|", 1e-5 * truth.abs().max().item())
