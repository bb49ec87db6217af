#!/usr/bin/env bash
# The whole test suite on a GPU machine: CPU tests plus everything marked gpu/nvcc/ncu, then the
# timing tests alone. The whole suite took 545 s of wall time on an H100 (2026-11-25), near the
# device tool's 600 s per command, so it can run in parts, one per call:
#   tools/gpu_suite.sh [--part all|gpu|cpu|timing] [LOG_DIR]   (the device tool: tools/gpu_suite.sh --part gpu "$OUT")
#   gpu:    tests marked gpu, ncu or nvcc (not timing), in parallel where pytest-xdist is installed
#   cpu:    every other test but the timing ones (what CI runs, here with a GPU present)
#   timing: tests that assert GPU timings or counters, alone (parallel GPU work would distort them)
#   all:    the three in that order (the default)
# Needs only what a CUDA machine with torch, triton, jinja2, tabulate, pyyaml and pytest has;
# the package is imported from the checkout, nothing is installed.
set -u -o pipefail
cd "$(dirname "$0")/.."
part=all
if [ "${1:-}" = "--part" ]; then
  part=${2:?usage: tools/gpu_suite.sh [--part all|gpu|cpu|timing] [LOG_DIR]}
  shift 2
fi
case "$part" in all|gpu|cpu|timing) ;; *) echo "unknown --part $part: use all, gpu, cpu or timing" >&2; exit 2 ;; esac
log_dir=${1:-out/gpu_suite}
mkdir -p "$log_dir"
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  "${PYTHON:-python3}" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  nvcc --version | tail -n 2
  ncu --version 2>/dev/null | tail -n 1
} >"$log_dir/machine.txt" 2>&1
cat "$log_dir/machine.txt"
parallel=()
if "${PYTHON:-python3}" -c 'import xdist' 2>/dev/null; then parallel=(-n 8); fi  # correctness runs only: no timing tests share the GPU

run_part() {  # run_part NAME MARKER_EXPRESSION [PYTEST_ARGS...]: its exit status, 5 (nothing collected) as 0
  local name=$1 markers=$2
  shift 2
  PYTHONUNBUFFERED=1 "${PYTHON:-python3}" -m pytest -v -rs -p no:cacheprovider "$@" -m "$markers" tests/ \
    --junitxml="$log_dir/junit_$name.xml" 2>&1 | tee "$log_dir/pytest_$name.log"
  local code=${PIPESTATUS[0]}
  [ "$code" -eq 5 ] && code=0
  echo "part $name: pytest exit status $code" | tee -a "$log_dir/pytest_$name.log"
  return "$code"
}

status=0
if [ "$part" = all ] || [ "$part" = gpu ]; then
  run_part gpu "(gpu or ncu or nvcc) and not timing" "${parallel[@]}" || status=$?
fi
if [ "$part" = all ] || [ "$part" = cpu ]; then
  run_part cpu "not (gpu or ncu or nvcc or timing)" "${parallel[@]}" || { code=$?; [ "$status" -eq 0 ] && status=$code; }
fi
if [ "$part" = all ] || [ "$part" = timing ]; then
  run_part timing "timing" || { code=$?; [ "$status" -eq 0 ] && status=$code; }
fi
echo "gpu_suite ($part): exit status $status"
exit "$status"
