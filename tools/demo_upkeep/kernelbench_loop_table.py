"""The loop's table for the KernelBench demo set, read from each run folder's records (no GPU, no timing).

For every run folder RUNS/<problem>/ and every version asked for: the evaluation's state and exit
code, the solution's median, eager's and the best torch.compile mode's medians, the speedup
against the best of them, % of the roofline ceiling, the profile's bottleneck and the first
advice evaluate gave (the experience log's first strategy, else the first guide section to
read). Every value is copied from vN/evaluation.json, vN/benchmark.json and vN/ncu_summary.json;
a record that is missing shows "—". It computes no verdict. The version "final" is the Finish
step's benchmark of the run's best version (RUN/benchmark.json, every baseline timed again beside
it), with that version's profile.

Usage (from the repository root):
  python3 tools/demo_upkeep/kernelbench_loop_table.py demo/kernelbench/runs --versions v0
  python3 tools/demo_upkeep/kernelbench_loop_table.py demo/kernelbench/runs --versions v0,v1 --only L1_01_rms_norm \
      --json
  python3 tools/demo_upkeep/kernelbench_loop_table.py demo/kernelbench/runs --versions final
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parents[2] / "skills" / "kernel-opt-skill" / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))
from kernel_opt.core.errors import KernelOptError  # noqa: E402
from kernel_opt.measure.records import EAGER_BASELINE, BenchmarkReport  # noqa: E402

MISSING = "—"
FINAL = "final"  # the Finish step's benchmark of the best version, RUN/benchmark.json


@dataclass
class LoopRow:
    """One version of one problem, as its records say."""

    problem: str
    version: str
    state: str  # evaluation.json's state, or "not evaluated" where it has none
    exit_code: int | None
    solution_us: float | None
    eager_us: float | None
    compile_us: float | None  # the fastest torch.compile mode the benchmark timed
    best_baseline: str | None
    speedup_vs_best: float | None
    percent_of_ceiling: float | None
    bottleneck: str | None
    advice: str | None


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _benchmark(payload: dict[str, Any]) -> BenchmarkReport | None:
    """The benchmark record, or None where there is none or it is not one (its row then shows "—")."""
    try:
        return BenchmarkReport.from_dict(payload) if payload else None
    except KernelOptError:
        return None


def first_advice(evaluation: dict[str, Any], profile: dict[str, Any]) -> str | None:
    """The experience log's first strategy, else the first guide section evaluate or the profile named."""
    recommendations = evaluation.get("recommendations") or {}
    strategies = recommendations.get("strategies") or []
    if strategies:
        return str(strategies[0].get("strategy"))
    for read_next in (recommendations.get("read_next"), profile.get("read_next")):
        if read_next:
            return str(read_next[0])
    return None


def final_benchmark(run: Path) -> BenchmarkReport | None:
    """SKILL.md's Finish benchmark of the run (RUN/benchmark.json); None before it ran."""
    return _benchmark(_read(run / "benchmark.json"))


def timed_version(benchmark: BenchmarkReport) -> str:
    """The version folder whose solution a benchmark timed ("v2"); "" where the record names none."""
    return Path(str(benchmark.solution.path or "")).parent.name


def final_row(run: Path) -> LoopRow:
    """The Finish benchmark's row: RUN/benchmark.json, named after the version it timed ("final (v2)")."""
    benchmark = final_benchmark(run)
    best = timed_version(benchmark) if benchmark else ""
    profile = _read(run / best / "ncu_summary.json") if best else {}
    return LoopRow(
        problem=run.name, version=f"{FINAL} ({best})" if best else FINAL,
        state=benchmark.verdict if benchmark else "not finished",
        exit_code=benchmark.exit_code if benchmark else None,
        **_timing_columns(benchmark),
        bottleneck=profile.get("bottleneck"), advice=None)


def _timing_columns(benchmark: BenchmarkReport | None) -> dict[str, Any]:
    """The row's columns a benchmark record holds, each None where there is no record."""
    if benchmark is None:
        return dict.fromkeys(("solution_us", "eager_us", "compile_us", "best_baseline", "speedup_vs_best",
                              "percent_of_ceiling"))
    fastest = benchmark.fastest_compile()
    return {"solution_us": benchmark.median_us, "eager_us": benchmark.baseline_medians().get(EAGER_BASELINE),
            "compile_us": fastest[1] if fastest else None, "best_baseline": benchmark.best_baseline,
            "speedup_vs_best": benchmark.speedup_vs_best_baseline, "percent_of_ceiling": benchmark.percent_of_ceiling}


def loop_row(run: Path, version: str) -> LoopRow:
    """The row of `version` in the run folder `run` (a problem's name is its folder's name)."""
    if version == FINAL:
        return final_row(run)
    folder = run / version
    evaluation = _read(folder / "evaluation.json")
    benchmark = _benchmark(_read(folder / "benchmark.json"))
    profile = _read(folder / "ncu_summary.json")
    return LoopRow(
        problem=run.name, version=version,
        state=evaluation.get("state") or ("not evaluated" if folder.is_dir() else "no such version"),
        exit_code=evaluation.get("exit_code"),
        **_timing_columns(benchmark),
        bottleneck=profile.get("bottleneck"),
        advice=first_advice(evaluation, profile))


def loop_rows(runs: Path, versions: list[str], only: list[str] | None = None) -> list[LoopRow]:
    """Rows for every run folder under `runs` (those named in `only`, when given), in name order."""
    folders = sorted(path for path in runs.iterdir() if (path / "run.json").is_file()) if runs.is_dir() else []
    if only:
        folders = [folder for folder in folders if folder.name in only]
    return [loop_row(folder, version) for folder in folders for version in versions]


def _number(value: float | None, digits: int, suffix: str = "") -> str:
    return MISSING if value is None else f"{value:,.{digits}f}{suffix}"


def render(rows: list[LoopRow]) -> str:
    """A Markdown table of the rows, numbers as recorded (times in us)."""
    from tabulate import tabulate

    headers = ["problem", "version", "state (exit)", "solution us", "eager us", "best compile us",
               "speedup vs best", "% of ceiling", "bottleneck", "first advice"]
    body = [[row.problem, row.version, f"{row.state} ({MISSING if row.exit_code is None else row.exit_code})",
             _number(row.solution_us, 1), _number(row.eager_us, 1), _number(row.compile_us, 1),
             _number(row.speedup_vs_best, 2, "x"), _number(row.percent_of_ceiling, 1, "%"),
             row.bottleneck or MISSING, row.advice or MISSING] for row in rows]
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, help="the folder of run folders (demo/kernelbench/runs)")
    parser.add_argument("--versions", default="v0", help="comma-separated versions, e.g. v0,v1 (default v0)")
    parser.add_argument("--only", default="", help="comma-separated problem names (default: every run folder)")
    parser.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    args = parser.parse_args(argv)
    if not args.runs.is_dir():
        print(f"error: {args.runs} is not a folder of run folders", file=sys.stderr)
        return 2
    versions = [version.strip() for version in args.versions.split(",") if version.strip()]
    rows = loop_rows(args.runs, versions, [name.strip() for name in args.only.split(",") if name.strip()] or None)
    if args.json:
        for row in rows:
            print(json.dumps(asdict(row)))
    else:
        print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
