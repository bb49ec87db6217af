"""Local compile check of a ModelNew's _CUDA_SRC/_CPP_SRC (no GPU needed): nvcc -c for sm_90a, g++ -c for the binding."""
import ast, subprocess, sys, tempfile, os, time
import torch.utils.cpp_extension as ce
path = sys.argv[1]
tree = ast.parse(open(path).read())
src = {}
for node in tree.body:
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in ("_CUDA_SRC", "_CPP_SRC"):
        src[node.targets[0].id] = ast.literal_eval(node.value)
d = tempfile.mkdtemp()
open(f"{d}/k.cu", "w").write(src["_CUDA_SRC"]); open(f"{d}/b.cpp", "w").write(src["_CPP_SRC"])
inc = [f"-I{p}" for p in ce.include_paths()]
import sysconfig; inc.append("-I" + sysconfig.get_paths()["include"])
t = time.time()
r1 = subprocess.run(["nvcc", "-O3", "-arch=sm_90a", "-c", f"{d}/k.cu", "-o", f"{d}/k.o", "-Xptxas", "-v"], capture_output=True, text=True)
print(r1.stdout, r1.stderr, "nvcc rc", r1.returncode, f"{time.time()-t:.1f}s")
t = time.time()
r2 = subprocess.run(["g++", "-O2", "-std=c++17", "-fPIC", "-DTORCH_EXTENSION_NAME=x", *inc, "-c", f"{d}/b.cpp", "-o", f"{d}/b.o"], capture_output=True, text=True)
print(r2.stdout[-2000:], r2.stderr[-2000:], "g++ rc", r2.returncode, f"{time.time()-t:.1f}s")
sys.exit(r1.returncode or r2.returncode)
