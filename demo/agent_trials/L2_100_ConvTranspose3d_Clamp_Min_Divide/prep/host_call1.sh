#!/bin/bash
# Host call 1: env check, evaluate v0, next, evaluate the prepared v1, bring out/ back.
SK=.claude/skills/kernel-opt-skill
PY=$(command -v python || command -v python3)
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
L=$OUT/host.log
step() { local s=$(date +%s.%N); echo "### $*" >>$L; "$@" >>$L 2>&1; local rc=$?; echo "### rc=$rc wall=$(echo "$(date +%s.%N) - $s" | bc)s :: $*" >>$L; return $rc; }
step nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
step $PY $SK/scripts/env_check.py --output-dir out
step timeout 220 $PY $SK/scripts/workspace.py evaluate out v0
step $PY $SK/scripts/workspace.py next out
cp prep/v1/v1.py out/v1/v1.py && cp prep/v1/hypothesis.txt out/v1/hypothesis.txt && echo "copied prepared v1" >>$L
step timeout 170 $PY $SK/scripts/workspace.py evaluate out v1
step $PY $SK/scripts/workspace.py status out
tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' out
ls -la $OUT >>$L
