#!/usr/bin/env bash
# KernelBench's level-1 problems at their stock sizes, each with the identity ModelNew
# (`class ModelNew(Model): pass`), through `kernel-opt eval` on a GPU: 23_Softmax (4096 x 393216),
# 36_RMSNorm_, 89_cumsum, 47_Sum_reduction_over_a_dimension, 1_Square_matrix_multiplication_, 40_LayerNorm
# (tools/kernelbench_stock_sizes.py: PROBLEMS), two seeds per shape. Every one must come out correct and timed,
# with no harness error: the memory plan fits the check to the GPU. Then the blame rows: a problem whose
# own reference asks for 1 TiB (exit 4, harness_out_of_memory) and a ModelNew that does (exit 3,
# out_of_memory). Under OUT_DIR: per problem its eval log and wall time (logs/), every record
# (eval/pairs/NAME/correctness.json and benchmark.json carry each step's peak GPU memory under
# "memory"), and summary.md/summary.json (verdict, exit codes, wall time, peak memory, memory plan).
# Eager baseline only (COMPILE=1 adds torch.compile's default mode); problems start while less than
# DEADLINE_S (450) seconds have passed, so the run ends within about 8 minutes on an H200.
#
# Usage (from the repository root, on a GPU machine; no network needed):
#   bash tools/kernelbench_stock_sizes.sh OUT_DIR                      # the copies in reference/kernelbench_stock
#   bash tools/kernelbench_stock_sizes.sh OUT_DIR path/to/KernelBench  # a checkout (KernelBench/level1/)
#   ONLY=23_Softmax,89_cumsum bash tools/kernelbench_stock_sizes.sh OUT_DIR
#   GPUS=all bash tools/kernelbench_stock_sizes.sh OUT_DIR    # one eval spread over every GPU (no DEADLINE_S)
#   LEVELS=1,2 GPUS=all bash tools/kernelbench_stock_sizes.sh OUT_DIR KERNELBENCH_DIR   # every L1 and L2 problem
#     (the eval resumes: run it again with the same OUT_DIR to go on)
# Exit code: 0 when every problem was correct and timed and each blame row exited as expected, 1 otherwise,
# 2 when a problem file is missing.
set -u

OUT=${1:?usage: bash tools/kernelbench_stock_sizes.sh OUT_DIR [KERNELBENCH_DIR]}
KB=${2:-reference/kernelbench_stock}
PY=${PYTHON:-python3}
SCRIPTS=skills/kernel-opt-skill/scripts
DEADLINE_S=${DEADLINE_S:-450}
mkdir -p "$OUT/logs"
STARTED=$(date +%s)

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; free -g | head -2;
  "$PY" -c "import torch; print('torch', torch.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

NAMES=$("$PY" tools/kernelbench_stock_sizes.py prepare "$KB" "$OUT" --levels "${LEVELS:-}") || exit 2
BASELINES=(--baseline eager)
[ "${COMPILE:-0}" = 1 ] && BASELINES=(--baseline eager,compile --compile-modes default)

if [ -n "${GPUS:-}" ]; then  # one eval over every problem, spread over the GPUs (per-pair wall time in eval.json)
  only=${ONLY:-$(echo $NAMES | tr ' ' ',')}
  begin=$(date +%s)
  "$PY" "$SCRIPTS/eval.py" "$OUT/problems" "$OUT/solutions" --output-dir "$OUT/eval" --only "$only" --gpus "$GPUS" \
    --seeds 2 "${BASELINES[@]}" > "$OUT/logs/eval.log" 2> "$OUT/logs/eval.progress"
  printf 'eval --gpus %s\texit %s\t%s s\n' "$GPUS" "$?" "$(( $(date +%s) - begin ))" | tee -a "$OUT/logs/wall.tsv"
  NAMES=""
fi
for name in $NAMES; do
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  elapsed=$(( $(date +%s) - STARTED ))
  if [ "$elapsed" -ge "$DEADLINE_S" ]; then
    echo "$name: not started, $elapsed s had passed (DEADLINE_S=$DEADLINE_S)" | tee -a "$OUT/logs/skipped.txt"
    continue
  fi
  begin=$(date +%s)
  "$PY" "$SCRIPTS/eval.py" "$OUT/problems" "$OUT/solutions" --output-dir "$OUT/eval" --only "$name" \
    --seeds 2 "${BASELINES[@]}" > "$OUT/logs/$name.log" 2> "$OUT/logs/$name.progress"
  code=$?
  printf '%s\texit %s\t%s s\n' "$name" "$code" "$(( $(date +%s) - begin ))" | tee -a "$OUT/logs/wall.tsv"
done

for row in reference_allocates_too_much solution_allocates_too_much; do
  folder="$OUT/blame/$row"
  [ -d "$folder" ] || continue
  "$PY" "$SCRIPTS/correctness_check.py" "$folder/solution.py" --ref "$folder/problem.py" --output-dir "$folder/out" \
    --seeds 1 > "$OUT/logs/blame_$row.log" 2>&1
  printf '%s\texit %s\n' "$row" "$?" | tee -a "$OUT/logs/wall.tsv"
done

echo
echo "elapsed: $(( $(date +%s) - STARTED )) s"
"$PY" tools/kernelbench_stock_sizes.py summary "$OUT"
