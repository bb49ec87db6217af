#!/bin/bash
# host call 1: env check, evaluate v0, next, evaluate the prepared v1
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience.jsonl KERNEL_OPT_CACHE_DIR=/tmp/kocache
S=.claude/skills/kernel-opt-skill/scripts
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "TIMING rc=$rc wall_ms=$(( ($(date +%s%N)-s)/1000000 )) :: $*"; return $rc; }
t python $S/env_check.py --output-dir out
t python $S/workspace.py evaluate out v0
if t python $S/workspace.py next out; then
  cp staging/v1.py out/v1/v1.py && cp staging/v1_hypothesis.txt out/v1/hypothesis.txt
  t python $S/hypothesis_check.py out/v1
  t python $S/workspace.py evaluate out v1
fi
t python $S/workspace.py status out
tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' --exclude='torch_extensions' out
