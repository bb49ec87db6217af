#!/usr/bin/env bash
# The loop's GPU steps over the KernelBench demo set (demo/kernelbench), in one call that stops starting
# evaluations before a 530 s deadline: workspace.py init of each missing run folder under
# demo/kernelbench/runs/ (v0 from demo/kernelbench/v0/, 4 iterations, modelnew backend), then
# workspace.py evaluate of the named versions one at a time; prints a table per problem (state,
# solution / eager / best torch.compile medians, speedup vs the best, % of ceiling, bottleneck, first
# advice) and the versions it skipped with the command that resumes them. tools/demo_upkeep/kernelbench_loop.py
# does the work and says more.
#
# Usage (from the repository root, on a GPU machine):
#   bash tools/demo_upkeep/kernelbench_loop.sh OUT_DIR --eager-only          # each Model timed in eager (~2 min)
#   bash tools/demo_upkeep/kernelbench_loop.sh OUT_DIR --versions v0          # init + evaluate v0 of every problem
#   bash tools/demo_upkeep/kernelbench_loop.sh OUT_DIR --versions v1 --only L1_01_rms_norm,L2_03_causal_attention_fp16
#   bash tools/demo_upkeep/kernelbench_loop.sh OUT_DIR --finish               # each run's best benchmarked again + final report
# Afterwards unpack them where they belong: tar xzf OUT_DIR/runs.tar.gz -C demo/kernelbench/runs
# Exit code: 0 every command ran (a failed check is a result); 1 an init, evaluate, final benchmark or
# report failed to run, or --eager-only found a problem under 100 us; 2 bad arguments.
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: bash tools/demo_upkeep/kernelbench_loop.sh OUT_DIR [--versions v0,v1] [--only a,b] [--eager-only]}
shift
mkdir -p "$OUT"
exec "${PYTHON:-python3}" tools/demo_upkeep/kernelbench_loop.py "$OUT" "$@"
