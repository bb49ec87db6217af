"""Correctness + timing harness for the ModelNew versions (run on the GPU host).

usage: python bench.py [--baselines] [--tag NAME] vX.py [vY.py ...]
Writes $OUT/results_<tag>.json (or ./results_<tag>.json) and prints a table.
"""
import argparse, importlib.util, json, os, statistics, sys, time, traceback
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PROB = os.path.join(HERE, "..", "18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp.py")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def time_fn(fn, x, warmup=20, iters=200):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    ts = []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        s.record(); fn(x); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e) * 1000.0)  # us
    # back-to-back throughput (no per-call sync)
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(iters):
        fn(x)
    torch.cuda.synchronize()
    thr = (time.perf_counter() - t0) / iters * 1e6
    gpu = None
    try:  # pure device time of the kernels (no host overhead), from the profiler
        from torch.profiler import profile, ProfilerActivity
        n = 20
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn(x)
            torch.cuda.synchronize()
        tot = sum(getattr(ev, "self_device_time_total", 0) or 0 for ev in prof.key_averages())
        gpu = tot / n
    except Exception as ex:  # profiler unavailable: keep going
        gpu = f"profiler failed: {ex}"
    return {"gpu_kernel_us": gpu, "median_us": statistics.median(ts), "mean_us": statistics.mean(ts), "min_us": min(ts),
            "p90_us": sorted(ts)[int(0.9 * len(ts))], "back_to_back_us": thr}


def ref64(model, x):
    W, b = model.linear.weight.double(), model.linear.bias.double()
    return (x.double() @ W.t() + b).sum(1, keepdim=True)


def check_version(mod, prob, dev):
    res = {"cases": [], "pass": True}
    B0, I0, O0 = prob.batch_size, prob.in_features, prob.out_features

    def case(name, B, I, O, seed, xgen, wscale=1.0, mutate=False):
        torch.manual_seed(seed)
        ref = prob.Model(I, O).to(dev)
        if wscale != 1.0:
            with torch.no_grad():
                ref.linear.weight.mul_(wscale); ref.linear.bias.mul_(wscale)
        new = mod.ModelNew(I, O).to(dev)
        new.load_state_dict(ref.state_dict())
        x = xgen(B, I).to(dev)
        with torch.no_grad():
            o_new = new(x)
            if mutate:  # in-place weight update after a first call: output must follow
                for m in (ref, new):
                    m.linear.weight.mul_(-0.5).add_(0.001); m.linear.bias.add_(0.25)
                o_new = new(x)
            o_ref = ref(x)
            o64 = ref64(ref, x)
        torch.cuda.synchronize()
        ok = (o_new.shape == o_ref.shape) and bool(torch.allclose(o_new, o_ref, atol=1e-2, rtol=1e-2))
        d = (o_new.double() - o_ref.double()).abs()
        r = {"case": name, "shape": list(o_new.shape), "allclose_1e-2": ok,
             "max_abs_vs_eager": d.max().item(),
             "max_rel_vs_eager": (d / o_ref.double().abs().clamp_min(1e-6)).max().item(),
             "max_abs_new_vs_fp64": (o_new.double() - o64).abs().max().item(),
             "max_abs_eager_vs_fp64": (o_ref.double() - o64).abs().max().item(),
             "ref_abs_max": o_ref.abs().max().item()}
        res["cases"].append(r)
        res["pass"] &= ok
        del ref, new

    rand = lambda B, I: torch.rand(B, I)
    randn = lambda B, I: torch.randn(B, I)
    for sd in (0, 1, 2):
        case(f"problem_shape_seed{sd}", B0, I0, O0, sd, rand)
    case("problem_shape_randn_w*10", B0, I0, O0, 3, randn, wscale=10.0)
    case("problem_shape_inplace_weight_update", B0, I0, O0, 4, rand, mutate=True)
    case("odd_shape_B7_I1000_O333", 7, 1000, 333, 5, randn)
    case("odd_shape_B5_I1001_O17(fallback)", 5, 1001, 17, 6, randn)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baselines", action="store_true")
    ap.add_argument("--tag", default="run")
    ap.add_argument("versions", nargs="*")
    a = ap.parse_args()
    dev = torch.device("cuda")
    prob = load(PROB, "kb18_problem")
    out = {"env": {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
                   "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32}, "results": {}}
    print(out["env"], flush=True)
    torch.manual_seed(0)
    x = prob.get_inputs()[0].to(dev)
    base_model = prob.Model(*prob.get_init_inputs()).to(dev).eval()

    if a.baselines:
        with torch.no_grad():
            out["results"]["eager"] = time_fn(base_model, x)
            print("eager", out["results"]["eager"], flush=True)
            t0 = time.time()
            cm = torch.compile(base_model)
            cm(x); torch.cuda.synchronize()
            ct = time.time() - t0
            out["results"]["torch.compile"] = time_fn(cm, x)
            out["results"]["torch.compile"]["compile_s"] = ct
            print("compile", out["results"]["torch.compile"], flush=True)

    for vspec in a.versions:
        vp, _, opt = vspec.partition("@")
        name = os.path.splitext(os.path.basename(vp))[0] + (("@" + opt) if opt else "")
        os.environ["KB18_CACHE_WSUM"] = "1" if opt == "cache" else "0"
        entry = {}
        try:
            t0 = time.time()
            mod = load(os.path.join(HERE, os.path.basename(vp)), "kb18_" + name.replace("@", "_"))
            m = mod.ModelNew(*prob.get_init_inputs()).to(dev).eval()
            m.load_state_dict(base_model.state_dict())
            with torch.no_grad():
                m(x); torch.cuda.synchronize()
            entry["build_and_first_call_s"] = time.time() - t0
            entry["check"] = check_version(mod, prob, dev)
            with torch.no_grad():
                entry["timing"] = time_fn(m, x)
        except Exception as ex:
            entry["error"] = "".join(traceback.format_exception(ex))
        out["results"][name] = entry
        print(name, json.dumps(entry, indent=1), flush=True)

    base = out["results"]
    print("\n=== summary (median per-call us, CUDA events) ===")
    e = base.get("eager", {}).get("median_us"); c = base.get("torch.compile", {}).get("median_us")
    for k, v in base.items():
        t = v.get("median_us") or v.get("timing", {}).get("median_us")
        if t is None:
            print(f"{k:24s} ERROR/none"); continue
        ok = v.get("check", {}).get("pass", "-")
        s1 = f"{e / t:8.2f}x" if e else "   -"
        s2 = f"{c / t:8.2f}x" if c else "   -"
        b2b = v.get("back_to_back_us") or v.get("timing", {}).get("back_to_back_us")
        g = v.get("gpu_kernel_us") or v.get("timing", {}).get("gpu_kernel_us")
        g = f"{g:9.2f}" if isinstance(g, float) else str(g)
        print(f"{k:24s} {t:10.2f} us  b2b {b2b:10.2f} us  gpu {g} us  vs eager {s1}  vs compile {s2}  correct={ok}")
    od = os.environ.get("OUT", HERE)
    with open(os.path.join(od, f"results_{a.tag}.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
