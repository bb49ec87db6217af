# GPU host: correctness (full problem shape, vs fp32 eager reference) + timing.
# Usage: python out/bench.py [--compile] [--tf32-eager] out/v0_fused.py out/v1_...py ...
import os, sys, json, time, importlib.util, torch, triton
here = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
ref = load(os.path.join(here, "..", "88_Gemm_GroupNorm_Swish_Multiply_Swish.py"), "ref")
torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch default for fp32 matmul
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"
torch.manual_seed(0)
model = ref.Model(*ref.get_init_inputs()).to(dev).eval()
with torch.no_grad():  # non-trivial GroupNorm affine so gamma/beta paths are exercised
    model.group_norm.weight.uniform_(0.5, 1.5); model.group_norm.bias.uniform_(-0.5, 0.5)
inputs = [torch.rand(ref.batch_size, ref.in_features, device=dev) for _ in range(3)]
res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}

def bench(fn, x):
    return triton.testing.do_bench(lambda: fn(x), warmup=50, rep=300, return_mode="median")

t0 = time.time()
with torch.no_grad():
    refs = [model(x) for x in inputs]
    res["eager_ms"] = bench(model, inputs[0])
    if "--tf32-eager" in flags:
        torch.backends.cuda.matmul.allow_tf32 = True
        res["eager_tf32_ms"] = bench(model, inputs[0])
        o = model(inputs[0]); res["eager_tf32_maxdiff"] = (o - refs[0]).abs().max().item()
        torch.backends.cuda.matmul.allow_tf32 = False
    if "--compile" in flags:
        tc = time.time(); cm = torch.compile(model); cm(inputs[0]); torch.cuda.synchronize()
        res["compile_time_s"] = time.time() - tc
        res["compile_ms"] = bench(cm, inputs[0])
        res["compile_maxdiff"] = (cm(inputs[0]) - refs[0]).abs().max().item()
print(json.dumps(res), flush=True)
for path in args:
    name = os.path.basename(path)[:-3]
    r = {}
    try:
        mod = load(path, name)
        new = mod.ModelNew(*ref.get_init_inputs()).to(dev).eval()
        new.load_state_dict(model.state_dict())
        with torch.no_grad():
            tc = time.time(); new(inputs[0]); torch.cuda.synchronize(); r["first_call_s"] = time.time() - tc
            diffs, oks = [], []
            for x, rr in zip(inputs, refs):
                o = new(x); torch.cuda.synchronize()
                diffs.append((o - rr).abs().max().item())
                oks.append(bool(torch.allclose(o, rr, atol=1e-2, rtol=1e-2)) and not torch.isnan(o).any().item())
            r["max_abs_diff"] = max(diffs); r["correct"] = all(oks)
            r["ms"] = bench(new, inputs[0])
            r["speedup_vs_eager"] = res["eager_ms"] / r["ms"]
            if "compile_ms" in res: r["speedup_vs_compile"] = res["compile_ms"] / r["ms"]
            if "eager_tf32_ms" in res: r["speedup_vs_eager_tf32"] = res["eager_tf32_ms"] / r["ms"]
            k = getattr(mod, "fused_gemm_gn_swish_kernel", None)
            if k is not None and getattr(k, "best_config", None) is not None: r["best_config"] = str(k.best_config)
    except Exception as e:
        import traceback; traceback.print_exc(); r["error"] = repr(e)[:500]
    res[name] = r
    print(name, json.dumps(r), flush=True)
res["total_s"] = time.time() - t0
out = os.environ.get("OUT", "/tmp")
tag = os.environ.get("TAG", "run")
json.dump(res, open(os.path.join(out, f"results_{tag}.json"), "w"), indent=1)
json.dump(res, open(os.path.join(here, f"results_{tag}.json"), "w"), indent=1)
