#!/bin/bash
# usage: .trial/logrun.sh "<command>"  -- runs it here (CPU machine), appends command, exit code, wall time to TRIAL_LOG.md
cd /work/main/.trials/L2_70_Gemm_Sigmoid_Scaling_ResidualAdd
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience.jsonl
export KERNEL_OPT_CACHE_DIR=$PWD/.trial/kernel_opt_cache
export S=.claude/skills/kernel-opt-skill
start=$(date +%s.%N)
bash -c "$1"
rc=$?
end=$(date +%s.%N)
wall=$(python3 -c "print(f'{$end-$start:.1f}')")
echo "| here (CPU) | \`$1\` | $rc | ${wall}s |" >> TRIAL_LOG.md
exit $rc
