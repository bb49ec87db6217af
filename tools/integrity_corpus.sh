#!/usr/bin/env bash
# The adversarial corpus on a GPU. Prints a table fixture -> step -> expected -> got;
# full logs and every record under OUT_DIR. Estimated at 8-10 minutes on an H100 (torch 2.11,
# triton 3.6, nvcc 13.0; the first version of this script took about 6): the correctness rows
# run four at a time (the launch check's verdicts do not depend on the GPU being idle; each
# process pays ~6.5 s to start CUPTI), the benchmark and evaluate rows one at a time (they time).
#   item 5: the IEEE-fp32 GEMM at K=4096 and its TF32/bf16 twins (correctness_check);
#   items 2, 1: memoized outputs against the rotating input pool, honest controls, and a ref.py
#     that overstates its bytes (benchmark.py must call that invalid);
#   items 3, 4: what a checked call launched and on which streams (side streams, joined or not,
#     no kernel at all, library-only calls; the demos' best versions as honest controls), and
#     `workspace.py evaluate` failing the memoizing exploit whose ncu profile saw no kernel;
#   item 8: timer tampering and lazy outputs (the tampering guard), precision downgrades;
#   KernelBench problems at KernelBench's stock sizes (reference/kernelbench_checks): a LayerNorm ModelNew
#     that never applies weight and bias (level1/40_LayerNorm, 16 x 64 x 256 x 256) and a GEMM epilogue
#     that never adds its zero bias (1024 x 8192 x 8192) fail the re-drawn weights check; a softmax that
#     writes zeros and one whose denominator sums only the first 256 columns (level1/23_Softmax's 393216
#     columns) fail under --kernelbench-tolerances (outputs too small for 1e-2: the reference-error rule
#     judges), each beside its honest control. Those softmax rows take 512 of 23_Softmax's 4096 rows
#     (805 MB per tensor) as they run four at a time; the two wrong ones run again at the full 4096
#     rows (6.4 GB per tensor) one at a time after them (SKIP_KB_STOCK=1 leaves those two out).
#
# Usage (from the repository root):
#   bash tools/integrity_corpus.sh OUT_DIR
# Exit code: 0 when every row got what it expected, 1 otherwise.
set -u

OUT=${1:?usage: bash tools/integrity_corpus.sh OUT_DIR}
SCRIPTS=skills/kernel-opt-skill/scripts
VECTOR_ADD=reference/vector_add
MATMUL=reference/matmul
SOFTMAX=reference/softmax
KB_CHECKS=reference/kernelbench_checks
PARALLEL_CHECKS=4
mkdir -p "$OUT/logs" "$OUT/runs" "$OUT/refs"
export KERNEL_OPT_CACHE_DIR="$OUT/cache"  # no measured ceilings: the floor check uses the datasheet
ROWS="$OUT/table.tsv"
: > "$ROWS"
ROW=0

detail() {  # the verdict and the evidence from a record: detail correctness|benchmark|evaluate DIR
  "${PYTHON:-python3}" - "$1" "$2" <<'PY'
import json, sys
from pathlib import Path
kind, folder = sys.argv[1], Path(sys.argv[2])
path = folder / {"evaluate": "v0/evaluation.json"}.get(kind, f"{kind}.json")
if not path.is_file():
    print("no record"); sys.exit()
record = json.loads(path.read_text())

def launches_text(launches):
    if not launches:
        return ""
    if not launches.get("profiled"):
        return "; launches not profiled"
    text = f"; own kernels {launches.get('own_kernels')}, library {launches.get('library_kernels')}"
    problems = launches.get("problems") or []
    return text + (f"; {problems[0][:90]}" if problems else "")

if kind == "correctness":
    outputs = [o for case in record.get("cases") or [] for o in case["outputs"]]
    worst = max(outputs, key=lambda o: o.get("solution_error") or 0, default={})
    text = record.get("verdict", "?")
    if worst.get("solution_error") is not None:
        text += (f"; worst error {worst['solution_error']:.3g} vs allowed {worst['allowed_error']:.3g} "
                 f"(reference {worst['reference_error']:.3g}), {worst['mismatches']} elements off")
    if any(o.get("tolerance_cannot_judge") for o in outputs):
        text += "; judged by the reference-error rule (the tolerance in force cannot judge)"
    if record.get("verdict") == "fail" and outputs and all(o.get("kernelbench_would_pass") for o in outputs):
        text += "; KernelBench's rule would pass it"
    redrawn = record.get("redrawn_weights") or {}
    if redrawn.get("ran"):
        off = sorted({item["key"] for item in redrawn.get("alone") or []})
        text += f"; re-drawn {', '.join(redrawn.get('redrawn') or [])}: " + (f"does not follow {', '.join(off)}"
                                                                              if off else "followed")
    if record.get("error"):
        text += f"; {record['error'].get('kind')}: {record['error'].get('message', '')[:90]}"
    print(text + launches_text(record.get("launches")))
elif kind == "benchmark":
    median = (record.get("solution") or {}).get("median_us")
    checks = record.get("post_timing_check") or {}
    floor = (record.get("roofline") or {}).get("physical_floor") or {}
    text = f"{record.get('verdict')}; median {median:.2f} us" if median else str(record.get("verdict"))
    if floor:
        text += f"; floor {floor['floor_us']:.2f} us ({floor['bound']}){' BEATEN' if floor.get('beaten') else ''}"
    failed = [name for name, check in checks.items() if not check.get("passed")]
    text += f"; timed outputs wrong in: {', '.join(failed)}" if failed else ""
    cause = next((w for w in record.get("warnings") or [] if w.startswith("the outputs of the timed calls")), "")
    text += f"; {cause.split(': ', 1)[-1][:90]}" if cause else ""
    if record.get("error"):
        text += f"; {record['error'].get('kind')}: {record['error'].get('message', '')[:90]}"
    print(text + launches_text((record.get("correctness") or {}).get("launches")))
else:
    steps = {step["name"]: step for step in record.get("steps") or []}
    profile = steps.get("profile") or {}
    print(f"state {record.get('state')}; benchmark {(steps.get('benchmark') or {}).get('status')}; "
          f"profile {profile.get('status')}: {profile.get('summary', '')[:110]}")
PY
}

record_row() {  # record_row INDEX NAME STEP EXPECTED CODE DIR
  local verdict="ok"
  [ "$5" = "$4" ] || verdict="MISMATCH"
  printf '%03d\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "exit $4" "exit $5: $(detail "$3" "$6")" "$verdict" >> "$ROWS"
  echo "[$verdict] $2 $3: exit $5 (expected $4)"
}

run_step() {  # run_step NAME STEP EXPECTED_EXIT SOLUTION REF [ARGS...]: one row, in the foreground
  local name=$1 step=$2 expected=$3 solution=$4 ref=$5
  shift 5
  ROW=$((ROW + 1))
  local dir="$OUT/runs/$name/$step" script=correctness_check.py limit=240
  if [ "$step" = benchmark ]; then
    script=benchmark.py
    limit=300
    set -- --baseline none --seeds 1 "$@"
  fi
  timeout "$limit" "${PYTHON:-python3}" "$SCRIPTS/$script" "$solution" --ref "$ref" --output-dir "$dir" "$@" \
    > "$OUT/logs/$name.$step.log" 2>&1
  record_row "$ROW" "$name" "$step" "$expected" "$?" "$dir"
}

check_in_background() {  # the same as run_step NAME correctness ..., at most PARALLEL_CHECKS at a time
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL_CHECKS" ]; do sleep 1; done
  run_step "$@" &
  ROW=$((ROW + 1))  # the subshell's increment is lost: keep the numbering here
}

evaluate_step() {  # evaluate_step NAME EXPECTED_EXIT SOLUTION REF [DIMS...]: workspace init + evaluate v0
  local name=$1 expected=$2 solution=$3 ref=$4
  shift 4
  ROW=$((ROW + 1))
  local dir="$OUT/runs/$name/evaluate"
  rm -rf "$dir"
  "${PYTHON:-python3}" "$SCRIPTS/workspace.py" init "$dir" --kernel "$solution" --ref "$ref" --iterations 0 "$@" \
    > "$OUT/logs/$name.evaluate.log" 2>&1
  timeout 400 "${PYTHON:-python3}" "$SCRIPTS/workspace.py" evaluate "$dir" v0 --baseline none >> "$OUT/logs/$name.evaluate.log" 2>&1
  record_row "$ROW" "$name" evaluate "$expected" "$?" "$dir"
}

# Refs varied for the run: TF32 allowed; a bytes() ten times the real traffic.
cp "$MATMUL/ref.py" "$OUT/refs/matmul_allow_tf32.py"
printf '\nallow_tf32 = True\n' >> "$OUT/refs/matmul_allow_tf32.py"
mkdir -p "$OUT/refs/vector_add_overstated"
sed 's/return 3 \* n \* torch.empty/return 30 * n * torch.empty/' "$VECTOR_ADD/ref.py" \
  > "$OUT/refs/vector_add_overstated/ref.py"

# --- correctness_check rows, four at a time -------------------------------------------------------
# Item 5: tolerances that follow the reference's own rounding (256 x 256 outputs, K = 4096).
check_in_background matmul_ieee correctness 0 "$MATMUL/good/matmul_ieee.py" "$MATMUL/ref.py"
check_in_background matmul_tf32_inputs correctness 1 "$MATMUL/wrong/matmul_tf32_inputs.py" "$MATMUL/ref.py"
check_in_background matmul_bf16_inputs correctness 1 "$MATMUL/wrong/matmul_bf16_inputs.py" "$MATMUL/ref.py"
check_in_background matmul_tf32_dot correctness 1 "$MATMUL/wrong/matmul_tf32.py" "$MATMUL/ref.py"
check_in_background matmul_one_element correctness 1 "$MATMUL/wrong/one_element.py" "$MATMUL/ref.py"
check_in_background matmul_tf32_inputs_allowed correctness 0 "$MATMUL/wrong/matmul_tf32_inputs.py" \
  "$OUT/refs/matmul_allow_tf32.py"
check_in_background matmul_tf32_dot_allowed correctness 0 "$MATMUL/wrong/matmul_tf32.py" \
  "$OUT/refs/matmul_allow_tf32.py"
check_in_background matmul_bf16_inputs_allowed correctness 1 "$MATMUL/wrong/matmul_bf16_inputs.py" \
  "$OUT/refs/matmul_allow_tf32.py"
# Item 8: precision downgrades of other kinds, and TF32 switched on by the solution (tampering, 3).
check_in_background matmul_fp16_accumulator correctness 1 "$MATMUL/wrong/matmul_fp16_accumulator.py" "$MATMUL/ref.py"
check_in_background torch_bf16_matmul correctness 1 "$MATMUL/wrong/torch_bf16_matmul.py" "$MATMUL/ref.py"
check_in_background softmax_half_intermediate correctness 1 "$SOFTMAX/wrong/half_intermediate.py" "$SOFTMAX/ref.py"
check_in_background enables_tf32 correctness 3 "$MATMUL/wrong/enables_tf32.py" "$MATMUL/ref.py"
check_in_background calls_torch_matmul correctness 0 "$MATMUL/wrong/calls_torch_matmul.py" "$MATMUL/ref.py"
# Items 3 and 4: kernels and streams (a passing row's record lists its kernels; see the own/library counts).
for row in "good/side_stream_joined.cu 0" "good/side_stream_joined.py 0" "good/legacy_default_stream.cu 0" \
           "wrong/side_stream.cu 1" "wrong/blocking_side_stream.cu 1" "wrong/side_stream.py 1" \
           "wrong/host_compute.py 1" "wrong/host_compute.cu 1" "wrong/calls_torch.py 0" \
           "wrong/tamper_elapsed_time.py 3" "wrong/tamper_perf_counter.py 3" "wrong/lazy_synchronize.py 3" \
           "wrong/lazy_torch_function_mode.py 3" "wrong/tamper_after_warmup.py 0"; do
  set -- $row
  check_in_background "$(basename "$1" | tr . _)" correctness "$2" "$VECTOR_ADD/$1" "$VECTOR_ADD/ref.py"
done
# KernelBench problems at KernelBench's stock sizes: weights a kernel ignores, and outputs too small for atol = 1e-2.
check_in_background kb_layer_norm correctness 0 "$KB_CHECKS/solutions/L1_layer_norm.py" \
  "$KB_CHECKS/problems/L1_layer_norm.py"
check_in_background kb_layer_norm_ignores_weights correctness 1 "$KB_CHECKS/wrong/L1_layer_norm_ignores_weights.py" \
  "$KB_CHECKS/problems/L1_layer_norm.py" --kernelbench-tolerances
check_in_background kb_linear_zero_bias correctness 0 "$KB_CHECKS/contract/L2_linear_zero_bias_relu.py" \
  "$KB_CHECKS/problems/L2_linear_zero_bias_relu.py"
check_in_background kb_linear_ignores_bias correctness 1 "$KB_CHECKS/wrong/L2_linear_zero_bias_relu_ignores_bias.py" \
  "$KB_CHECKS/problems/L2_linear_zero_bias_relu.py" --kernelbench-tolerances
KB_SOFTMAX_ROWS=--batch_size=512  # 23_Softmax's 393216 columns, 512 of its 4096 rows beside other rows
check_in_background kb_softmax_wide correctness 0 "$KB_CHECKS/solutions/L1_softmax_wide.py" \
  "$KB_CHECKS/problems/L1_softmax_wide.py" --kernelbench-tolerances "$KB_SOFTMAX_ROWS"
check_in_background kb_softmax_zeros correctness 1 "$KB_CHECKS/wrong/L1_softmax_wide_zeros.py" \
  "$KB_CHECKS/problems/L1_softmax_wide.py" --kernelbench-tolerances "$KB_SOFTMAX_ROWS"
check_in_background kb_softmax_first_chunk correctness 1 "$KB_CHECKS/wrong/L1_softmax_wide_first_chunk.py" \
  "$KB_CHECKS/problems/L1_softmax_wide.py" --kernelbench-tolerances "$KB_SOFTMAX_ROWS"
# Honest kernels of every kind the demos hold must pass the launch check: each demo case's best version
# (CUDA with TMA/wgmma on sm_90a, Triton), at the run's own shapes.
check_in_background demo_cuda_gemm_v10 correctness 0 demo/cuda/gemm/v10/v10.cu demo/cuda/gemm/ref.py \
  --arch sm_90a --M=4096 --N=4096 --K=4096
check_in_background demo_cuda_attention_v8 correctness 0 demo/cuda/attention/v8/v8.cu demo/cuda/attention/ref.py \
  --arch sm_90a --B=8 --H=16 --S=2048 --D=64
check_in_background demo_triton_attention_v2 correctness 0 demo/triton/attention/v2/v2.py \
  demo/triton/attention/ref.py --B=8 --H=16 --S=2048 --D=64
check_in_background demo_triton_gemm_v2 correctness 0 demo/triton/gemm/v2/v2.py demo/triton/gemm/ref.py \
  --M=4096 --N=4096 --K=4096
# Items 2 and 1: the memoizing fixtures pass correctness_check by design (new tensors every case).
for fixture in good/vector_add.py good/vector_add.cu wrong/memoized_by_pointer.py wrong/memoized_by_version.py \
               wrong/memoized_by_contents.cu wrong/stale_after_warmup.py; do
  check_in_background "$(basename "$fixture" | tr . _)" correctness 0 "$VECTOR_ADD/$fixture" "$VECTOR_ADD/ref.py"
done
wait

# --- level1/23_Softmax's own 4096 x 393216 (6.4 GB per tensor), one row at a time: the memory plan fits the
# check to the GPU's free memory, which rows running beside it would take. The two false passes, one seed each.
if [ "${SKIP_KB_STOCK:-0}" != 1 ]; then
  run_step kb_softmax_zeros_stock correctness 1 "$KB_CHECKS/wrong/L1_softmax_wide_zeros.py" \
    "$KB_CHECKS/problems/L1_softmax_wide.py" --kernelbench-tolerances --seeds 1
  run_step kb_softmax_first_chunk_stock correctness 1 "$KB_CHECKS/wrong/L1_softmax_wide_first_chunk.py" \
    "$KB_CHECKS/problems/L1_softmax_wide.py" --kernelbench-tolerances --seeds 1
fi

# --- benchmark rows, one at a time --------------------------------------------------------------------
for fixture in good/vector_add.py good/vector_add.cu wrong/memoized_by_pointer.py wrong/memoized_by_version.py \
               wrong/memoized_by_contents.cu wrong/stale_after_warmup.py wrong/calls_torch.py \
               wrong/tamper_after_warmup.py wrong/side_stream.cu; do
  case "$fixture" in
    wrong/memoized_by_pointer.py|wrong/stale_after_warmup.py|wrong/side_stream.cu) bench_expected=1 ;;  # incorrect
    wrong/tamper_after_warmup.py) bench_expected=3 ;;  # tampering, found by the benchmark child
    *) bench_expected=0 ;;
  esac
  run_step "$(basename "$fixture" | tr . _)" benchmark "$bench_expected" "$VECTOR_ADD/$fixture" "$VECTOR_ADD/ref.py"
done
run_step vector_add_bytes_overstated benchmark 1 "$VECTOR_ADD/good/vector_add.cu" \
  "$OUT/refs/vector_add_overstated/ref.py" --n=67108864

# --- workspace.py evaluate: ncu profiles the memoizer's calls on repeated inputs, which launch nothing -------
evaluate_step memoized_by_version_py 1 "$VECTOR_ADD/wrong/memoized_by_version.py" "$VECTOR_ADD/ref.py"

echo
"${PYTHON:-python3}" - "$ROWS" <<'PY'
import sys
from tabulate import tabulate
rows = sorted(line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip())
rows = [row[1:] for row in rows]  # ordered by the script's row numbers, not by finishing time
print(tabulate(rows, headers=["fixture", "step", "expected", "got", "result"], tablefmt="github"))
mismatches = sum(row[-1] != "ok" for row in rows)
print(f"\n{len(rows) - mismatches} of {len(rows)} rows as expected")
PY
! grep -q "MISMATCH" "$ROWS"
