#!/bin/bash
# Host call 2: evaluate v2 (prepared here), next, evaluate the prepared v3 (variant chosen by v3's parent),
# then, if time is left, the final benchmark of the best version; bring out/ back.
SK=.claude/skills/kernel-opt-skill
PY=$(command -v python || command -v python3)
export KERNEL_OPT_EXPERIENCE_LOG=$PWD/out/experience_log.jsonl
L=$OUT/host.log
T0=$(date +%s); DEADLINE=${DEADLINE:-165}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
step() { local s=$(date +%s); echo "### $*" >>$L; "$@" >>$L 2>&1; local rc=$?; echo "### rc=$rc wall=$(( $(date +%s) - s ))s :: $*" >>$L; return $rc; }
step timeout $(left) $PY $SK/scripts/workspace.py evaluate out v2
if step $PY $SK/scripts/workspace.py next out; then
  parent=$($PY -c "import json;print(json.load(open('out/v3/version.json'))['parent'])")
  if [ "$parent" = v2 ]; then src=prep/v3_on_v2; else src=prep/v3_on_v1; fi
  cp $src/v3.py out/v3/v3.py && cp $src/hypothesis.txt out/v3/hypothesis.txt && echo "v3 parent=$parent, copied $src" >>$L
  step timeout $(left) $PY $SK/scripts/workspace.py evaluate out v3
fi
B=$($PY $SK/scripts/workspace.py status out --json | $PY -c "import json,sys;print(json.load(sys.stdin)['best'])")
echo "best=$B left=$(left)s" >>$L
if [ $(left) -ge 45 ] && [ "$B" != v0 ]; then
  step timeout $(( $(left) - 3 )) $PY $SK/scripts/benchmark.py out/$B/$B.py --ref out/ref.py --output-dir out --against out/v0/v0.py --compile-modes default
fi
step $PY $SK/scripts/workspace.py status out
tar czf $OUT/back.tgz --exclude='*.ncu-rep' --exclude='build' out
