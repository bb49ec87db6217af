#!/bin/bash
# host call 2: evaluate v2, next -> v3 (staged variant on whichever is best), evaluate v3, Finish (final benchmark, size sweep)
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience.jsonl KERNEL_OPT_CACHE_DIR=/tmp/kocache
S=.claude/skills/kernel-opt-skill/scripts
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "TIMING rc=$rc wall_ms=$(( ($(date +%s%N)-s)/1000000 )) at=${SECONDS}s :: $*"; return $rc; }
pack() { tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' --exclude='torch_extensions' out; }
t python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl
t python $S/workspace.py evaluate out v2
if t python $S/workspace.py next out; then
  if cmp -s out/v3/v3.py out/v2/v2.py; then V=v3_on_v2; elif cmp -s out/v3/v3.py out/v1/v1.py; then V=v3_on_v1; else V=none; fi
  echo "v3 base variant: $V"
  if [ "$V" != none ]; then
    cp staging/$V.py out/v3/v3.py && cp staging/${V}_hypothesis.txt out/v3/hypothesis.txt
    t python $S/hypothesis_check.py out/v3
    t python $S/workspace.py evaluate out v3
  fi
fi
t python $S/workspace.py status out
pack
B=$(python $S/workspace.py status out --json | python -c "import json,sys; print(json.load(sys.stdin)['best'])")
echo "best=$B"
if [ "$B" = v0 ]; then AG=""; else AG="--against out/v0/v0.py"; fi
t python $S/benchmark.py out/$B/$B.py --ref out/ref.py --output-dir out $AG
pack
LEFT=$(( 335 - SECONDS ))
echo "seconds left for the sweep: $LEFT"
if [ $LEFT -gt 60 ]; then
  PYTHONPATH=/tmp/site t timeout $LEFT python $S/ncu_profile.py out/$B/$B.py --ref out/ref.py --output-dir out/sweep --sweep batch_size=128,256,512,1024
fi
t python $S/workspace.py status out
pack
