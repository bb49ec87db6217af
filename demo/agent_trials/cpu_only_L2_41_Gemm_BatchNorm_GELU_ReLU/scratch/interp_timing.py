# quick timing of v0's kernels under TRITON_INTERPRET=1 (not a correctness verdict)
import os, sys, time
os.environ["TRITON_INTERPRET"] = "1"
import torch, importlib.util
spec = importlib.util.spec_from_file_location("sol", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
M, K, N = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
model = m.ModelNew(K, N)
x = torch.rand(M, K)
class W:
    def __init__(s, k, n): s.k, s.n = k, n
    def __getitem__(s, grid):
        launch = s.k[grid]
        def call(*a, **kw):
            t = time.time(); r = launch(*a, **kw); print(f"{s.n}: {time.time()-t:.1f}s", flush=True); return r
        return call
for name in [n for n in dir(m) if n.startswith("_") and n.endswith("_kernel")]:
    setattr(m, name, W(getattr(m, name), name))
t = time.time(); out = model(x); print("total", time.time() - t)
