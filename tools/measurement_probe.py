#!/usr/bin/env python3
"""Compare kernel_opt's timer with triton's do_bench and with Nsight Compute on two memory-bound ops.

Run on a GPU machine. `--run OP` only launches OP repeatedly (for ncu to profile);
without it the script times each op several ways and, when ncu is present, profiles each op
with `--clock-control none` and prints one comparison table.

Usage:
  python3 tools/measurement_probe.py --out out/probe.json
  python3 tools/measurement_probe.py --run add       # what ncu profiles
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))

import torch  # noqa: E402


def make_ops():
    g = torch.Generator(device="cuda").manual_seed(0)
    n = 1 << 28
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    out = torch.empty_like(x)
    s = torch.randn(4096, 4096, device="cuda", generator=g)
    return {
        "add": (lambda: torch.add(x, y, out=out), 3 * n * 4),
        "softmax": (lambda: torch.softmax(s, dim=-1), 2 * 4096 * 4096 * 4),
    }


def ncu_durations_us(op: str) -> list[float]:
    command = [
        "ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
        "--launch-skip", "3", "--launch-count", "10",
        sys.executable, str(Path(__file__).resolve()), "--run", op,
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    text = completed.stdout
    start = text.find('"ID"')
    values = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            value = float(row["Metric Value"].replace(",", ""))
            unit = row.get("Metric Unit", "")
            values.append(value / 1000.0 if unit == "nsecond" else value * (1000.0 if unit == "msecond" else 1.0))
    if not values:
        print(completed.stdout[-2000:], completed.stderr[-2000:], file=sys.stderr)
    return values


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    ops = make_ops()
    if args.run:
        fn, _ = ops[args.run]
        for _ in range(15):
            fn()
        torch.cuda.synchronize()
        return 0
    import triton.testing

    from kernel_opt.timing import time_callable

    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    for name, (fn, traffic) in ops.items():
        row = {}
        for mode in ("clean", "write"):
            medians = [time_callable(fn, flush_mode=mode).median_us for _ in range(5)]
            row[f"kernel_opt_{mode}_medians_us"] = medians
        row["do_bench_medians_us"] = [triton.testing.do_bench(fn, return_mode="median") * 1000 for _ in range(5)]
        if shutil.which("ncu"):
            row["ncu_us"] = ncu_durations_us(name)
        row["bytes"] = traffic
        results[name] = row
    lines = [f"{'op':<8} {'method':<18} {'median us':>10} {'spread %':>9} {'GB/s':>8}"]
    for name in ops:
        row = results[name]
        for key in ("kernel_opt_clean_medians_us", "kernel_opt_write_medians_us", "do_bench_medians_us", "ncu_us"):
            if key not in row or not row[key]:
                continue
            values = row[key]
            median = statistics.median(values)
            spread = 100 * (max(values) - min(values)) / median
            label = key.replace("_medians_us", "").replace("_us", "")
            lines.append(f"{name:<8} {label:<18} {median:>10.2f} {spread:>9.2f} {row['bytes'] / median / 1e3:>8.0f}")
    print("\n".join(lines))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
