#!/usr/bin/env bash
# How long `workspace.py evaluate` takes on a GPU, version after version: the
# fp16 8192x4096 Triton layernorm of reference/layernorm, v0 then v1 (4 warps instead of 8), each
# evaluated as SKILL.md does. Prints every step's wall time and the benchmark's phases; the run
# folder and a table are left under OUT_DIR. The machine's measured ceilings are left as they are
# (a fresh machine measures them once, in v0's `ceilings` step: its time is shown apart).
#
# Usage (from the repository root, on a GPU machine):
#   bash tools/time_evaluate.sh OUT_DIR
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash tools/time_evaluate.sh OUT_DIR}
SCRIPTS=skills/kernel-opt-skill/scripts
RUN="$OUT/layernorm_run"
rm -rf "$RUN"
mkdir -p "$OUT"
"${PYTHON:-python3}" "$SCRIPTS/workspace.py" init "$RUN" --kernel reference/layernorm/good/layernorm.py \
  --ref reference/layernorm/ref.py --iterations 2 --name layernorm --target-percent 100 >"$OUT/time_evaluate.log" 2>&1
timed_evaluate() {  # timed_evaluate VERSION
  local start=$SECONDS
  "${PYTHON:-python3}" "$SCRIPTS/workspace.py" evaluate "$RUN" "$1" >>"$OUT/time_evaluate.log" 2>&1
  local code=$?
  echo "$1: exit $code, $((SECONDS - start)) s of wall time" | tee -a "$OUT/time_evaluate.log"
}
timed_evaluate v0
"${PYTHON:-python3}" "$SCRIPTS/workspace.py" next "$RUN" >>"$OUT/time_evaluate.log" 2>&1
cp reference/layernorm/good/layernorm_4warps.py "$RUN/v1/v1.py"
cat >"$RUN/v1/hypothesis.txt" <<'TXT'
Hypothesis: Run each row with 4 warps instead of 8, so twice as many rows are resident per SM.
Rationale: v0's profile is memory_bound with DRAM the busiest unit and long_scoreboard the top stall.
Expected: achieved occupancy rises (more resident rows), DRAM throughput stays within 5% of v0, and the time changes by under 5%.
TXT
timed_evaluate v1
"${PYTHON:-python3}" - "$RUN" <<'PY' | tee "$OUT/time_evaluate.md"
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
for version in ("v0", "v1"):
    folder = run / version
    if not (folder / "evaluation.json").is_file():
        print(f"{version}: no evaluation.json"); continue
    evaluation = json.loads((folder / "evaluation.json").read_text())
    # evaluate's own wall time: the correctness check and the two sanitizers run side by side, so the
    # steps' times add up to more than the evaluation took
    steps = ", ".join(f"{s['name']} {s['wall_s']:.1f}" for s in evaluation["steps"])
    ceilings = sum(s["wall_s"] for s in evaluation["steps"] if s["name"] == "ceilings")
    print(f"{version}: evaluate took {evaluation['wall_s']:.1f} s ({evaluation['wall_s'] - ceilings:.1f} s without "
          f"the ceilings step); steps (memcheck and racecheck beside correctness): {steps}")
    bench = json.loads((folder / "benchmark.json").read_text()) if (folder / "benchmark.json").is_file() else {}
    print(f"  benchmark phases: {bench.get('phases_s')}")
    print(f"  verdict {bench.get('verdict')}, median {bench.get('solution', {}).get('median_us')}, "
          f"comparison {(bench.get('comparison') or {}).get('verdict')}, "
          f"baselines {[(b['name'], round(b['median_us'], 2), bool(b.get('cached_from'))) for b in bench.get('baselines', []) if b.get('median_us')]}")
    print(f"  notes: {[n for n in bench.get('notes', []) if n.startswith('correctness check')]}")
PY
