#!/usr/bin/env python3
"""The case-study table, computed from the recorded runs under demo/<backend>/<case>/.

Every number comes from a version's benchmark.json (or the run's final OUT/benchmark.json when
it exists): v0's and the best version's medians, and the PyTorch baselines timed beside them
(eager and torch.compile; for GEMM and attention, eager is cuBLAS and SDPA). Nothing is typed in.

Usage:
  python3 tools/demo_table.py [--demo demo]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))
from kernel_opt.report import markdown_table  # noqa: E402
from kernel_opt.workspace import read_json, run_status  # noqa: E402


def baselines(record: dict) -> dict[str, float]:
    return {entry["name"]: entry["median_us"] for entry in record.get("baselines") or [] if entry.get("median_us")}


def case_row(out: Path) -> list[str]:
    status = run_status(out)
    run, best = status.run, status.best
    v0 = status.versions[0]
    final = read_json(out / "benchmark.json")
    best_record = final if final and final.get("verdict") == "measured" else read_json(Path(best.directory) / "benchmark.json")
    timed = {**baselines(read_json(Path(v0.directory) / "benchmark.json") or {}), **baselines(best_record or {})}
    best_us = (best_record or {}).get("solution", {}).get("median_us") or best.median_us
    gpu = ((best_record or {}).get("gpu") or {}).get("name", "?").replace("NVIDIA ", "")
    compiled = {name: us for name, us in timed.items() if name.startswith("torch.compile")}
    fastest_compile = min(compiled.values()) if compiled else None
    dims = " ".join(f"{k}={v}" for k, v in run.dims.items())
    dtype = next(iter(((best_record or {}).get("dtypes") or {}).values()), "?")

    def versus(us: float | None) -> str:
        return f"{us / best_us:.2f}x" if us and best_us else "—"

    return [
        f"[{run.kernel_name} ({run.backend})]({out.relative_to(REPO) if out.is_relative_to(REPO) else out}/)",
        dims, dtype, gpu, f"{v0.median_us:.2f}",
        f"{best.name}: {best_us:.2f}", f"{v0.median_us / best_us:.2f}x",
        versus(timed.get("eager")), versus(fastest_compile),
        f"{best.percent_of_ceiling:.1f}%" if best.percent_of_ceiling is not None else "—",
        f"{status.budget.iterations_used}/{status.budget.iterations_total}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=REPO / "demo")
    args = parser.parse_args(argv)
    runs = sorted(path.parent for path in args.demo.resolve().glob("*/*/run.json"))
    if not runs:
        print(f"error: no runs under {args.demo} (expected demo/<backend>/<case>/run.json)", file=sys.stderr)
        return 2
    rows = [case_row(out) for out in runs]
    print(markdown_table(rows, ["case", "shape", "dtype", "GPU", "v0 µs", "best µs", "vs v0", "vs eager (cuBLAS/SDPA)",
                                "vs best torch.compile", "% of ceiling", "iterations"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
