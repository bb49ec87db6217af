#!/usr/bin/env bash
# The compute-sanitizer corpus on a GPU: every fixture of reference/*/expected.yaml
# with a `sanitize:` field through its plain check and each tool it names, and workspace.py evaluate
# of wrong/smem_race.cu; prints a table fixture -> expected -> got, full logs and records under
# OUT_DIR (tools/sanitizer_corpus.py does the work). Aimed at under 4 minutes on an H100.
#
# Usage (from the repository root):
#   bash tools/sanitizer_corpus.sh OUT_DIR
# Exit code: 0 when every row got what it expected, 1 otherwise, 4 without compute-sanitizer.
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash tools/sanitizer_corpus.sh OUT_DIR}
mkdir -p "$OUT"
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "${PYTHON:-python3}" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  nvcc --version | tail -n 1
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
"${PYTHON:-python3}" tools/sanitizer_corpus.py "$OUT" 2>&1 | tee "$OUT/corpus.log"
exit "${PIPESTATUS[0]}"
