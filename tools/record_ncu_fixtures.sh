#!/usr/bin/env bash
# Record the small .ncu-rep fixtures that tests/unit/profile/test_classify_fixtures.py classifies on a CPU.
# Run on a GPU machine with Nsight Compute, from anywhere in the checkout:
#   tools/record_ncu_fixtures.sh OUT_DIR        (the device tool: tools/record_ncu_fixtures.sh "$OUT")
# Each kernel in tests/fixtures/ncu/kernels/<name>/ is profiled with the project's own
# ncu_profile.py (targeted sections, no source imported). The reports are copied to
# tests/fixtures/ncu/<name>.ncu-rep with a README saying where they came from, and the same
# files are mirrored under OUT_DIR/fixtures/ncu/ so they come back from a remote machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: tools/record_ncu_fixtures.sh OUT_DIR}
mkdir -p "$out/fixtures/ncu"
kernels=tests/fixtures/ncu/kernels
dest=tests/fixtures/ncu
names=(memory_streaming tensor_core_matmul one_block shared_memory_limited naive_gemm_l1)

# cuBLAS for the tensor-core fixture: the toolkit's, else the nvidia-cublas wheel torch depends on.
cublas_flags() {
  local cuda_home=${CUDA_HOME:-/usr/local/cuda}
  if [ -f "$cuda_home/include/cublas_v2.h" ] && compgen -G "$cuda_home/lib64/libcublas.so*" >/dev/null; then
    echo "-lcublas"
    return
  fi
  "${PYTHON:-python3}" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("nvidia.cublas")
roots = [pathlib.Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
for root in roots:
    libraries = sorted((root / "lib").glob("libcublas.so*"))
    if (root / "include" / "cublas_v2.h").is_file() and libraries:
        lib = root / "lib"
        print(f"-I{root / 'include'} -L{lib} -l:{libraries[0].name} -Xlinker -rpath={lib}")
        sys.exit(0)
sys.exit("no cuBLAS found: install the CUDA toolkit's cuBLAS or the nvidia-cublas wheel")
PY
}

status=0
for name in "${names[@]}"; do
  flags=""
  if [ "$name" = tensor_core_matmul ]; then
    flags=$(cublas_flags) || { echo "== $name: SKIPPED, no cuBLAS to link"; status=1; continue; }
  fi
  run_dir="$out/$name"
  mkdir -p "$run_dir"
  echo "== $name"
  set +e
  "${PYTHON:-python3}" skills/kernel-opt-skill/scripts/ncu_profile.py "$kernels/$name/$name.cu" --ref "$kernels/$name/ref.py" \
    --output-dir "$run_dir" --set targeted --nvcc-flags="$flags" >"$run_dir/console.txt" 2>&1
  code=$?
  set -e
  # Exit 4 after profiling means only that ncu_report cannot read the report here: keep it anyway.
  if [ -f "$run_dir/profile.ncu-rep" ] && { [ "$code" -eq 0 ] || [ "$code" -eq 4 ]; }; then
    cp "$run_dir/profile.ncu-rep" "$dest/$name.ncu-rep"
    cp "$run_dir/profile.ncu-rep" "$out/fixtures/ncu/$name.ncu-rep"
    echo "   recorded ($(du -k "$dest/$name.ncu-rep" | cut -f1) KiB), ncu_profile exit $code: $(head -n 1 "$run_dir/console.txt")"
  else
    status=1
    echo "   FAILED with exit $code (see $run_dir/console.txt and $run_dir/ncu.log):"
    tail -n 5 "$run_dir/console.txt"
  fi
done

ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{
  echo "# ncu fixtures"
  echo
  echo "Small Nsight Compute reports that tests/unit/profile/test_classify_fixtures.py classifies with"
  echo "\`ncu_profile.py --from-report\` (no GPU needed). Each comes from the kernel of the same name in"
  echo "\`kernels/\`; re-record them all with \`tools/record_ncu_fixtures.sh OUT_DIR\` on a GPU machine."
  echo
  echo "- recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  echo "- ncu: $("$ncu_bin" --version | tail -n 1)"
  echo "- python, torch, triton: $("${PYTHON:-python3}" -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)')"
  echo "- nvcc: $(nvcc --version | tail -n 1)"
  echo "- command per fixture: \`python3 skills/kernel-opt-skill/scripts/ncu_profile.py tests/fixtures/ncu/kernels/NAME/NAME.cu --ref tests/fixtures/ncu/kernels/NAME/ref.py --output-dir OUT_DIR/NAME --set targeted\` (tensor_core_matmul adds \`--nvcc-flags=\"$(cublas_flags 2>/dev/null || true)\"\`), which runs \`ncu --clock-control none --nvtx --nvtx-include kernel_opt_solution/ --section ... --import-source no\`"
  echo
  "${PYTHON:-python3}" - "$out" "$dest" "${names[@]}" <<'PY'
import json, os, sys
out, dest, names = sys.argv[1], sys.argv[2], sys.argv[3:]
print("| fixture | label | small_grid | memory limiter | occupancy limiters | size |")
print("| --- | --- | --- | --- | --- | --- |")
for name in names:
    summary, report = os.path.join(out, name, "ncu_summary.json"), os.path.join(dest, name + ".ncu-rep")
    if not os.path.isfile(report):
        print(f"| {name} | not recorded | | | | |")
        continue
    if not os.path.isfile(summary):
        print(f"| {name} | not read on the recording machine (no ncu_report) | | | | {os.path.getsize(report) // 1024} KiB |")
        continue
    s = json.load(open(summary))
    limiters = ", ".join(s["occupancy_limiters"]) or "-"
    size_kib = os.path.getsize(report) // 1024
    print(f"| {name} | {s['bottleneck']} | {s['small_grid']} | {s['memory_limiter']} | {limiters} | {size_kib} KiB |")
PY
} >"$dest/README.md"
cp "$dest/README.md" "$out/fixtures/ncu/README.md"
cat "$dest/README.md"
exit "$status"
