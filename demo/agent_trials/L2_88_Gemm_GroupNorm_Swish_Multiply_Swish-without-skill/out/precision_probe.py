# CPU probe: how far do TF32-/BF16-rounded GEMM inputs move the final output? (reference fp32)
import torch, importlib.util, time
spec = importlib.util.spec_from_file_location("p", "88_Gemm_GroupNorm_Swish_Multiply_Swish.py")
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
torch.manual_seed(0)
M = 256  # fewer rows to keep CPU time small; per-element statistics are the same
m = p.Model(*p.get_init_inputs())
x = torch.rand(M, p.in_features)
def tf32(t):  # round-to-nearest to 10 mantissa bits
    i = t.view(torch.int32)
    i = (i + 0x1000) & ~0x1FFF
    return i.view(torch.float32)
def tail(y):
    y = m.group_norm(y); y = y*torch.sigmoid(y); y = y*m.multiply_weight; return y*torch.sigmoid(y)
with torch.no_grad():
    ref = m(x)
    W, b = m.gemm.weight, m.gemm.bias
    for name, f in [("tf32", tf32), ("bf16", lambda t: t.bfloat16().float())]:
        out = tail(f(x) @ f(W).t() + b)
        d = (out-ref).abs()
        print(name, "max abs", d.max().item(), "max rel-viol", (d/(1e-2+1e-2*ref.abs())).max().item())
