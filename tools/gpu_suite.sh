#!/usr/bin/env bash
# The whole test suite on a GPU machine: CPU tests plus everything marked gpu/nvcc/ncu.
# Usage: tools/gpu_suite.sh [LOG_DIR]   (the device tool: tools/gpu_suite.sh "$OUT")
# Needs only what a CUDA machine with torch, triton, jinja2, tabulate, pyyaml and pytest has;
# the package is imported from the checkout, nothing is installed.
set -u -o pipefail
cd "$(dirname "$0")/.."
log_dir=${1:-out/gpu_suite}
mkdir -p "$log_dir"
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  nvcc --version | tail -n 2
  ncu --version 2>/dev/null | tail -n 1
} >"$log_dir/machine.txt" 2>&1
cat "$log_dir/machine.txt"
parallel=()
if python3 -c 'import xdist' 2>/dev/null; then parallel=(-n 8); fi  # correctness runs only: no timing tests share the GPU
PYTHONUNBUFFERED=1 python3 -m pytest -v -rs -p no:cacheprovider "${parallel[@]}" -m "not timing" tests/ \
  --junitxml="$log_dir/junit.xml" 2>&1 | tee "$log_dir/pytest.log"
status=${PIPESTATUS[0]}
# Tests that assert timings run alone: parallel GPU work would distort them.
PYTHONUNBUFFERED=1 python3 -m pytest -v -rs -p no:cacheprovider -m timing tests/ \
  --junitxml="$log_dir/junit_timing.xml" 2>&1 | tee "$log_dir/pytest_timing.log"
timing_status=${PIPESTATUS[0]}
[ "$timing_status" -ne 0 ] && [ "$timing_status" -ne 5 ] && status=$timing_status
echo "pytest exit status: $status" | tee -a "$log_dir/pytest.log"
exit "$status"
