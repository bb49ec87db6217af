#!/bin/bash
# One GPU-host call: evaluate v1, then v2 and v3 (next -> planned one change -> check -> evaluate),
# then the Finish benchmark if time is left. Every step's exit code and wall time go to $OUT/host_log.txt.
cd "$(dirname "$0")/.."
export KERNEL_OPT_CACHE_DIR=$PWD/.kcache KERNEL_OPT_EXPERIENCE_LOG=$PWD/.kexp/experience.jsonl
S=.claude/skills/kernel-opt-skill/scripts
LOG=${OUT:-/tmp}/host_log.txt
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() {  # step LIMIT_S cmd...
  local lim=$1; shift; local t=$(date +%s)
  timeout --kill-after=5 "$lim" "$@"; local rc=$?
  echo "| $(el) s | \`$*\` | rc=$rc | $(( $(date +%s) - t )) s |" | tee -a "$LOG"
  return $rc
}
STOP=${STOP_AT:-270}
step 160 python $S/workspace.py evaluate out v1
for K in 2 3; do
  [ "$(el)" -lt $(( STOP - 80 )) ] || { echo "| $(el) s | skip v$K: not enough time left |" | tee -a "$LOG"; break; }
  step 20 python $S/workspace.py next out || { echo "| $(el) s | next refused: stop the loop |" | tee -a "$LOG"; break; }
  step 10 python plan/apply.py out v$K || break
  step 10 python $S/hypothesis_check.py out/v$K || break
  step $(( STOP - $(el) )) python $S/workspace.py evaluate out v$K
done
python $S/workspace.py status out | tee -a "$LOG"
BEST=$(python $S/workspace.py status out --json | python -c "import json,sys; print(json.load(sys.stdin)['best'])")
LEFT=$(( STOP - $(el) ))
if [ "$LEFT" -gt 45 ]; then
  if [ "$BEST" != "v0" ] && [ "$LEFT" -gt 120 ]; then AG="--against out/v0/v0.py"; else AG=""; fi
  step $LEFT python $S/benchmark.py out/$BEST/$BEST.py --ref out/ref.py --output-dir out $AG --checked-by out/$BEST/correctness.json
else
  echo "| $(el) s | skip final benchmark: $LEFT s left |" | tee -a "$LOG"
fi
tar czf "$OUT/back.tgz" --exclude='build' --exclude='*.ncu-rep' out .kcache $( [ -d .kexp ] && echo .kexp )
echo "total $(el) s" | tee -a "$LOG"
