#!/bin/bash
# GPU host, call 2: evaluate v2 (prepared), next, evaluate v3 (prepared; the variant matching the best),
# then Finish's GPU steps: final benchmark and (time permitting) the size sweep.
S=.claude/skills/kernel-opt-skill
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
export KERNEL_OPT_CACHE_DIR=/tmp/kernel-opt-cache
PY=python3
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "TIMING rc=$rc wall_ms=$(( ($(date +%s%N)-s)/1000000 )) :: $*"; return $rc; }
pack() { tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' out; }
t $PY $S/scripts/env_check.py --output-dir out > /tmp/env.log 2>&1; tail -3 /tmp/env.log
if t $PY $S/scripts/workspace.py next out; then
  cp staging/v2/v2.py out/v2/v2.py && cp staging/v2/hypothesis.txt out/v2/hypothesis.txt
  t $PY $S/scripts/workspace.py evaluate out v2; pack
fi
if t $PY $S/scripts/workspace.py next out; then
  if cmp -s out/v3/v3.py out/v2/v2.py; then V3=staging/v3; else V3=staging/v3_from_v1; fi
  echo "v3 variant: $V3"
  cp $V3/v3.py out/v3/v3.py && cp $V3/hypothesis.txt out/v3/hypothesis.txt
  t $PY $S/scripts/workspace.py evaluate out v3; pack
fi
t $PY $S/scripts/workspace.py status out
BEST=$($PY $S/scripts/workspace.py status out --json | $PY -c "import json,sys; print(json.load(sys.stdin)['best'])")
echo "best: $BEST"
AGAINST=""; [ "$BEST" != "v0" ] && AGAINST="--against out/v0/v0.py"
t $PY $S/scripts/benchmark.py out/$BEST/$BEST.py --ref out/ref.py --output-dir out $AGAINST > /tmp/bench.log 2>&1; tail -25 /tmp/bench.log; pack
python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl && export PYTHONPATH=/tmp/site
t timeout 110 $PY $S/scripts/ncu_profile.py out/$BEST/$BEST.py --ref out/ref.py --output-dir out/sweep --sweep batch_size=16,32,64,128 --in_channels=64 --height=128 --width=128 > /tmp/sweep.log 2>&1; tail -15 /tmp/sweep.log; pack
