#!/bin/bash
# Usage (on the GPU host, from .trials/L1_25_Swish): PREPS="v1 v2" bash prep/host.sh
# Evaluates the newest pending version, then for each prepared version: next -> copy prep -> evaluate.
# If `next` is refused (budget spent / target reached) it runs the Finish commands status prints.
SK=.claude/skills/kernel-opt-skill
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
L=$OUT/host.log
t() { local s=$(date +%s%N); echo "=== $*" >>$L; "$@" >>$L 2>&1; local rc=$?
      echo "$(date +%T) rc=$rc wall=$(( ($(date +%s%N)-s)/1000000 ))ms :: $*" >> $OUT/steps.txt; return $rc; }
python() { command python3 "$@"; }
finish() {
  python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl >>$L 2>&1 && export PYTHONPATH=/tmp/site
  python $SK/scripts/workspace.py status out > $OUT/status_finish.txt 2>&1
  grep -E '^\s+python \S+/(benchmark|ncu_profile)\.py ' $OUT/status_finish.txt | sed -e 's/#.*//' -e 's/^\s*python /python3 /' > $OUT/finish_cmds.txt
  while read -r -u 3 c; do t timeout ${SWEEP_TIMEOUT:-150} $c </dev/null; done 3< $OUT/finish_cmds.txt
}
t nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
t python $SK/scripts/env_check.py --output-dir out
[ -n "$EVAL_FIRST" ] && t python $SK/scripts/workspace.py evaluate out $EVAL_FIRST
done_finish=0
for v in $PREPS; do
  if t python $SK/scripts/workspace.py next out; then
    cp prep/$v/$v.py out/$v/$v.py && cp prep/$v/hypothesis.txt out/$v/hypothesis.txt
    t python $SK/scripts/workspace.py evaluate out $v
  else finish; done_finish=1; break; fi
done
[ "$done_finish" = 0 ] && [ -n "$FORCE_FINISH" ] && finish_forced
t python $SK/scripts/workspace.py status out
