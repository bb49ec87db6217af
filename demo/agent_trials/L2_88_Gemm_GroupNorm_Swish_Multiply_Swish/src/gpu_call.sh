#!/bin/bash
# Runs on the GPU host from the trial folder. Usage: bash src/gpu_call.sh STEPS_SCRIPT BUDGET_S
export KERNEL_OPT_CACHE_DIR=$PWD/out/cache KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience.jsonl PYTHONUNBUFFERED=1
export S=.claude/skills/kernel-opt-skill/scripts
T0=$(date +%s)
stamp() { echo "=== $1 rc=$2 t=$(( $(date +%s) - T0 ))s"; }
export -f stamp; export T0
timeout "$2" bash "$1" 2>&1 | tee "$OUT/log.txt"
echo "steps rc=${PIPESTATUS[0]} total=$(( $(date +%s) - T0 ))s" | tee -a "$OUT/log.txt"
rm -rf out/v*/build out/sweep/build
tar czf "$OUT/back.tgz" --exclude='*.ncu-rep' out
ls -la "$OUT"
