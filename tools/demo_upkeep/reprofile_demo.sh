#!/usr/bin/env bash
# Re-profile the demo versions profiled before issue 15 (demo/<backend>/<case>/vN/ whose own
# ncu_summary.json predates its classifier: the 44 recorded up to 2026-11-24; tools/demo_upkeep/reprofile_demo.py
# says how it tells) with today's ncu collection and static analysis, for issue 15's
# re-classification. Run on a GPU machine with Nsight Compute,
# nvcc, torch and triton, from anywhere in the checkout:
#   tools/demo_upkeep/reprofile_demo.sh OUT_DIR                       (the device tool: tools/demo_upkeep/reprofile_demo.sh "$OUT")
#   tools/demo_upkeep/reprofile_demo.sh OUT_DIR --dry-run             (the commands, nothing run; no GPU needed)
#   tools/demo_upkeep/reprofile_demo.sh OUT_DIR --only cuda/gemm/v9,triton/attention
# The work is tools/demo_upkeep/reprofile_demo.py's `run`: static analyses in parallel, then one time-boxed
# ncu_profile.py per version in priority order (best versions first); after DEADLINE_S (default
# 450 s) no new profile starts and what is left is listed, so one call ends in under 9 minutes.
# OUT_DIR receives at most 8 files: README.md, run.log, reprofile.tar.gz and reports-N.tar.gz.
# Nothing under demo/ is written; tools/demo_upkeep/apply_reprofile.py brings the archive into demo/ later.
# Exit codes: 0 all ran, 1 some version failed or was skipped, 2 usage, 4 no ncu or no GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tools/demo_upkeep/reprofile_demo.sh OUT_DIR [--dry-run] [--only CASES]}
shift

ncu_bin=$(command -v ncu || true)
for candidate in /opt/nvidia/nsight-compute/2025.3.1/ncu /usr/local/cuda/bin/ncu; do
  if [ -z "$ncu_bin" ] && [ -x "$candidate" ]; then ncu_bin=$candidate; fi
done
ncu_args=()
if [ -n "$ncu_bin" ]; then ncu_args=(--ncu "$ncu_bin"); fi
exec "${PYTHON:-python3}" tools/demo_upkeep/reprofile_demo.py run "$out" "${ncu_args[@]}" \
  --deadline "${DEADLINE_S:-450}" --case-timeout "${CASE_TIMEOUT_S:-75}" "$@"
