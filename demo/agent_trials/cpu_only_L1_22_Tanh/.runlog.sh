#!/bin/bash
# usage: runlog.sh "<command>"  -- runs in project folder, appends to TRIAL_LOG.md
cd /work/main/.trials/L1_22_Tanh
n=$(grep -c '^| [0-9]' TRIAL_LOG.md); n=$((n+1))
start=$(date +%s.%N)
bash -c "$1"
rc=$?
end=$(date +%s.%N)
wall=$(python3 -c "print(f'{$end-$start:.1f} s')")
cmd=$(printf '%s' "$1" | sed 's/|/\\|/g')
echo "| $n | here | \`$cmd\` | $rc | $wall |" >> TRIAL_LOG.md
echo "== rc=$rc wall=$wall"
