#!/usr/bin/env python3
"""The case-study table, computed from the recorded runs under demo/<backend>/<case>/.

Every number comes from the records: v0's and the best version's medians from their
benchmark.json, and, once the run is finished, the PyTorch baselines from its final
OUT/benchmark.json, timed in the same process as the best version (eager and torch.compile;
for GEMM and attention, eager is cuBLAS and SDPA). Before the final benchmark, torch.compile's
figure comes from v0's run. Each case's goal lives in demo/targets.yaml under its folder's
backend/case (a second run such as cuda/attention_r2 has its own key) and is checked here against
the same figures, so "met" is computed, never typed. A run whose v0 was copied from a version of
another run beside it (run.json's source_kernel, e.g. demo/cuda/attention/v8/v8.cu) says so after
its name: "attention (cuda) from attention/v8", so two runs of one kernel read apart.

The table sits between the markers below in demo/DEMO.md, README.md and README_zh.md, its links
relative to each file's folder; --update rewrites it there, --check fails when a file holds a different table.

Usage:
  python3 tools/demo_upkeep/demo_table.py                       # print the table
  python3 tools/demo_upkeep/demo_table.py --update demo/DEMO.md README.md README_zh.md
  python3 tools/demo_upkeep/demo_table.py --check demo/DEMO.md README.md README_zh.md

Exit codes: 0 printed / up to date; 1 --check found a stale table; 2 no runs, a bad targets
file, or a file without the markers.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))
from kernel_opt.core.render import markdown_table  # noqa: E402
from kernel_opt.loop.final_report import build_report  # noqa: E402
from kernel_opt.loop.records import read_run_record  # noqa: E402
from kernel_opt.measure.records import BenchmarkReport, TimedSolution, read_benchmark  # noqa: E402

START, END = "<!-- demo-table:start -->", "<!-- demo-table:end -->"
HEADERS = ["case", "shape", "dtype", "GPU", "v0 µs", "best µs", "vs v0", "vs eager (cuBLAS/SDPA)",
           "vs best torch.compile", "% of ceiling", "iterations", "case goal"]
TARGET_KEYS = {"percent_of_ceiling", "vs_eager", "faster_than_best_compile"}
VERSION_FOLDER = re.compile(r"v\d+")


class TableError(Exception):
    """Bad input: nothing was written."""


@dataclass
class CaseFigures:
    """One case's figures, read through final_report.build_report (the records its report uses)."""

    folder: Path
    name: str
    shape: str
    dtype: str
    gpu: str
    v0_us: float
    best: str
    best_us: float
    eager_us: float | None
    best_compile_us: float | None
    percent_of_ceiling: float | None
    iterations: str
    started_from: str | None = None  # "attention/v8": the version of another run its v0 was copied from
    memory_roof: bool = False  # the best version's % of ceiling is against a measured memory roof (a copy's rate)

    @property
    def vs_eager(self) -> float | None:
        return self.eager_us / self.best_us if self.eager_us else None

    @property
    def vs_best_compile(self) -> float | None:
        return self.best_compile_us / self.best_us if self.best_compile_us else None


def started_from(out: Path, source_kernel: str) -> str | None:
    """Where a run's v0 came from when that is a version of another recorded run beside it, else None.

    "attention/v8" for demo/cuda/attention_r2 (source_kernel demo/cuda/attention/v8/v8.cu), with the
    backend in front when it differs; None for a run started from a plan or a reference kernel.
    """
    source = Path(source_kernel)
    version, case = source.parent.name, source.parent.parent
    if not VERSION_FOLDER.fullmatch(version):
        return None
    sibling = out.parent.parent / case.parent.name / case.name
    if sibling.resolve() == out.resolve() or not (sibling / "run.json").is_file():
        return None
    where = case.name if case.parent.name == out.parent.name else f"{case.parent.name}/{case.name}"
    return f"{where}/{version}"


def read_case(out: Path) -> CaseFigures:
    report = build_report(out)
    run = read_run_record(out)
    v0 = report.versions[0]
    best = next(row for row in report.versions if row.is_best)
    best_us = report.final_median_us or best.median_us
    v0_record = read_benchmark(out / "v0") or BenchmarkReport(solution=TimedSolution(), reference="", backend="",
                                                               command="")
    timed = {entry.name: entry.median_us for entry in v0_record.baselines if entry.median_us}
    timed.update({row.name: row.median_us for row in report.final_baselines if row.median_us})
    compiled = [us for name, us in timed.items() if name.startswith("torch.compile")]
    return CaseFigures(
        folder=out, name=f"{report.kernel_name} ({report.backend})",
        shape=" ".join(f"{k}={v}" for k, v in report.dims.items()),
        dtype=next(iter(v0_record.dtypes.values()), "?"),
        gpu=(v0_record.gpu_name or "?").replace("NVIDIA ", ""),
        v0_us=v0.median_us, best=best.name, best_us=best_us, eager_us=timed.get("eager"),
        best_compile_us=min(compiled) if compiled else None, percent_of_ceiling=best.percent_of_ceiling,
        iterations=f"{report.iterations_used}/{report.iterations_budget}",
        started_from=started_from(out, run.source_kernel) if run is not None else None,
        memory_roof=against_a_memory_roof(read_benchmark(out / best.name)))


def against_a_memory_roof(record: BenchmarkReport | None) -> bool:
    """Whether a version's % of ceiling divides a floor set by a measured memory roof (the 2 GiB copy or a copy of
    the problem's own bytes): nearly the physical limit, unlike a measured matmul rate, which is one library's."""
    roofline = record.roofline if record is not None else None
    if not roofline or not roofline.points or roofline.primary not in ("measured", "same-size copy"):
        return False
    point = roofline.points.get(roofline.primary)
    return point is not None and point.bound == "memory"


def read_targets(path: Path) -> dict[str, dict]:
    """backend/case -> its goal; see demo/targets.yaml."""
    if not path.is_file():
        return {}
    try:
        targets = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise TableError(f"{path}: {error}") from error
    for case, goal in targets.items():
        if not isinstance(goal, dict) or not goal or set(goal) - TARGET_KEYS:
            raise TableError(f"{path}: {case}: a goal is a mapping of {', '.join(sorted(TARGET_KEYS))}")
    return targets


def goal_status(figures: CaseFigures, goal: dict | None) -> str:
    """'met' or 'not met', with every criterion's measured value against its threshold.

    The values are shown either way: a goal met by 0.001 is within run-to-run noise, and the
    reader should see that.
    """
    if not goal:
        return "—"
    checks: list[tuple[bool, str, str]] = []  # (holds, as met, as missed)
    if "percent_of_ceiling" in goal:
        value, floor = figures.percent_of_ceiling, goal["percent_of_ceiling"]
        holds = value is not None and value >= floor
        checks.append((holds, f"{value or 0:.1f}% of ceiling >= {floor}%", f"{value or 0:.1f}% of ceiling < {floor}%"))
    if "vs_eager" in goal:
        value, floor = figures.vs_eager, goal["vs_eager"]
        holds = value is not None and value >= floor
        checks.append((holds, f"{value or 0:.3f}x eager >= {floor:.2f}x",
                       f"{value or 0:.3f}x eager < {floor:.2f}x{_beyond_the_roof(figures, floor)}"))
    if goal.get("faster_than_best_compile"):
        value = figures.vs_best_compile
        holds = value is not None and value > 1.0
        shown = f"{value or 0:.3f}x the best torch.compile"
        checks.append((holds, shown, f"{shown}, not faster"))
    if all(holds for holds, _, _ in checks):
        return "met: " + "; ".join(met for _, met, _ in checks)
    return "not met: " + "; ".join(missed for holds, _, missed in checks if not holds)


def _beyond_the_roof(figures: CaseFigures, floor: float) -> str:
    """Where a speedup goal over eager asks more than a memory roof allows: eager's own share of the roof bounds any
    kernel's speedup over it (the same floor divided by both times). Not said against a compute roof measured from
    a library's matmul, which a kernel can pass (the GEMM cases reach 104%)."""
    if not figures.memory_roof or not figures.percent_of_ceiling or not figures.vs_eager:
        return ""
    eager_percent = figures.percent_of_ceiling / figures.vs_eager
    most = 100.0 / eager_percent
    if most >= floor:
        return ""
    return (f" (eager already moves the problem's bytes at {eager_percent:.1f}% of the measured memory roof: "
            f"no kernel can be much more than {most:.2f}x faster than it)")


def render(demo: Path, link_from: Path | None = None) -> str:
    """The table; each case links to its run folder relative to `link_from` (the folder of the file the table goes
    in: demo/DEMO.md links to cuda/softmax/, README.md to demo/cuda/softmax/), else relative to the repository."""
    runs = sorted(path.parent for path in demo.glob("*/*/run.json"))
    if not runs:
        raise TableError(f"no runs under {demo} (expected demo/<backend>/<case>/run.json)")
    targets = read_targets(demo / "targets.yaml")
    rows = []
    for out in runs:
        figures = read_case(out)
        link = (Path(os.path.relpath(out, link_from)) if link_from is not None
                else out.relative_to(REPO) if out.is_relative_to(REPO) else out)
        ratio = lambda value: f"{value:.2f}x" if value else "—"  # noqa: E731
        origin = f" from {figures.started_from}" if figures.started_from else ""
        rows.append([f"[{figures.name}]({link}/){origin}", figures.shape, figures.dtype, figures.gpu,
                     f"{figures.v0_us:.2f}", f"{figures.best}: {figures.best_us:.2f}",
                     ratio(figures.v0_us / figures.best_us), ratio(figures.vs_eager), ratio(figures.vs_best_compile),
                     f"{figures.percent_of_ceiling:.1f}%" if figures.percent_of_ceiling is not None else "—",
                     figures.iterations, goal_status(figures, targets.get(f"{out.parent.name}/{out.name}"))])
    return markdown_table(rows, HEADERS)


def replace_table(text: str, table: str, path: Path, start: str = START, end: str = END) -> str:
    """`text` with the table between its one pair of markers replaced (apply_reprofile.py has its own pair)."""
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise TableError(f"{path}: needs one {start} ... {end} pair around the table")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{table}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=REPO / "demo")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", nargs="+", type=Path, metavar="FILE", help="rewrite the table in these files")
    mode.add_argument("--check", nargs="+", type=Path, metavar="FILE", help="fail if these files hold another table")
    args = parser.parse_args(argv)
    try:
        demo = args.demo.resolve()
        files = args.update or args.check or []
        table = render(demo) if not files else ""
        texts = {path: path.read_text() for path in files}
        updated = {path: replace_table(text, render(demo, path.resolve().parent), path) for path, text in texts.items()}
    except (TableError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        stale = [str(path) for path in files if updated[path] != texts[path]]
        for path in stale:
            print(f"{path}: the case table is out of date; run python3 tools/demo_upkeep/demo_table.py --update {path}")
        return 1 if stale else 0
    if args.update:
        for path in files:
            path.write_text(updated[path])
            print(f"updated {path}")
        return 0
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
