#!/usr/bin/env bash
# The size sweep on a GPU machine, in one go (a few minutes; not timed yet):
# env_check's size_sweep row, the sweep's tests (the GPU ones through the real nsight-python and
# ncu; the CPU ones, two of which run nsight-python 0.9.6's own code only where it is installed),
# then tools/run_example.py, whose softmax examples are swept (N = 1024 ... 8192, D = 4096) and
# whose final reports must embed the sweep. Prints a table example -> sweep verdict -> per-size
# times -> embedded; logs, records and each sweep's files (OUT_DIR/sweeps/) under OUT_DIR.
# Needs nsight-python 0.9.6 and its dependencies importable, e.g.
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#
# Usage (from the repository root):
#   bash tools/sweep_gpu.sh OUT_DIR
# Exit code: 0 when every check held, 1 otherwise.
set -u -o pipefail

OUT=${1:?usage: bash tools/sweep_gpu.sh OUT_DIR}
SCRIPTS=skills/kernel-opt-skill/scripts
mkdir -p "$OUT/logs"
status=0
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  "${PYTHON:-python3}" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  ncu --version 2>/dev/null | tail -n 1
  "${PYTHON:-python3}" -c 'import importlib.metadata as m; print("nsight-python", m.version("nsight-python"), "ncu-report", m.version("ncu-report"))'
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

"${PYTHON:-python3}" "$SCRIPTS/env_check.py" --output-dir "$OUT/env" --json > "$OUT/logs/env_check.json" 2> "$OUT/logs/env_check.err"
"${PYTHON:-python3}" - "$OUT/logs/env_check.json" <<'PY' || status=1
import json, sys
report = json.load(open(sys.argv[1]))
row = next(item for item in report["capabilities"] if item["step"] == "size_sweep")
print(f"env_check size_sweep: can_run={row['can_run']}: {row['reason']}")
sys.exit(0 if row["can_run"] and "0.9.6 (the pinned version)" in row["reason"] else 1)
PY

PYTHONUNBUFFERED=1 "${PYTHON:-python3}" -m pytest -v -rs -p no:cacheprovider tests/gpu/test_sweep_gpu.py tests/unit/profile/sweep/test_sweep.py \
  tests/integration/test_sweep_child.py > "$OUT/logs/pytest.log" 2>&1
pytest_status=$?
tail -n 3 "$OUT/logs/pytest.log"
grep -E "(PASSED|FAILED|SKIPPED|ERROR).*test_sweep_gpu" "$OUT/logs/pytest.log"
# The GPU tests and the two that run nsight-python's own code must have run, not been skipped.
[ "$pytest_status" -eq 0 ] && [ "$(grep -c 'test_sweep_gpu.py.*PASSED' "$OUT/logs/pytest.log")" -eq 2 ] \
  && [ "$(grep -cE 'test_sweep_child.py::test_the_(frame_reader|real_nsight).*PASSED' "$OUT/logs/pytest.log")" -eq 2 ] \
  || status=1

PYTHONUNBUFFERED=1 "${PYTHON:-python3}" tools/run_example.py --output-dir "$OUT/example" > "$OUT/logs/run_example.log" 2>&1
example_status=$?
sed -n '/^summary/,$p' "$OUT/logs/run_example.log"
[ "$example_status" -eq 0 ] || status=1

"${PYTHON:-python3}" - "$OUT" <<'PY' || status=1
import json, shutil, sys
from pathlib import Path
from tabulate import tabulate

out = Path(sys.argv[1])
run = (out / "example" / "latest").resolve()
rows, ok = [], True
for example in ("softmax_triton", "softmax_cuda"):
    folder = run / example / "sweep"
    path = folder / "sweep.json"
    if not path.is_file():
        rows.append([example, "no sweep.json", "", "", "MISMATCH"])
        ok = False
        continue
    record = json.loads(path.read_text())
    times = "; ".join(
        f"{p['value']}: {p['solution']['time_us']:.1f} vs {p['reference']['time_us']:.1f} us"
        f" ({(p['solution'].get('percent_of_ceiling') or 0):.0f}%)" if p["status"] == "profiled"
        else f"{p['value']}: {p['status']}" for p in record["points"])
    report = (run / example / "final_report.md").read_text()
    embedded = "](sweep/sweep.png)" in report and "## Across sizes" in report
    good = (record["verdict"] == "profiled" and record["exit_code"] == 0 and embedded
            and (folder / "sweep.png").is_file() and (folder / "sweep.csv").is_file())
    ok &= good
    rows.append([example, f"{record['verdict']} (exit {record['exit_code']})", times, embedded, "ok" if good else "MISMATCH"])
    kept = out / "sweeps" / example
    kept.mkdir(parents=True, exist_ok=True)
    for name in ("sweep.json", "sweep.md", "sweep.png", "sweep.csv", "sweep_events.jsonl"):
        if (folder / name).is_file():
            shutil.copy(folder / name, kept / name)
    shutil.copy(run / example / "final_report.md", kept / "final_report.md")
print(tabulate(rows, headers=["example", "sweep", "N: solution vs PyTorch (% of ceiling)", "in final report", "result"],
               tablefmt="github"))
sys.exit(0 if ok else 1)
PY
echo "sweep_gpu.sh exit status: $status"
exit "$status"
