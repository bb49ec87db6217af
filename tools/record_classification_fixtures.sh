#!/usr/bin/env bash
# Record small .ncu-rep fixtures of library kernels nobody here wrote, for the
# classifier's tests: cuBLAS GEMMs through torch.matmul in bf16, fp16 and strict fp32 at three
# shapes, and PyTorch's SDPA backends (flash, cuDNN, memory-efficient), bf16 B8 H16 S2048 D64.
# Run on a GPU machine with Nsight Compute and torch, from anywhere in the checkout:
#   tools/record_classification_fixtures.sh OUT_DIR        (the device tool: tools/record_classification_fixtures.sh "$OUT")
# Each case is profiled by tools/library_kernels.py with ncu_profile.py's own ncu command
# (targeted sections, this chip's extra metrics, --clock-control none: clocks are never
# changed), one call inside the NVTX range kernel_opt_solution after warm-up calls outside it,
# then classified with `ncu_profile.py --from-report`. The reports and a README (device, tool
# versions, command, the labels) go to tests/fixtures/ncu/library/; OUT_DIR gets the README, a
# log and one archive of the reports with every case's summary (the device returns at most 8
# files), so nothing is lost on the way back. Cases still waiting when DEADLINE_S (default 390 s)
# has passed are skipped, so one call finishes in under 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: tools/record_classification_fixtures.sh OUT_DIR}
deadline_s=${DEADLINE_S:-390}
timeout_s=${CASE_TIMEOUT_S:-150}
mkdir -p "$out"
out=$(cd "$out" && pwd)
dest=tests/fixtures/ncu/library
work=$(mktemp -d "${TMPDIR:-/tmp}/classification_fixtures.XXXXXX")
trap 'rm -rf "$work"' EXIT  # everything worth keeping is in the archive under OUT_DIR
mkdir -p "$dest" "$work/fixtures"
log="$out/record.log"
: >"$log"
start=$SECONDS

ncu_bin=$(command -v ncu || true)
for candidate in /opt/nvidia/nsight-compute/2025.3.1/ncu /usr/local/cuda/bin/ncu; do
  if [ -z "$ncu_bin" ] && [ -x "$candidate" ]; then ncu_bin=$candidate; fi
done
if [ -z "$ncu_bin" ]; then
  echo "no ncu: not on PATH, /opt/nvidia/nsight-compute/2025.3.1 or /usr/local/cuda/bin" | tee -a "$log" >&2
  exit 4
fi

mapfile -t cases < <("${PYTHON:-python3}" tools/library_kernels.py list | cut -f1)
# The chip decides which extra metrics ncu is asked for; torch is imported once for it, not per case.
capability=$("${PYTHON:-python3}" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability(0))')
status=0
for name in "${cases[@]}"; do
  if [ $((SECONDS - start)) -ge "$deadline_s" ]; then
    echo "== $name: SKIPPED, past the ${deadline_s}s deadline" | tee -a "$log"
    status=1
    continue
  fi
  run_dir="$work/$name"
  mkdir -p "$run_dir"
  set +e
  "${PYTHON:-python3}" tools/library_kernels.py profile "$name" "$run_dir/profile" --ncu "$ncu_bin" --capability "$capability" \
    --timeout "$timeout_s" >"$run_dir/console.txt" 2>&1
  code=$?
  set -e
  if [ "$code" -eq 3 ]; then
    echo "== $name: SKIPPED, not available here: $(grep -h 'CASE UNAVAILABLE' "$run_dir/ncu.log" | head -n 1)" | tee -a "$log"
    continue
  fi
  if [ "$code" -ne 0 ]; then
    status=1
    echo "== $name: FAILED (exit $code), last lines of ncu.log:" | tee -a "$log"
    tail -n 5 "$run_dir/ncu.log" 2>/dev/null | tee -a "$log" || true
    continue
  fi
  cp "$run_dir/profile.ncu-rep" "$dest/$name.ncu-rep"
  cp "$run_dir/profile.ncu-rep" "$work/fixtures/$name.ncu-rep"
  set +e
  "${PYTHON:-python3}" skills/kernel-opt-skill/scripts/ncu_profile.py --from-report "$run_dir/profile.ncu-rep" \
    --output-dir "$run_dir" --backend cuda >"$run_dir/classify.txt" 2>&1
  classified=$?
  set -e
  echo "== $name: recorded ($(du -k "$dest/$name.ncu-rep" | cut -f1) KiB, $((SECONDS - start)) s so far)," \
    "ncu_profile --from-report exit $classified: $(head -n 1 "$run_dir/classify.txt")" | tee -a "$log"
done

{
  echo "# Library-kernel ncu fixtures (issue 15)"
  echo
  echo "Reports of kernels nobody here wrote, for the classifier's tests: cuBLAS through torch.matmul and"
  echo "PyTorch's SDPA backends. Re-record them with \`tools/record_classification_fixtures.sh OUT_DIR\` on a GPU"
  echo "machine; each is one call inside the NVTX range \`kernel_opt_solution\`, after warm-up calls outside it."
  echo
  echo "- recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  echo "- ncu: $("$ncu_bin" --version | tail -n 1) (\`$ncu_bin\`)"
  echo "- python, torch, cuDNN: $("${PYTHON:-python3}" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.backends.cudnn.version())')"
  echo "- command per case: \`python3 tools/library_kernels.py profile CASE OUT/CASE/profile --ncu NCU\`, which runs"
  echo "  \`$("${PYTHON:-python3}" tools/library_kernels.py command gemm_bf16_8192 OUT/CASE/profile --ncu ncu --capability "$capability" | "${PYTHON:-python3}" -c 'import json, shlex, sys; print(shlex.join(json.load(sys.stdin)))' | sed 's/gemm_bf16_8192/CASE/')\`"
  echo
  "${PYTHON:-python3}" - "$work" "$dest" "${cases[@]}" <<'PY'
import json, os, subprocess, sys
work, dest, names = sys.argv[1], sys.argv[2], sys.argv[3:]
described = dict(line.split("\t") for line in subprocess.run(
    [sys.executable, "tools/library_kernels.py", "list"], capture_output=True, text=True).stdout.splitlines())
print("| fixture | call | label | busiest pipe | memory limiter | asynchronous design | kernels | size |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name in names:
    report, summary = os.path.join(dest, name + ".ncu-rep"), os.path.join(work, name, "ncu_summary.json")
    if not os.path.isfile(report) or not os.path.isfile(os.path.join(work, name, "profile.ncu-rep")):
        print(f"| {name} | {described.get(name, '')} | not recorded | | | | | |")
        continue
    size = f"{os.path.getsize(report) // 1024} KiB"
    if not os.path.isfile(summary):
        print(f"| {name} | {described.get(name, '')} | not classified (see classify.txt) | | | | | {size} |")
        continue
    s = json.load(open(summary))
    kernel = next(k for k in s["kernels"] if k["name"] == s["dominant_kernel"]["name"])
    pipes = kernel.get("pipes") or {}
    pipe = f"{pipes.get('busiest')} {pipes.get('busiest_pct') or 0:.1f}%" if pipes.get("busiest") else "-"
    design = ", ".join(f.split(" (")[0] for f in (kernel.get("design") or {}).get("async_features", [])) or "-"
    names_ = "; ".join(f"{k['name'][:40]} ({k['share_pct']:.0f}%)" for k in s["kernels"])
    print(f"| {name} | {described.get(name, '')} | {s['bottleneck']} | {pipe} | {s['memory_limiter']} | {design} "
          f"| {names_} | {size} |")
PY
} >"$dest/README.md"
cp "$dest/README.md" "$work/fixtures/README.md"
for name in "${cases[@]}"; do
  if [ -d "$work/$name" ]; then
    mkdir -p "$work/fixtures/runs/$name"
    for file in ncu_summary.json ncu_summary.md ncu.log console.txt classify.txt; do
      if [ -f "$work/$name/$file" ]; then cp "$work/$name/$file" "$work/fixtures/runs/$name/"; fi
    done
  fi
done
tar -czf "$out/classification_fixtures.tar.gz" -C "$work" fixtures
cp "$dest/README.md" "$out/README.md"
cat "$dest/README.md"
echo "archive: $out/classification_fixtures.tar.gz ($(du -k "$out/classification_fixtures.tar.gz" | cut -f1) KiB)," \
  "$((SECONDS - start)) s" | tee -a "$log"
exit "$status"
