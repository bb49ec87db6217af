#!/bin/bash
# GPU host, from the trial folder: redo call 1 (its records were lost in transfer), then Finish.
export KERNEL_OPT_CACHE_DIR=/tmp/kcache KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience.jsonl PYTHONUNBUFFERED=1
S=.claude/skills/kernel-opt-skill/scripts
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
stamp() { echo "=== $1 rc=$2 t=$(el)s"; }
{
python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl && export PYTHONPATH=/tmp/site; stamp pip $?
python $S/env_check.py --output-dir out; stamp env_check $?
python $S/workspace.py evaluate out v0; stamp evaluate_v0 $?
python $S/workspace.py next out; stamp next_v1 $?
cp src/v1/v1.py out/v1/v1.py && cp src/v1/hypothesis.txt out/v1/hypothesis.txt
python $S/workspace.py evaluate out v1; stamp evaluate_v1 $?
python $S/workspace.py status out; stamp status $?
python $S/workspace.py next out; stamp next_v2_expect_refusal $?
timeout 150 python $S/benchmark.py out/v1/v1.py --ref out/ref.py --output-dir out --against out/v0/v0.py; rc=$?; stamp final_benchmark_all_modes $rc
if [ $rc -ne 0 ]; then python $S/benchmark.py out/v1/v1.py --ref out/ref.py --output-dir out --against out/v0/v0.py --compile-modes default; stamp final_benchmark_default $?; fi
left=$(( 285 - $(el) )); echo "sweep budget ${left}s"
if [ $left -gt 40 ]; then timeout $left python $S/ncu_profile.py out/v1/v1.py --ref out/ref.py --output-dir out/sweep --sweep batch_size=128,256,512,1024; stamp sweep $?; fi
} 2>&1 | tee "$OUT/log.txt"
rm -rf out/v*/build out/sweep/build
tar czf /tmp/back.tgz --exclude='*.ncu-rep' --exclude='build' out && split -b 12m /tmp/back.tgz "$OUT/part_"
ls -la "$OUT"; du -sh out
