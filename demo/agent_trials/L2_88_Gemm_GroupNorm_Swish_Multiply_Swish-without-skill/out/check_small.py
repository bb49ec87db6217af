# CPU check under TRITON_INTERPRET=1 on small shapes. Usage: python check_small.py out/vX.py
# Autotuned kernels: every config is checked separately (the interpreter cannot benchmark).
import os, sys, importlib.util, torch
os.environ.setdefault("TRITON_INTERPRET", "1")
# local-only shim: Triton 3.6's interpreter does int(ndarray) on 1-element arrays, which numpy >= 2.4 rejects
import triton.runtime.interpreter as _ti
_orig_patch = _ti._patch_lang_tensor
def _patched(tensor, scope):
    _orig_patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
_ti._patch_lang_tensor = _patched
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("ref", os.path.join(here, "..", "88_Gemm_GroupNorm_Swish_Multiply_Swish.py"))
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
spec = importlib.util.spec_from_file_location("new", sys.argv[1])
new = importlib.util.module_from_spec(spec); spec.loader.exec_module(new)
from triton.runtime.autotuner import Autotuner
kern = new.fused_gemm_gn_swish_kernel
cfgs = list(kern.configs) if isinstance(kern, Autotuner) else [None]
ok = True
for cfg in cfgs:
    if cfg is not None:
        kern.configs = [cfg]; kern.cache = {}
    for (M, K, N, G) in [(128, 96, 256, 8), (200, 64, 512, 16), (64, 128, 256, 16)]:
        torch.manual_seed(0)
        m = ref.Model(K, N, G, (N,))
        with torch.no_grad():  # non-trivial affine params
            m.group_norm.weight.uniform_(0.5, 1.5); m.group_norm.bias.uniform_(-0.5, 0.5)
        mn = new.ModelNew(K, N, G, (N,)); mn.load_state_dict(m.state_dict())
        x = torch.rand(M, K)
        with torch.no_grad():
            r = m(x); o = mn(x)
        err = (o - r).abs().max().item(); good = torch.allclose(o, r, atol=1e-2, rtol=1e-2)
        ok &= good
        print(os.path.basename(sys.argv[1]), cfg, (M, K, N, G), "max abs diff %.2e" % err, "ok" if good else "FAIL")
print("ALL OK" if ok else "SOME FAILED")
