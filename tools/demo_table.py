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
from kernel_opt.final_report import build_report  # noqa: E402
from kernel_opt.workspace import read_json  # noqa: E402


def case_row(out: Path) -> list[str]:
    """One case, read through final_report.build_report (the same choice of records as its report)."""
    report = build_report(out)
    v0 = report.versions[0]
    best = next(row for row in report.versions if row.is_best)
    best_us = report.final_median_us or best.median_us
    # Versions after v0 time eager only (workspace.py evaluate); until the final benchmark has
    # run, torch.compile's figure comes from v0's run.
    v0_record = read_json(out / "v0" / "benchmark.json") or {}
    timed = {entry["name"]: entry["median_us"] for entry in v0_record.get("baselines") or [] if entry.get("median_us")}
    timed.update({row.name: row.median_us for row in report.final_baselines if row.median_us})
    compiled = [us for name, us in timed.items() if name.startswith("torch.compile")]
    gpu = (v0_record.get("gpu") or {}).get("name", "?").replace("NVIDIA ", "")
    dtype = next(iter((v0_record.get("dtypes") or {}).values()), "?")

    def versus(us: float | None) -> str:
        return f"{us / best_us:.2f}x" if us and best_us else "—"

    return [
        f"[{report.kernel_name} ({report.backend})]({out.relative_to(REPO) if out.is_relative_to(REPO) else out}/)",
        " ".join(f"{k}={v}" for k, v in report.dims.items()), dtype, gpu, f"{v0.median_us:.2f}",
        f"{best.name}: {best_us:.2f}", f"{v0.median_us / best_us:.2f}x",
        versus(timed.get("eager")), versus(min(compiled) if compiled else None),
        f"{best.percent_of_ceiling:.1f}%" if best.percent_of_ceiling is not None else "—",
        f"{report.iterations_used}/{report.iterations_budget}",
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
