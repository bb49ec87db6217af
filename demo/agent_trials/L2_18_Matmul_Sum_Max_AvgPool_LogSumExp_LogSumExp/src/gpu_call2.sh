#!/bin/bash
# GPU call 2: re-time v0 under ref.py's flops(), then v1..v3 (each: next -> pre-written change + hypothesis
# -> evaluate, only when `next` copied the version the change was written against), then the final benchmark.
export PYTHONUNBUFFERED=1 KERNEL_OPT_CACHE_DIR=$PWD/.kocache
S=.claude/skills/kernel-opt-skill
t() { local s=$(date +%s); "$@"; local rc=$?; echo "### rc=$rc wall=$(( $(date +%s) - s ))s :: $*"; return $rc; }
t python3 $S/scripts/benchmark.py out/v0/v0.py --ref out/ref.py --output-dir out/v0 --target-percent 90 \
   --baseline eager,compile --compile-modes default --seeds 1 --reference-cache out/reference_cache.json
prev=v0
for v in v1 v2 v3; do
  t python3 $S/scripts/workspace.py next out || break
  parent=$(python3 -c "import json;print(json.load(open('out/$v/version.json'))['parent'])")
  if [ "$parent" != "$prev" ]; then echo "### $v was copied from $parent, not $prev: pre-written change does not apply, stop"; break; fi
  cp src/$v.py out/$v/$v.py && cp src/${v}_hypothesis.txt out/$v/hypothesis.txt
  t python3 $S/scripts/hypothesis_check.py out/$v
  t python3 $S/scripts/workspace.py evaluate out $v --no-sanitize
  prev=$v
done
t python3 $S/scripts/workspace.py status out
best=$(python3 $S/scripts/workspace.py status out --json 2>/dev/null | python3 -c "import json,sys;d=json.load(sys.stdin);print(d.get('best') or '')" 2>/dev/null)
echo "### best=$best"
if [ -n "$best" ] && [ "$best" != v0 ]; then
  t python3 $S/scripts/benchmark.py out/$best/$best.py --ref out/ref.py --output-dir out --against out/v0/v0.py \
     --compile-modes default --checked-by out/$best/correctness.json --reference-cache out/reference_cache.json
fi
if [ -n "$best" ] && [ "$best" != v0 ]; then
  t python3 $S/scripts/correctness_check.py out/$best/$best.py --ref out/ref.py --output-dir out/$best --sanitize memcheck
fi
