"""Self-test of v0's parts under the interpreter. The full output of problem 83 is identically 0
(min(x, 0) then clamp(min=0)), so the skill's check cannot see whether conv/GroupNorm are right;
this checks the conv kernel against F.conv3d and the GroupNorm stats/affine (min/clamp lines
stripped from a copy of the source) against F.group_norm, plus the dropout keep-rate."""
import os, sys, re, types
os.environ["TRITON_INTERPRET"] = "1"
import torch, torch.nn.functional as F, triton
path = sys.argv[1]
src = open(path).read()
mod = types.ModuleType("v"); exec(compile(src, path, "exec"), mod.__dict__)
src_nc = "\n".join(l for l in src.splitlines() if "propagate_nan" not in l)   # drop min/clamp
mod_nc = types.ModuleType("vnc"); exec(compile(src_nc, path + "[noclamp]", "exec"), mod_nc.__dict__)
torch.manual_seed(0)
N, Cin, Cout, D, H, W, K, G = [int(v) for v in os.environ.get("DIMS", "2,3,8,6,9,11,3,4").split(",")]
m = mod.ModelNew(Cin, Cout, K, G, 0.0, 1.0, 0.2)
with torch.no_grad():
    m.norm.weight.normal_(); m.norm.bias.normal_()
x = torch.rand(N, Cin, D, H, W)
ref_conv = F.conv3d(x, m.conv.weight, m.conv.bias)
y = torch.empty_like(ref_conv)
OD, OH, OW = ref_conv.shape[2:]
mod.conv3d_direct_kernel[(N, (OD*OH*OW + 255)//256)](x, m.conv.weight.contiguous(), m.conv.bias, y, D, H, W, OD, OH, OW, C_IN=Cin, C_OUT=Cout, C_OUT_P2=triton.next_power_of_2(Cout), K=K, BLOCK=256)
print("conv max abs err", (y - ref_conv).abs().max().item())
mnc = mod_nc.ModelNew(Cin, Cout, K, G, 0.0, 1.0, 0.2); mnc.load_state_dict(m.state_dict()); mnc.eval()
with torch.no_grad():
    out = mnc(x); ref = F.group_norm(ref_conv, G, m.norm.weight, m.norm.bias, m.norm.eps)
print("gn(no min/clamp, eval) max abs err", (out - ref).abs().max().item())
mnc.train()
with torch.no_grad():
    out = mnc(x)
kept = (out != 0)
print("dropout keep rate", kept.float().mean().item(), "(expect 0.8); kept values scaled ok:",
      torch.allclose(out[kept], ref[kept] / 0.8, atol=1e-5))
with torch.no_grad():
    full = m(x)
print("full model output all zero:", bool((full == 0).all()), tuple(full.shape))
