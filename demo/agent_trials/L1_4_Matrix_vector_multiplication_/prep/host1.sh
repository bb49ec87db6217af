#!/bin/bash
# GPU host call 1: environment, evaluate v0, next, evaluate the prepared v1; bring out/ back.
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
SK=.claude/skills/kernel-opt-skill
t() { local s=$(date +%s); "$@"; local rc=$?; echo "TIMING rc=$rc wall=$(( $(date +%s)-s ))s :: $*"; return $rc; }
t nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
t python3 $SK/scripts/env_check.py --output-dir out
t timeout 240 python3 $SK/scripts/workspace.py evaluate out v0 --timeout 200
if [ -f out/v0/benchmark.json ]; then
  t python3 $SK/scripts/workspace.py next out && cp prep/v1.py out/v1/v1.py && cp prep/v1_hypothesis.txt out/v1/hypothesis.txt \
   && t timeout 170 python3 $SK/scripts/workspace.py evaluate out v1 --timeout 150
fi
t python3 $SK/scripts/workspace.py status out
tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' out
ls -la $OUT
