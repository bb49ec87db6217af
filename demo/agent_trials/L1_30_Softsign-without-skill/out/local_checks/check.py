import sys, os, subprocess, importlib, time, sysconfig
sys.path.insert(0, os.path.abspath("out"))
import torch
import _common
TI = os.path.join(os.path.dirname(torch.__file__), "include")
PYI = sysconfig.get_paths()["include"]
CUDA_INC = sys.argv[1]
rc_all = 0
for mod in ["v0_scalar", "v1_vec4", "v2_vec4_unroll_stream", "v3_tma_bulk"]:
    m = importlib.import_module(mod)
    p = f"_localbuild/{mod}"
    open(p + ".cu", "w").write(_common.CU_HEADER + m.CU)
    open(p + ".cpp", "w").write(_common.CPP_HEADER + m.CPP)
    t = time.time()
    r = subprocess.run(["nvcc", "-c", "-O3", "-gencode=arch=compute_90,code=sm_90", "-Xptxas", "-v",
                        "-o", p + ".cu.o", p + ".cu"], capture_output=True, text=True)
    print(mod, "nvcc rc", r.returncode, f"{time.time()-t:.1f}s")
    print("\n".join(l for l in (r.stdout + r.stderr).splitlines() if "error" in l.lower() or "registers" in l or "warning" in l.lower())[:3000])
    rc_all |= r.returncode
    t = time.time()
    r = subprocess.run(["g++", "-fsyntax-only", "-std=c++17", "-I", "out/local_checks/stub", "-I", TI,
                        "-I", TI + "/torch/csrc/api/include", "-I", PYI, "-I", CUDA_INC, p + ".cpp"],
                       capture_output=True, text=True)
    print(mod, "g++ rc", r.returncode, f"{time.time()-t:.1f}s")
    print("\n".join(l for l in (r.stdout + r.stderr).splitlines() if "error" in l.lower())[:3000])
    rc_all |= r.returncode
sys.exit(rc_all)
