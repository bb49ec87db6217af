#!/bin/bash
# GPU host, call 1: env_check, evaluate v0, next, evaluate v1 (prepared in staging/v1 beforehand)
S=.claude/skills/kernel-opt-skill
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
export KERNEL_OPT_CACHE_DIR=/tmp/kernel-opt-cache
PY=python3
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "TIMING rc=$rc wall_ms=$(( ($(date +%s%N)-s)/1000000 )) :: $*"; return $rc; }
pack() { tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' out; }
t $PY $S/scripts/env_check.py --output-dir out; pack
t $PY $S/scripts/workspace.py evaluate out v0; pack
if t $PY $S/scripts/workspace.py next out; then
  cp staging/v1/v1.py out/v1/v1.py && cp staging/v1/hypothesis.txt out/v1/hypothesis.txt
  t $PY $S/scripts/workspace.py evaluate out v1; pack
fi
t $PY $S/scripts/workspace.py status out
