#!/usr/bin/env bash
# KernelBench's formats on a GPU, end to end: `kernel-opt eval` over reference/kernelbench (four
# H100-sized problems: ReLU, square matmul, GEMM + scale + LeakyReLU, softmax; ModelNew solutions
# built with load_inline or Triton, one of them a TF32 precision downgrade), first under the default
# tolerance rule, then the downgrade alone under --kernelbench-tolerances; then the cheating ModelNews
# of reference/kernelbench/wrong through correctness_check and benchmark. Prints both eval tables and
# a table row -> expected -> got; logs and every record under OUT_DIR. Aims at under 5 minutes on an
# H100 (two load_inline builds, which may outlast the default 120 s without progress, hence --timeout 300;
# one torch.compile mode).
#
# Usage (from the repository root):
#   bash tools/kernelbench_smoke.sh OUT_DIR
# Exit code: 0 when every row got what it expected, 1 otherwise.
set -u

OUT=${1:?usage: bash tools/kernelbench_smoke.sh OUT_DIR}
SCRIPTS=skills/kernel-opt-skill/scripts
KB=reference/kernelbench
mkdir -p "$OUT/logs"
ROWS="$OUT/table.tsv"
: > "$ROWS"
STARTED=$(date +%s)

verdicts() {  # name=verdict[+downgrade] for every entry of an eval.json
  "${PYTHON:-python3}" - "$1" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
print(" ".join(f"{e['name']}={e['verdict']}{'+downgrade' if e['precision_downgrade'] else ''}"
               for e in record["entries"]))
PY
}

row() {  # row NAME EXPECTED GOT
  local verdict="ok"
  [ "$2" = "$3" ] || verdict="MISMATCH"
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$verdict" >> "$ROWS"
  echo "[$verdict] $1: got $3 (expected $2)"
}

# 1. The default rule: the TF32 matmul fails as a precision downgrade, the other three pass and are timed.
"${PYTHON:-python3}" "$SCRIPTS/eval.py" "$KB/problems" "$KB/solutions" --output-dir "$OUT/eval" --compile-modes default \
  --seeds 2 --timeout 300 > "$OUT/logs/eval_default.log" 2> "$OUT/logs/eval_default.progress"
code=$?
cp "$OUT/eval/eval.md" "$OUT/eval_default.md"
cp "$OUT/eval/eval.json" "$OUT/eval_default.json"
cat "$OUT/logs/eval_default.log"
row "eval, default rule" "exit 1: 12_Gemm_Multiply_LeakyReLU=correct 19_ReLU=correct \
1_Square_matrix_multiplication_=incorrect+downgrade 23_Softmax=correct" \
  "exit $code: $(verdicts "$OUT/eval_default.json")"

# 2. KernelBench's 1e-2: the downgrade passes, flagged (same output folder: its baselines are reused).
"${PYTHON:-python3}" "$SCRIPTS/eval.py" "$KB/problems" "$KB/solutions" --output-dir "$OUT/eval" --compile-modes default \
  --seeds 2 --timeout 300 --kernelbench-tolerances --only 1_Square_matrix_multiplication_ \
  > "$OUT/logs/eval_kernelbench.log" 2> "$OUT/logs/eval_kernelbench.progress"
code=$?
cp "$OUT/eval/eval.md" "$OUT/eval_kernelbench.md"
cat "$OUT/logs/eval_kernelbench.log"
row "eval, --kernelbench-tolerances" "exit 0: 1_Square_matrix_multiplication_=correct+downgrade" \
  "exit $code: $(verdicts "$OUT/eval/eval.json")"

# 3. Cheats: released memory returned as the output; an output cached by input pointer.
"${PYTHON:-python3}" "$SCRIPTS/correctness_check.py" "$KB/wrong/19_ReLU_freed_result.py" --ref "$KB/problems/19_ReLU.py" \
  --output-dir "$OUT/wrong/freed_result" --seeds 2 > "$OUT/logs/freed_result.log" 2>&1
row "19_ReLU_freed_result correctness" "exit 1" "exit $?"
"${PYTHON:-python3}" "$SCRIPTS/benchmark.py" "$KB/wrong/23_Softmax_cached_by_pointer.py" --ref "$KB/problems/23_Softmax.py" \
  --output-dir "$OUT/wrong/cached_by_pointer" --baseline none --seeds 2 > "$OUT/logs/cached_by_pointer.log" 2>&1
row "23_Softmax_cached_by_pointer benchmark" "exit 1" "exit $?"

echo
echo "elapsed: $(( $(date +%s) - STARTED )) s"
column -t -s $'\t' "$ROWS"
if grep -q MISMATCH "$ROWS"; then
  exit 1
fi
exit 0
