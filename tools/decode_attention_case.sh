#!/usr/bin/env bash
# The decode-attention problem on a GPU (reference/decode_attention): every fixture's verdict at the default
# bfloat16 size (B=8, HQ=32, HKV=8, L=16384, D=128), then the skill's loop from the one-pass kernel: v0 one
# program per (batch, KV head), evaluated; v1 the cache split along its length, evaluated beside it. Prints each
# fixture's exit code against the expected one and each version's label, time, % of ceiling and first
# suggestions; the run folder and every log land under OUT_DIR.
#
# Usage (from the repository root, on a GPU machine):
#   bash tools/decode_attention_case.sh OUT_DIR
# Exit code: 0 when every fixture got its expected exit code and every version evaluated, 1 otherwise.
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash tools/decode_attention_case.sh OUT_DIR}
SCRIPTS=skills/kernel-opt-skill/scripts
PROBLEM=reference/decode_attention
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT/fixtures"
status=0
fixture() {  # fixture FILE EXPECTED_EXIT
  local name
  name=$(basename "$1" .py)
  local start=$SECONDS
  "$PYTHON" "$SCRIPTS/correctness_check.py" "$PROBLEM/$1" --ref "$PROBLEM/ref.py" \
    --output-dir "$OUT/fixtures/$name" >"$OUT/fixtures/$name.log" 2>&1
  local code=$?
  local mark=ok
  [ "$code" -eq "$2" ] || { mark=UNEXPECTED; status=1; }
  printf '%-40s expected %s got %s (%s s) %s\n' "$1" "$2" "$code" "$((SECONDS - start))" "$mark"
  head -n 2 "$OUT/fixtures/$name.log" | cut -c1-300
}
fixture good/decode_attention.py 0
fixture good/decode_attention_split.py 0
fixture good/decode_attention_one_pass.py 0
fixture wrong/merge_without_rescale.py 1
fixture wrong/last_split_dropped.py 1
fixture wrong/kv_head_modulo.py 1

RUN="$OUT/decode_run"
rm -rf "$RUN"
"$PYTHON" "$SCRIPTS/workspace.py" init "$RUN" --kernel "$PROBLEM/good/decode_attention_one_pass.py" \
  --ref "$PROBLEM/ref.py" --iterations 2 --name decode_attention >"$OUT/loop.log" 2>&1 || status=1
evaluate() {  # evaluate VERSION
  local start=$SECONDS
  "$PYTHON" "$SCRIPTS/workspace.py" evaluate "$RUN" "$1" >>"$OUT/loop.log" 2>&1
  local code=$?
  [ "$code" -eq 0 ] || status=1
  echo "$1: evaluate exit $code, $((SECONDS - start)) s"
}
evaluate v0
"$PYTHON" "$SCRIPTS/workspace.py" next "$RUN" >>"$OUT/loop.log" 2>&1 || status=1
cp "$PROBLEM/good/decode_attention_split.py" "$RUN/v1/v1.py"
cat >"$RUN/v1/hypothesis.txt" <<'TXT'
Hypothesis: Split the KV length so there are about four programs per SM, and merge the splits in a second pass.
Rationale: v0 runs one program per (batch, KV head), 64 for the GPU's SMs: the profile says the grid cannot fill the GPU, and DRAM throughput is far from its peak.
Expected: time drops at least 3x against v0; the small-grid finding is gone and DRAM throughput is near the copy roof.
TXT
evaluate v1
"$PYTHON" "$SCRIPTS/workspace.py" next "$RUN" >>"$OUT/loop.log" 2>&1 || status=1
cp "$PROBLEM/good/decode_attention.py" "$RUN/v2/v2.py"
cat >"$RUN/v2/hypothesis.txt" <<'TXT'
Hypothesis: Compute q . k and p . v as tl.dot on the tensor cores, the group's query heads padded to 16 rows, instead of broadcast products reduced across threads.
Rationale: v1 is memory_bound on L1/shared with mio_throttle the top stall: its cross-thread reductions go through shared memory, not DRAM.
Expected: time drops at least 3x against v1; L1/shared throughput falls and DRAM throughput rises toward the copy roof.
TXT
evaluate v2
"$PYTHON" - "$RUN" <<'PY' | tee "$OUT/decode_attention_case.md"
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
for version in ("v0", "v1", "v2"):
    folder = run / version
    bench = json.loads((folder / "benchmark.json").read_text()) if (folder / "benchmark.json").is_file() else {}
    baselines = [(b["name"], round(b["median_us"], 2)) for b in bench.get("baselines", []) if b.get("median_us")]
    print(f"{version}: verdict {bench.get('verdict')}, median {bench.get('solution', {}).get('median_us')} us, "
          f"{bench.get('percent_of_ceiling')}% of ceiling ({(bench.get('roofline') or {}).get('basis')}), "
          f"baselines {baselines}")
PY
"$PYTHON" "$SCRIPTS/workspace.py" status "$RUN" >"$OUT/status.txt" 2>&1
tail -n 40 "$OUT/status.txt"
exit "$status"
