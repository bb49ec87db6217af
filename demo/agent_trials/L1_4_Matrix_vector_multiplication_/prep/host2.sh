#!/bin/bash
# GPU host call 2 (Finish; v0 reached the roofline target): final benchmark and size sweep of v0; bring out/ back.
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
SK=.claude/skills/kernel-opt-skill
t() { local s=$(date +%s); "$@"; local rc=$?; echo "TIMING rc=$rc wall=$(( $(date +%s)-s ))s :: $*"; return $rc; }
t python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl
export PYTHONPATH=/tmp/site
t python3 $SK/scripts/env_check.py --output-dir out | grep -i "sweep\|env_check:"
t timeout 200 python3 $SK/scripts/benchmark.py out/v0/v0.py --ref out/ref.py --output-dir out 2>&1 | tail -15
t timeout 200 python3 $SK/scripts/ncu_profile.py out/v0/v0.py --ref out/ref.py --output-dir out/sweep --sweep M=256,512,1024,2048 --K=1048576 2>&1 | tail -15
t python3 $SK/scripts/workspace.py status out | tail -5
tar czf $OUT/back2.tgz --exclude='*.ncu-rep' --exclude='build' out
ls -la $OUT
