#!/bin/bash
# GPU call 1: env_check, evaluate v0, next -> v1 (pre-written change + hypothesis), evaluate v1.
export PYTHONUNBUFFERED=1 KERNEL_OPT_CACHE_DIR=$PWD/.kocache
S=.claude/skills/kernel-opt-skill
t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "### rc=$rc wall=$(echo "$(date +%s.%N) - $s" | bc)s :: $*"; return $rc; }
t python3 $S/scripts/env_check.py --output-dir out
t python3 $S/scripts/workspace.py evaluate out v0
if t python3 $S/scripts/workspace.py next out; then
  cp src/v1.py out/v1/v1.py && cp src/v1_hypothesis.txt out/v1/hypothesis.txt
  t python3 $S/scripts/hypothesis_check.py out/v1
  t python3 $S/scripts/workspace.py evaluate out v1
fi
t python3 $S/scripts/workspace.py status out
